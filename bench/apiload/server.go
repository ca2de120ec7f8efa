package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/idplane/idplane/bench/internal/serverproc"
)

// server is an idplane process launched by the tool in its own temporary data directory.
type server struct {
	*serverproc.Server
	root string
}

// launch starts the binary in a fresh temporary directory and returns once /readyz answers 200
// to the admin client certificate. The directory is removed again when anything fails.
func launch(ctx context.Context, binary string, timeout time.Duration) (*server, error) {
	root, err := os.MkdirTemp("", "apiload-")
	if err != nil {
		return nil, fmt.Errorf("creating temporary directory: %w", err)
	}
	srv, err := serverproc.Start(ctx, serverproc.Config{
		Binary: binary, DataDir: filepath.Join(root, "data"), LogPath: filepath.Join(root, "server.log"),
		Timeout: timeout, UserAgent: "idplane-apiload",
	})
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	return &server{Server: srv, root: root}, nil
}

func (s *server) pid() int { return s.PID() }

// idleRSS waits for the server to settle and then reads its resident set size.
func (s *server) idleRSS(ctx context.Context, idle time.Duration) (float64, error) {
	select {
	case <-time.After(idle):
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-s.Exited():
		return 0, s.Failure("server exited while idle")
	}
	mem, err := serverproc.ReadMemory(s.pid())
	if err != nil {
		return 0, err
	}
	return serverproc.MiB(mem.RSS), nil
}

// stop stops the server (see serverproc.Server.Stop) and removes its temporary directory.
func (s *server) stop() (time.Duration, error) {
	defer os.RemoveAll(s.root)
	return s.Stop()
}
