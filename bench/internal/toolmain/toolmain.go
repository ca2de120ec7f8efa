// Package toolmain is the frame every load tool's main shares: flags, signals and exit codes,
// runs repeated and reported with their median, and the JSON report.
package toolmain

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Main parses the arguments and runs the tool with a context that SIGINT and SIGTERM end, then
// exits: 0 on success or -h, 2 when the arguments are refused, 1 when run fails. Every line of an
// error is printed on standard error, prefixed with the tool's name.
func Main[C any](tool string, parse func([]string) (C, error), run func(context.Context, C) error) {
	os.Exit(exitCode(tool, os.Args[1:], os.Stderr, parse, run))
}

func exitCode[C any](tool string, args []string, stderr io.Writer, parse func([]string) (C, error), run func(context.Context, C) error) int {
	cfg, err := parse(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		report(stderr, tool, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		report(stderr, tool, err)
		return 1
	}
	return 0
}

func report(w io.Writer, tool string, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintln(w, tool+":", line)
	}
}

// Repeat measures n times. With more than one run it prints each run, then the median under
// "== median of n runs"; it always prints the median. It returns the runs and their median.
func Repeat[R any](ctx context.Context, tool string, n int, out io.Writer, measure func(context.Context) (R, error), median func([]R) R, print func(io.Writer, R)) ([]R, R, error) {
	var runs []R
	for i := range n {
		fmt.Fprintf(os.Stderr, "%s: run %d/%d\n", tool, i+1, n)
		r, err := measure(ctx)
		if err != nil {
			var zero R
			return nil, zero, fmt.Errorf("run %d: %w", i+1, err)
		}
		runs = append(runs, r)
		if n > 1 {
			fmt.Fprintf(out, "== run %d/%d\n", i+1, n)
			print(out, r)
			fmt.Fprintln(out)
		}
	}
	med := median(runs)
	if n > 1 {
		fmt.Fprintf(out, "== median of %d runs\n", n)
	}
	print(out, med)
	return runs, med, nil
}

// WriteJSON writes report, indented, to path.
func WriteJSON(path string, report any) error {
	b, err := json.MarshalIndent(report, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding JSON report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing JSON report: %w", err)
	}
	return nil
}
