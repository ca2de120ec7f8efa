// Package serverproc launches `idplane server` processes for idplane's load tools and reads what
// the kernel knows about them: resident memory and CPU time.
package serverproc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
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

// Config says how to start one server.
type Config struct {
	Binary string
	// DataDir is the server's --data-dir. It may already hold a pki/ the server is to reuse.
	DataDir string
	// Args follow `server --data-dir DIR --secure-port=0`.
	Args []string
	// LogPath receives the server's standard error.
	LogPath string
	// Timeout bounds the wait for /readyz.
	Timeout time.Duration
	// UserAgent names the tool in the readiness client.
	UserAgent string
}

// Server is a launched idplane process.
type Server struct {
	// Kubeconfig is the admin kubeconfig the server announced; it names the server's URL.
	Kubeconfig string
	// StartToReady is the time from starting the process to the first 200 from /readyz.
	StartToReady time.Duration

	cmd     *exec.Cmd
	dataDir string
	logPath string
	exited  chan struct{}
	waitErr error
}

// Start starts the binary and returns once /readyz answers 200 to the admin client certificate.
// The process is killed again when anything fails on the way.
func Start(ctx context.Context, c Config) (*Server, error) {
	s := &Server{dataDir: c.DataDir, logPath: c.LogPath, exited: make(chan struct{})}
	if err := s.start(ctx, c); err != nil {
		if s.cmd != nil && s.cmd.Process != nil {
			s.cmd.Process.Kill()
			<-s.exited
		}
		return nil, err
	}
	return s, nil
}

func (s *Server) start(ctx context.Context, c Config) error {
	logFile, err := os.Create(c.LogPath)
	if err != nil {
		return fmt.Errorf("creating server log: %w", err)
	}
	defer logFile.Close()
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("creating stdout pipe: %w", err)
	}
	defer stdoutR.Close()

	args := append([]string{"server", "--data-dir", c.DataDir, "--secure-port=0"}, c.Args...)
	s.cmd = exec.Command(c.Binary, args...)
	s.cmd.Stdout, s.cmd.Stderr = stdoutW, logFile
	// Should the tool die without stopping the server, the kernel kills the server too.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	begin := time.Now()
	err = s.cmd.Start()
	stdoutW.Close()
	if err != nil {
		return fmt.Errorf("starting %s: %w", c.Binary, err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()

	deadline := time.NewTimer(c.Timeout - time.Since(begin))
	defer deadline.Stop()
	announced := make(chan string, 1)
	go readAnnouncement(stdoutR, announced)
	select {
	case s.Kubeconfig = <-announced:
	case <-s.exited:
		return s.Failure("server exited before announcing its address")
	case <-deadline.C:
		return s.Failure(fmt.Sprintf("server did not announce its address within %s", c.Timeout))
	case <-ctx.Done():
		return ctx.Err()
	}
	if s.Kubeconfig == "" {
		return s.Failure("server closed stdout without naming its admin kubeconfig")
	}

	restCfg, err := loadclient.RESTConfig(s.Kubeconfig, c.UserAgent)
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
			s.StartToReady = time.Since(begin)
			return nil
		}
		select {
		case <-tick.C:
		case <-s.exited:
			return s.Failure("server exited before turning ready")
		case <-deadline.C:
			return s.Failure(fmt.Sprintf("server not ready within %s", c.Timeout))
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

// PID is the server's process ID.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// DataDir is the server's --data-dir.
func (s *Server) DataDir() string { return s.dataDir }

// Exited is closed once the process has exited.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// Stop sends SIGTERM, waits for the exit (killing the process after a minute) and reports how
// long the graceful shutdown took.
func (s *Server) Stop() (time.Duration, error) {
	select {
	case <-s.exited:
		return 0, s.Failure("server exited before it was stopped")
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
			return took, s.Failure(fmt.Sprintf("server did not exit cleanly after SIGTERM: %v", s.waitErr))
		}
		return took, nil
	case <-time.After(stopGrace):
		s.cmd.Process.Kill()
		<-s.exited
		return 0, s.Failure(fmt.Sprintf("server did not stop within %s of SIGTERM; killed", stopGrace))
	}
}

// Failure builds an error carrying the end of the server log, the only clue to why a launched
// server misbehaved once its temporary directory is gone.
func (s *Server) Failure(msg string) error {
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

// Memory is a process's current (VmRSS) and peak (VmHWM) resident set size in bytes.
type Memory struct{ RSS, HWM int64 }

// ReadMemory reads the resident set sizes of a process.
func ReadMemory(pid int) (Memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, fmt.Errorf("reading process memory: %w", err)
	}
	return parseStatus(pid, b)
}

func parseStatus(pid int, b []byte) (Memory, error) {
	var m Memory
	for line := range strings.Lines(string(b)) {
		key, value, ok := strings.Cut(line, ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("parsing %s of process %d: %w", key, pid, err)
		}
		if key == "VmRSS" {
			m.RSS = kb << 10
		} else {
			m.HWM = kb << 10
		}
	}
	if m.RSS == 0 {
		return Memory{}, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
	}
	return m, nil
}

// ProcessCPU returns the user plus system CPU time a process has used so far.
func ProcessCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading process CPU time: %w", err)
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

// SelfCPU returns the user plus system CPU time this process has used so far.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// MiB converts bytes to mebibytes.
func MiB(bytes int64) float64 { return float64(bytes) / (1 << 20) }
