package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/idplane/idplane/bench/internal/launch"
	"github.com/idplane/idplane/bench/internal/procstat"
)

// server is an idplane process launched by the tool in its own temporary data directory.
type server struct {
	*launch.Server
	root string
}

// launchServer starts the binary in a fresh temporary directory and returns once /readyz
// answers 200 to the admin client certificate.
func launchServer(ctx context.Context, binary string, timeout time.Duration) (*server, error) {
	root, err := os.MkdirTemp("", "apiload-")
	if err != nil {
		return nil, fmt.Errorf("creating temporary directory: %w", err)
	}
	s, err := launch.LaunchServer(ctx, launch.ServerOptions{Binary: binary, Dir: root, Timeout: timeout, Tool: "idplane-apiload"})
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	return &server{Server: s, root: root}, nil
}

// idleRSS waits for the server to settle and then reads its resident set size.
func (s *server) idleRSS(ctx context.Context, idle time.Duration) (float64, error) {
	select {
	case <-time.After(idle):
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-s.Exited():
		return 0, s.Failure("server exited while idle")
	}
	mem, err := procstat.ReadMemory(s.PID())
	if err != nil {
		return 0, err
	}
	return procstat.MiB(mem.RSS), nil
}

// stop stops the server, removes its temporary directory and reports how long the graceful
// shutdown took.
func (s *server) stop() (time.Duration, error) {
	defer os.RemoveAll(s.root)
	return s.Stop()
}
