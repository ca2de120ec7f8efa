package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/klog/v2"
)

// shutdownTimeout bounds how long a stopping server waits for the reviews in flight: the API
// server gives up on a webhook after at most 30 s, and a pod's default grace period is 30 s.
const shutdownTimeout = 25 * time.Second

// Server serves a handler over TLS 1.2 or later with a certificate and key read from files and
// read again when they change, so that a rotated Secret (cert-manager, or an admin's kubectl
// apply) takes effect without a restart.
type Server struct {
	handler http.Handler
	files   *dynamiccertificates.DynamicCertKeyPairContent
	cert    atomic.Pointer[tls.Certificate]
	// ShutdownDelay is how long a stopping server keeps serving before it stops accepting
	// connections: the time the cluster takes to stop routing to a terminating pod, so that the API
	// server's calls in that window do not fail (and, with failurePolicy Fail, refuse pods).
	ShutdownDelay time.Duration
}

// NewServer returns a server of h with the certificate and key in certFile and keyFile, which it
// reads now, so that a bad pair fails the start rather than every handshake.
func NewServer(h http.Handler, certFile, keyFile string) (*Server, error) {
	files, err := dynamiccertificates.NewDynamicServingContentFromFiles("gmsa-webhook", certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("loading the serving certificate %s and key %s: %w", certFile, keyFile, err)
	}
	s := &Server{handler: h, files: files}
	if err := s.load(); err != nil {
		return nil, err
	}
	files.AddListener(reloader{s})
	return s, nil
}

// reloader parses the pair each time the files' content changes, so that handshakes only load a
// pointer.
type reloader struct{ s *Server }

func (r reloader) Enqueue() {
	if err := r.s.load(); err != nil {
		klog.ErrorS(err, "Keeping the previous serving certificate")
	}
}

func (s *Server) load() error {
	certPEM, keyPEM := s.files.CurrentCertKeyContent()
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("parsing the serving certificate and key %s: %w", s.files.Name(), err)
	}
	s.cert.Store(&cert)
	klog.InfoS("Serving certificate loaded", "subject", cert.Leaf.Subject.String(), "dnsNames", cert.Leaf.DNSNames,
		"notAfter", cert.Leaf.NotAfter, "serial", cert.Leaf.SerialNumber.String())
	return nil
}

// Serve serves on ln until ctx is done, then keeps serving for ShutdownDelay, stops accepting and
// waits up to shutdownTimeout for the reviews in flight. It returns nil after a clean shutdown.
// A server serves once.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	// The files are watched for as long as Serve runs, and no longer: Serve returns once the
	// watch has stopped.
	watchCtx, stopWatching := context.WithCancel(context.Background())
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		s.files.Run(watchCtx, 1)
	}()
	defer func() {
		stopWatching()
		<-watching
	}()

	srv := &http.Server{
		Handler: s.handler,
		TLSConfig: &tls.Config{
			MinVersion: tls.VersionTLS12,
			GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
				return s.cert.Load(), nil
			},
		},
		// A client that dribbles its headers or idles holds a connection; the API server does
		// neither.
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          klog.NewStandardLogger("INFO"),
	}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ln, "", "") }()

	select {
	case err := <-served:
		return fmt.Errorf("serving on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	klog.InfoS("Stopping: serving on for the shutdown delay", "delay", s.ShutdownDelay)
	select {
	case err := <-served:
		return fmt.Errorf("serving on %s: %w", ln.Addr(), err)
	case <-time.After(s.ShutdownDelay):
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving on %s: %w", ln.Addr(), err)
	}
	klog.InfoS("Stopped")
	return nil
}
