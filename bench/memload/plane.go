package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/idplane/idplane/bench/internal/launch"
	"github.com/idplane/idplane/bench/internal/procstat"
)

// plane is what one run measures: a fresh control plane, the admin kubeconfig that reaches it
// and the processes whose memory and CPU count as the plane's.
type plane struct {
	kubeconfig string
	pids       []int
	stop       func()
}

// startPlane launches the plane a run measures in dir: idplane's server, or the -plane command.
func startPlane(ctx context.Context, c config, dir string) (plane, error) {
	if c.planeCmd == "" {
		srv, err := launch.LaunchServer(ctx, launch.ServerOptions{Binary: c.idplane, Dir: dir, Timeout: c.startTimeout, Tool: tool, Args: c.serverArgs})
		if err != nil {
			return plane{}, err
		}
		return plane{kubeconfig: srv.Kubeconfig, pids: []int{srv.PID()}, stop: func() { srv.Stop() }}, nil
	}
	return startCommand(ctx, c, dir)
}

// startCommand runs the -plane command, which starts a plane and announces it on its standard
// output (see announcement), and waits for that announcement.
func startCommand(ctx context.Context, c config, dir string) (plane, error) {
	argv := strings.Fields(c.planeCmd)
	r, w, err := os.Pipe()
	if err != nil {
		return plane{}, err
	}
	p, err := launch.Start("plane", filepath.Join(dir, "plane.log"), w, argv[0], argv[1:]...)
	w.Close()
	if err != nil {
		r.Close()
		return plane{}, err
	}
	type result struct {
		a   announcement
		err error
	}
	announced := make(chan result, 1)
	go func() {
		defer r.Close()
		a, err := readAnnouncement(r)
		announced <- result{a, err}
		io.Copy(io.Discard, r) // the command may go on writing; it must never block on it
	}()
	stop := func() { p.Stop() }
	timer := time.NewTimer(c.startTimeout)
	defer timer.Stop()
	select {
	case got := <-announced:
		if got.err != nil {
			stop()
			return plane{}, p.Failure(got.err.Error())
		}
		return plane{kubeconfig: got.a.kubeconfig, pids: got.a.pids, stop: stop}, nil
	case <-p.Exited():
		return plane{}, p.Failure("the plane command exited before announcing its plane")
	case <-timer.C:
		stop()
		return plane{}, p.Failure(fmt.Sprintf("the plane command announced no plane within %s", c.startTimeout))
	case <-ctx.Done():
		stop()
		return plane{}, ctx.Err()
	}
}

// announcement is what a -plane command prints once its plane is ready, one "key=value" per
// line: "kubeconfig=<admin kubeconfig>" and "pids=<pid>,<pid>,..." (every process of the plane,
// the API server first). Other lines are ignored.
type announcement struct {
	kubeconfig string
	pids       []int
}

func readAnnouncement(r io.Reader) (announcement, error) {
	var a announcement
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, value, _ := strings.Cut(sc.Text(), "=")
		switch key {
		case "kubeconfig":
			a.kubeconfig = value
		case "pids":
			for _, f := range strings.Split(value, ",") {
				pid, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil || pid <= 0 {
					return a, fmt.Errorf("the plane command announced pids %q: not a list of process ids", value)
				}
				a.pids = append(a.pids, pid)
			}
		}
		if a.kubeconfig != "" && len(a.pids) > 0 {
			return a, nil
		}
	}
	if err := sc.Err(); err != nil {
		return a, err
	}
	return a, errors.New("the plane command's output ended without both kubeconfig= and pids= lines")
}

// planeMemory sums the memory of the plane's processes. The peak is the sum of each process's
// own peak, an upper bound of the plane's.
func planeMemory(pids []int) (procstat.Memory, error) {
	var sum procstat.Memory
	for _, pid := range pids {
		m, err := procstat.ReadMemory(pid)
		if err != nil {
			return sum, err
		}
		sum.RSS += m.RSS
		sum.HWM += m.HWM
		sum.Anon += m.Anon
		sum.File += m.File
	}
	return sum, nil
}

// planeCPU sums the CPU time the plane's processes have used.
func planeCPU(pids []int) (time.Duration, error) {
	var sum time.Duration
	for _, pid := range pids {
		d, err := procstat.CPU(pid)
		if err != nil {
			return 0, err
		}
		sum += d
	}
	return sum, nil
}
