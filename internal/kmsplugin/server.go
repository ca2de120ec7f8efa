package kmsplugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"google.golang.org/grpc"
	kmsapi "k8s.io/kms/apis/v2"
	kmsservice "k8s.io/kms/pkg/service"
)

// Serve serves the KMS v2 gRPC service for keyFile on the unix socket at socketPath until ctx
// ends, then removes the socket. The socket is made accessible to its owner only: whoever can
// connect can have any data key unwrapped.
func Serve(ctx context.Context, socketPath, keyFile string) error {
	svc, err := NewService(keyFile)
	if err != nil {
		return err
	}
	ln, err := listen(socketPath)
	if err != nil {
		return err
	}
	server := grpc.NewServer(grpc.ConnectionTimeout(10 * time.Second))
	kmsapi.RegisterKeyManagementServiceServer(server, kmsservice.NewGRPCService(socketPath, 10*time.Second, svc))
	done := make(chan error, 1)
	go func() { done <- server.Serve(ln) }()
	select {
	case <-ctx.Done():
		server.GracefulStop()
		<-done
		return nil
	case err := <-done:
		return fmt.Errorf("serving %s: %w", socketPath, err)
	}
}

// listen listens on a unix socket at path. A socket left behind by a plugin that exited is
// replaced; one a running process answers on, or any other file, is not.
func listen(path string) (net.Listener, error) {
	if info, err := os.Lstat(path); err == nil {
		if info.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s is in use by another process", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("removing stale socket: %w", err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("checking socket path: %w", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	// Go removes the socket file when the listener closes.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("restricting %s to its owner: %w", path, err)
	}
	return ln, nil
}
