package launch

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/idplane/idplane/bench/internal/loadclient"
)

const readyPoll = 10 * time.Millisecond

// ServerOptions say how to launch `idplane server`.
type ServerOptions struct {
	Binary string
	// Dir is an existing directory for the server's data (Dir/data) and log (Dir/server.log).
	Dir string
	// Args are added to `server --data-dir Dir/data --secure-port=0`.
	Args []string
	// Timeout bounds the time from start to the first 200 from /readyz.
	Timeout time.Duration
	// Tool names the load tool in the readiness client's user agent.
	Tool string
}

// Server is a launched `idplane server`.
type Server struct {
	*Process
	// Kubeconfig is the admin kubeconfig the server wrote.
	Kubeconfig   string
	StartToReady time.Duration
}

// LaunchServer starts the server and returns once /readyz answers 200 to the admin client
// certificate. The server is killed again when anything fails on the way.
func LaunchServer(ctx context.Context, o ServerOptions) (*Server, error) {
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating stdout pipe: %w", err)
	}
	args := append([]string{"server", "--data-dir", filepath.Join(o.Dir, "data"), "--secure-port=0"}, o.Args...)
	p, err := Start("server", filepath.Join(o.Dir, "server.log"), stdoutW, o.Binary, args...)
	stdoutW.Close()
	if err != nil {
		stdoutR.Close()
		return nil, err
	}
	s := &Server{Process: p}
	if err := s.awaitReady(ctx, stdoutR, o); err != nil {
		p.Kill()
		return nil, err
	}
	return s, nil
}

func (s *Server) awaitReady(ctx context.Context, stdout *os.File, o ServerOptions) error {
	deadline := time.NewTimer(o.Timeout - time.Since(s.Started))
	defer deadline.Stop()
	announced := make(chan string, 1)
	go readAnnouncement(stdout, announced)
	select {
	case s.Kubeconfig = <-announced:
	case <-s.Exited():
		return s.Failure("server exited before announcing its address")
	case <-deadline.C:
		return s.Failure(fmt.Sprintf("server did not announce its address within %s", o.Timeout))
	case <-ctx.Done():
		return ctx.Err()
	}
	if s.Kubeconfig == "" {
		return s.Failure("server closed stdout without naming its admin kubeconfig")
	}

	restCfg, err := loadclient.RESTConfig(s.Kubeconfig, o.Tool)
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
			s.StartToReady = time.Since(s.Started)
			return nil
		}
		select {
		case <-tick.C:
		case <-s.Exited():
			return s.Failure("server exited before turning ready")
		case <-deadline.C:
			return s.Failure(fmt.Sprintf("server not ready within %s", o.Timeout))
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// readAnnouncement sends the admin kubeconfig path from the server's start-up lines (or "" when
// stdout closes first) and then drains stdout until the server exits, so that it never blocks
// or dies writing to it.
func readAnnouncement(stdout *os.File, announced chan<- string) {
	defer stdout.Close()
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
