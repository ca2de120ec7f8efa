package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"

	"github.com/idplane/idplane/bench/internal/loadclient"
)

const (
	readyPoll = 10 * time.Millisecond
	// stopGrace bounds how long a launched server may take to shut down after SIGTERM before it
	// is killed.
	stopGrace = time.Minute
	// clockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat; Linux fixes it at 100
	// for user space on every architecture Go supports.
	clockTicks = 100
)

// server is an idplane process launched by the tool in its own temporary data directory.
type server struct {
	cmd          *exec.Cmd
	root         string
	logPath      string
	kubeconfig   string
	startToReady time.Duration
	exited       chan struct{}
	waitErr      error
}

// launch starts the binary and returns once /readyz answers 200 to the admin client certificate.
// The server is stopped again when anything fails on the way.
func launch(ctx context.Context, binary string, timeout time.Duration) (*server, error) {
	root, err := os.MkdirTemp("", "apiload-")
	if err != nil {
		return nil, fmt.Errorf("creating temporary directory: %w", err)
	}
	s := &server{root: root, logPath: filepath.Join(root, "server.log"), exited: make(chan struct{})}
	if err := s.start(ctx, binary, timeout); err != nil {
		if s.cmd != nil && s.cmd.Process != nil {
			s.stop()
		}
		os.RemoveAll(root)
		return nil, err
	}
	return s, nil
}

func (s *server) start(ctx context.Context, binary string, timeout time.Duration) error {
	logFile, err := os.Create(s.logPath)
	if err != nil {
		return fmt.Errorf("creating server log: %w", err)
	}
	defer logFile.Close()
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("creating stdout pipe: %w", err)
	}
	defer stdoutR.Close()

	s.cmd = exec.Command(binary, "server", "--data-dir", filepath.Join(s.root, "data"), "--secure-port=0")
	s.cmd.Stdout, s.cmd.Stderr = stdoutW, logFile
	// Should this tool die without stopping the server, the kernel kills the server too.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	begin := time.Now()
	err = s.cmd.Start()
	stdoutW.Close()
	if err != nil {
		return fmt.Errorf("starting %s: %w", binary, err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()

	deadline := time.NewTimer(timeout - time.Since(begin))
	defer deadline.Stop()
	announced := make(chan string, 1)
	go readAnnouncement(stdoutR, announced)
	select {
	case s.kubeconfig = <-announced:
	case <-s.exited:
		return s.failure("server exited before announcing its address")
	case <-deadline.C:
		return s.failure(fmt.Sprintf("server did not announce its address within %s", timeout))
	case <-ctx.Done():
		return ctx.Err()
	}
	if s.kubeconfig == "" {
		return s.failure("server closed stdout without naming its admin kubeconfig")
	}

	restCfg, err := loadclient.RESTConfig(s.kubeconfig, "idplane-apiload")
	if err != nil {
		return err
	}
	rt, err := rest.TransportFor(restCfg)
	if err != nil {
		return fmt.Errorf("building readiness client: %w", err)
	}
	hc := &http.Client{Transport: rt, Timeout: time.Second}
	readyz := strings.TrimSuffix(restCfg.Host, "/") + "/readyz"
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	for {
		if ready(hc, readyz) {
			s.startToReady = time.Since(begin)
			return nil
		}
		select {
		case <-tick.C:
		case <-s.exited:
			return s.failure("server exited before turning ready")
		case <-deadline.C:
			return s.failure(fmt.Sprintf("server not ready within %s", timeout))
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// readAnnouncement sends the admin kubeconfig path from the server's start-up lines (or "" when
// stdout closes first) and then drains stdout so the server never blocks writing to it.
func readAnnouncement(stdout *os.File, announced chan<- string) {
	sc := bufio.NewScanner(stdout)
	var url, kubeconfig string
	for sc.Scan() {
		line := sc.Text()
		if _, u, ok := strings.Cut(line, " serving on "); ok {
			url = u
		}
		if p, ok := strings.CutPrefix(line, "admin kubeconfig: "); ok {
			kubeconfig = p
		}
		if url != "" && kubeconfig != "" {
			announced <- kubeconfig
			for sc.Scan() {
			}
			return
		}
	}
	announced <- ""
}

func ready(hc *http.Client, url string) bool {
	resp, err := hc.Get(url)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// idleRSS waits for the server to settle and then reads its resident set size.
func (s *server) idleRSS(ctx context.Context, idle time.Duration) (float64, error) {
	select {
	case <-time.After(idle):
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-s.exited:
		return 0, s.failure("server exited while idle")
	}
	mem, err := readMemory(s.pid())
	if err != nil {
		return 0, err
	}
	return mib(mem.rss), nil
}

// stop sends SIGTERM, waits for the exit (killing the process after stopGrace), removes the
// temporary directory and reports how long the graceful shutdown took.
func (s *server) stop() (time.Duration, error) {
	defer os.RemoveAll(s.root)
	select {
	case <-s.exited:
		return 0, s.failure("server exited before it was stopped")
	default:
	}
	begin := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return 0, fmt.Errorf("sending SIGTERM to server: %w", err)
	}
	select {
	case <-s.exited:
		took := time.Since(begin)
		if s.waitErr != nil {
			return took, s.failure(fmt.Sprintf("server did not exit cleanly after SIGTERM: %v", s.waitErr))
		}
		return took, nil
	case <-time.After(stopGrace):
		s.cmd.Process.Kill()
		<-s.exited
		return 0, s.failure(fmt.Sprintf("server did not stop within %s of SIGTERM; killed", stopGrace))
	}
}

// failure builds an error carrying the end of the server log, the only clue to why a launched
// server misbehaved once its temporary directory is gone.
func (s *server) failure(msg string) error {
	const tailBytes = 2048
	b, err := os.ReadFile(s.logPath)
	if err != nil || len(b) == 0 {
		return errors.New(msg)
	}
	if len(b) > tailBytes {
		b = b[len(b)-tailBytes:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return fmt.Errorf("%s; end of server log:\n%s", msg, b)
}

type memory struct{ rss, hwm int64 }

// readMemory reads the current (VmRSS) and peak (VmHWM) resident set size of a process.
func readMemory(pid int) (memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, fmt.Errorf("reading server memory: %w", err)
	}
	var m memory
	for line := range strings.Lines(string(b)) {
		key, value, ok := strings.Cut(line, ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return memory{}, fmt.Errorf("parsing %s of process %d: %w", key, pid, err)
		}
		if key == "VmRSS" {
			m.rss = kb << 10
		} else {
			m.hwm = kb << 10
		}
	}
	if m.rss == 0 {
		return memory{}, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
	}
	return m, nil
}

// processCPU returns the user plus system CPU time a process has used so far.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading server CPU time: %w", err)
	}
	// The command name in parentheses may hold spaces; the numbered fields follow its last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	fields := strings.Fields(string(b[i+1:]))
	// utime and stime are fields 14 and 15 of stat; fields[0] here is field 3.
	if len(fields) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing /proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// selfCPU returns the user plus system CPU time this process has used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
