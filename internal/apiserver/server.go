// Package apiserver assembles idplane's Kubernetes-compatible API server: scheme, storage on etcd,
// authentication, authorization, admission, the served API groups and the built-in controllers.
package apiserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/idplane/idplane/internal/leaderelection"
	"github.com/idplane/idplane/internal/pki"
	"github.com/idplane/idplane/internal/reviewserving"
)

// kubernetesVersion is the release whose API and library behaviour idplane follows.
const kubernetesVersion = "1.37.2"

// Server is a running idplane API server.
type Server struct {
	// URL is the HTTPS address clients use.
	URL string
	// AdminKubeconfig is the path of the system:masters kubeconfig.
	AdminKubeconfig string

	etcd *embeddedEtcd
	// identity names this replica in the controllers' Lease.
	identity string
	// readyz asks the server's own /readyz over the loopback connection.
	readyz func(context.Context) error
	done   chan struct{}
	err    error
}

// readyPoll is how often WaitReady asks /readyz.
const readyPoll = 50 * time.Millisecond

// WaitReady blocks until /readyz answers 200: every start-up hook has returned, so the system
// namespaces and the default RBAC policy are in place and authorize. It returns an error when
// ctx ends or the server stops first. Requests are answered before that, as kube-apiserver
// answers them; a client that must see a complete cluster waits for /readyz too.
func (s *Server) WaitReady(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := wait.PollUntilContextCancel(ctx, readyPoll, true, func(ctx context.Context) (bool, error) {
		return s.readyz(ctx) == nil, nil
	})
	select {
	case <-s.done:
		return fmt.Errorf("server stopped before it was ready: %v", s.err)
	default:
	}
	if err != nil {
		return fmt.Errorf("waiting for /readyz: %w", err)
	}
	return nil
}

// Wait blocks until the server has stopped (its context ended) and returns why it stopped.
func (s *Server) Wait() error {
	<-s.done
	return s.err
}

// Start prepares the data directory, starts etcd and serves the API until ctx ends. It returns
// once the server listens; /readyz turns ready when the start-up hooks are done.
func Start(ctx context.Context, o *Options) (*Server, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data directory: %w", err)
	}
	if err := o.Memory.apply(); err != nil {
		return nil, err
	}
	files := pki.Files{Dir: filepath.Join(o.DataDir, "pki")}
	now := time.Now()
	ca, err := pki.EnsureCA(files, "idplane-ca", now)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(o.BindAddress.String(), strconv.Itoa(o.SecurePort)))
	if err != nil {
		return nil, fmt.Errorf("listening on %s:%d: %w", o.BindAddress, o.SecurePort, err)
	}
	srv, err := start(ctx, o, files, ca, ln, now)
	if err != nil {
		ln.Close()
		return nil, err
	}
	return srv, nil
}

// start writes the server's credentials to the data directory, opens etcd, assembles the server
// on ln and runs it until ctx ends.
func start(ctx context.Context, o *Options, files pki.Files, ca *pki.CA, ln net.Listener, now time.Time) (_ *Server, err error) {
	url := serverURL(o, ln)
	creds, err := ensureCredentials(o, files, ca, url, now)
	if err != nil {
		return nil, err
	}

	// From here on every step pushes the cleanup of what it opens: a failure releases what was
	// opened before it, a running server what it used once it has stopped serving.
	var closers closerStack
	defer func() {
		if err != nil {
			closers.unwind()
		}
	}()
	if err := creds.tokens.connectSigner(&closers); err != nil {
		return nil, err
	}
	etcd, etcdServers, err := openEtcd(ctx, o, creds.encryptionConfig, &closers)
	if err != nil {
		return nil, err
	}
	var identity string
	if o.LeaderElection.LeaderElect {
		if identity, err = leaderelection.NewIdentity(); err != nil {
			return nil, err
		}
	}
	prepared, err := build(o, buildInput{
		listener: ln, servingCert: creds.servingCert, servingKey: creds.servingKey, caPEM: ca.CertPEM,
		etcdServers: etcdServers, tokens: creds.tokens, identity: identity, encryptionConfig: creds.encryptionConfig,
		url: url,
	}, &closers)
	if err != nil {
		return nil, err
	}
	s := &Server{URL: url, AdminKubeconfig: creds.adminKubeconfig, etcd: etcd, identity: identity, readyz: prepared.readyz, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.err = prepared.run(ctx)
		// Release etcd and the rest only after the server stopped serving, so no request sees a
		// closed store.
		closers.unwind()
	}()
	return s, nil
}

type buildInput struct {
	listener                net.Listener
	servingCert, servingKey []byte
	caPEM                   []byte
	etcdServers             []string
	tokens                  *tokenSettings
	// identity names this replica in the controllers' Lease.
	identity string
	// encryptionConfig is the EncryptionConfiguration file the storage layer encrypts with.
	encryptionConfig string
	// url is the address clients reach the server at, as the admin kubeconfig names it.
	url string
}

// assembly is what the build steps share: the options and start's input, the server
// configuration each step fills in its part of, and the loopback clients the parts use.
type assembly struct {
	o        *Options
	in       buildInput
	cfg      *genericapiserver.Config
	loopback loopback
	// podCerts are the built-in pod certificate signers' CAs (authentication step).
	podCerts podCertCAs
	// reviews answers the review creates (reviews.go).
	reviews *reviewserving.Dispatcher
}

// build assembles the API server, one step per part, each in its own file. A step that opens
// something pushes its cleanup on closers, which start unwinds.
func build(o *Options, in buildInput, closers *closerStack) (*preparedServer, error) {
	cfg, err := newServerConfig(o, in)
	if err != nil {
		return nil, err
	}
	lb, err := newLoopback(cfg.LoopbackClientConfig)
	if err != nil {
		return nil, err
	}
	a := &assembly{o: o, in: in, cfg: cfg, loopback: lb}
	a.reviewsInChain()
	a.flowControl()
	tokens, err := a.authentication(closers)
	if err != nil {
		return nil, err
	}
	// Storage first: the Node authorizer's freshness wait reads the store under its prefixes.
	if err := a.storage(); err != nil {
		return nil, err
	}
	authz, err := a.authorization(closers)
	if err != nil {
		return nil, err
	}
	dynamicInformers, err := a.admission()
	if err != nil {
		return nil, err
	}

	srv, err := cfg.Complete(lb.informers).New("idplane", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, fmt.Errorf("creating API server: %w", err)
	}
	if err := a.endpoints(srv, authz, tokens); err != nil {
		return nil, err
	}
	if err := startDynamicInformers(srv, dynamicInformers); err != nil {
		return nil, err
	}
	if err := a.apfConfigProducer(srv); err != nil {
		return nil, err
	}
	if err := a.controllers(srv, authz, tokens); err != nil {
		return nil, err
	}
	if err := a.kubernetesService(srv); err != nil {
		return nil, err
	}
	readyz := func(ctx context.Context) error {
		return lb.client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
	}
	return &preparedServer{run: srv.PrepareRun().RunWithContext, readyz: readyz}, nil
}

// preparedServer is an assembled server, ready to run until its context ends.
type preparedServer struct {
	run    func(context.Context) error
	readyz func(context.Context) error
}
