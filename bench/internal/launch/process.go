// Package launch starts the idplane processes a load tool measures, as children that die with
// the tool, and stops them again: any process with its output in a log file, and `idplane
// server`, which is ready once it has announced its admin kubeconfig and /readyz answers.
package launch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// StopGrace bounds how long a process may take to exit after SIGTERM before it is killed.
const StopGrace = time.Minute

// Process is a child process whose standard error (and, unless taken, standard output) goes to
// a log file.
type Process struct {
	Name    string
	LogPath string
	Started time.Time

	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
}

// Start starts binary with args; name says what it is in errors. stdout, when not nil, receives
// the process's standard output instead of the log.
func Start(name, logPath string, stdout io.Writer, binary string, args ...string) (*Process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the %s log: %w", name, err)
	}
	defer logFile.Close()
	p := &Process{Name: name, LogPath: logPath, exited: make(chan struct{})}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if stdout != nil {
		p.cmd.Stdout = stdout
	}
	// Should the tool die without stopping the process, the kernel kills the process too.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p.Started = time.Now()
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s %s: %w", binary, name, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// PID is the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Stop sends SIGTERM, waits for the exit (killing the process after StopGrace) and reports how
// long the graceful shutdown took.
func (p *Process) Stop() (time.Duration, error) {
	select {
	case <-p.exited:
		return 0, p.Failure(fmt.Sprintf("%s exited before it was stopped (%v)", p.Name, p.waitErr))
	default:
	}
	begin := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return 0, fmt.Errorf("sending SIGTERM to %s: %w", p.Name, err)
	}
	select {
	case <-p.exited:
		took := time.Since(begin)
		if p.waitErr != nil {
			return took, p.Failure(fmt.Sprintf("%s did not exit cleanly after SIGTERM: %v", p.Name, p.waitErr))
		}
		return took, nil
	case <-time.After(StopGrace):
		p.cmd.Process.Kill()
		<-p.exited
		return 0, p.Failure(fmt.Sprintf("%s did not stop within %s of SIGTERM; killed", p.Name, StopGrace))
	}
}

// Kill ends the process at once, for clean-up after a failure.
func (p *Process) Kill() {
	p.cmd.Process.Kill()
	<-p.exited
}

// Failure builds an error carrying the end of the process's log, the only clue to why a
// launched process misbehaved once its temporary directory is gone.
func (p *Process) Failure(msg string) error {
	const tailBytes = 2048
	b, err := os.ReadFile(p.LogPath)
	if err != nil || len(b) == 0 {
		return errors.New(msg)
	}
	if len(b) > tailBytes {
		b = b[len(b)-tailBytes:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return fmt.Errorf("%s; end of %s log:\n%s", msg, p.Name, b)
}
