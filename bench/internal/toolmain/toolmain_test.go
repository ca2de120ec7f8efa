package toolmain

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestExitCode(t *testing.T) {
	parse := func(args []string) (string, error) {
		switch {
		case len(args) == 0:
			return "", nil
		case args[0] == "-h":
			return "", flag.ErrHelp
		case args[0] == "bad":
			return "", errors.New("unknown flag")
		}
		return args[0], nil
	}
	run := func(_ context.Context, c string) error {
		if c == "fail" {
			return errors.Join(errors.New("phase a failed"), errors.New("phase b failed"))
		}
		return nil
	}
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		{nil, 0, ""},
		{[]string{"-h"}, 0, ""},
		{[]string{"bad"}, 2, "tool: unknown flag\n"},
		{[]string{"fail"}, 1, "tool: phase a failed\ntool: phase b failed\n"},
	}
	for _, tc := range tests {
		var stderr bytes.Buffer
		if code := exitCode("tool", tc.args, &stderr, parse, run); code != tc.code || stderr.String() != tc.stderr {
			t.Errorf("%v: exit %d, stderr %q; want %d, %q", tc.args, code, stderr.String(), tc.code, tc.stderr)
		}
	}
}

func TestRepeat(t *testing.T) {
	n := 0
	measure := func(context.Context) (int, error) { n++; return n * 10, nil }
	median := func(rs []int) int { return rs[len(rs)/2] }
	print := func(w io.Writer, r int) { fmt.Fprintln(w, r) }

	var out bytes.Buffer
	runs, med, err := Repeat(t.Context(), "tool", 3, &out, measure, median, print)
	if err != nil || len(runs) != 3 || med != 20 {
		t.Fatalf("Repeat = %v, %d, %v", runs, med, err)
	}
	want := "== run 1/3\n10\n\n== run 2/3\n20\n\n== run 3/3\n30\n\n== median of 3 runs\n20\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}

	out.Reset()
	if _, _, err := Repeat(t.Context(), "tool", 1, &out, measure, median, print); err != nil || out.String() != "40\n" {
		t.Errorf("one run: output %q, err %v", out.String(), err)
	}

	failing := func(context.Context) (int, error) { return 0, errors.New("server died") }
	if _, _, err := Repeat(t.Context(), "tool", 2, &out, failing, median, print); err == nil || !strings.Contains(err.Error(), "run 1: server died") {
		t.Errorf("a failed run: err %v", err)
	}
}
