// Package credentials gives the node agent its identity: a client certificate for
// system:node:<name> obtained through TLS bootstrap (a kube-apiserver-client-kubelet CSR made
// with the bootstrap kubeconfig) and renewed with itself before it expires, and a kubelet-serving
// certificate for the node's addresses. Both live in DIR/pki as the kubelet keeps them, and
// DIR/kubeconfig names the client pair by path.
package credentials

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/connrotation"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/idplane/idplane/internal/nodeidentity"
)

// Config says which node the agent is and where it keeps its credentials.
type Config struct {
	// RootDir is DIR: DIR/kubeconfig and DIR/pki are the agent's.
	RootDir  string
	NodeName string
	// BootstrapKubeconfig authenticates the first client CSR, and any later one when the
	// node's certificate has expired. It may be empty while DIR/kubeconfig is valid.
	BootstrapKubeconfig string
	// Discover, when there is no bootstrap kubeconfig, finds the bootstrap client configuration
	// (token discovery). It is called only when the node has no usable certificate.
	Discover func(context.Context) (*rest.Config, error)
	// ServerURL, when set, replaces the server of both kubeconfigs.
	ServerURL string
	// Hostname and Addresses are the serving certificate's subject alternative names.
	Hostname  string
	Addresses []net.IP
	// Clock schedules renewals; nil is the real clock.
	Clock clock.Clock
}

const (
	clientPairPrefix  = "kubelet-client"
	servingPairPrefix = "kubelet-server"
)

// Paths of the agent's credential files under DIR.
func kubeconfigPath(root string) string { return filepath.Join(root, "kubeconfig") }
func pkiDir(root string) string         { return filepath.Join(root, "pki") }

// currentPair is the file (certificate and key in one) the store keeps pointing at the pair in use.
func currentPair(root, prefix string) string {
	return filepath.Join(pkiDir(root), prefix+"-current.pem")
}

// Identity is the node's credentials, kept fresh in the background until Stop.
type Identity struct {
	cluster   cluster
	client    *rotation
	serving   *rotation // nil when the node has no name to serve under
	tracker   *connrotation.ConnectionTracker
	transport *http.Transport

	cancel    context.CancelFunc
	stopAfter func() bool
	wg        sync.WaitGroup
	stopOnce  sync.Once
}

// Start returns the node's identity: the client certificate of DIR/kubeconfig when it is the
// node's and unexpired, otherwise one obtained with the bootstrap kubeconfig (Start waits for
// the CSR to be approved and issued). It then renews the client certificate at 70–90 % of its
// lifetime and requests the serving certificate in the background; a serving CSR waits for an
// approver without holding anything up. Cancelling ctx stops the background work as Stop does.
func Start(ctx context.Context, c Config) (*Identity, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	root, err := filepath.Abs(c.RootDir)
	if err != nil {
		return nil, fmt.Errorf("agent directory %s: %w", c.RootDir, err)
	}
	clk := c.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	// DIR holds more than credentials (pods' volumes, which their users must reach), so only
	// DIR/pki is closed to everyone but the owner.
	if err := os.MkdirAll(root, 0o750); err != nil {
		return nil, fmt.Errorf("creating the agent directory %s: %w", root, err)
	}
	if err := ensurePrivateDir(pkiDir(root)); err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx).WithValues("node", c.NodeName)

	clientTemplate := nodeTemplate(c.NodeName)
	clientStore, err := certificate.NewFileStoreWithLogger(logger, clientPairPrefix, pkiDir(root), pkiDir(root), "", "")
	if err != nil {
		return nil, fmt.Errorf("client certificate store in %s: %w", pkiDir(root), err)
	}

	// The cluster comes from DIR/kubeconfig when its certificate is still good, else from the
	// bootstrap kubeconfig; the bootstrap credentials stay at hand for when the node's lapse.
	var bootstrap *rest.Config
	if c.BootstrapKubeconfig != "" {
		if bootstrap, err = loadRESTConfig(c.BootstrapKubeconfig); err != nil {
			return nil, fmt.Errorf("bootstrap kubeconfig: %w", err)
		}
		if c.ServerURL != "" {
			bootstrap.Host = c.ServerURL
		}
	}
	// Discovery asks the server, so it happens only when the node needs the bootstrap
	// credentials: not at a restart with a valid certificate, after the token may have expired.
	var bootstrapMu sync.Mutex
	bootstrapConfig := func(ctx context.Context) (*rest.Config, error) {
		bootstrapMu.Lock()
		defer bootstrapMu.Unlock()
		if bootstrap == nil && c.Discover != nil {
			b, err := c.Discover(ctx)
			if err != nil {
				return nil, fmt.Errorf("discovering the cluster with the bootstrap token: %w", err)
			}
			if c.ServerURL != "" {
				b.Host = c.ServerURL
			}
			bootstrap = b
		}
		return bootstrap, nil
	}
	id := &Identity{tracker: connrotation.NewConnectionTracker()}
	existing, reuseErr := loadNodeKubeconfig(kubeconfigPath(root), clientTemplate, c.ServerURL, clk.Now())
	switch {
	case reuseErr == nil:
		id.cluster = existing.cluster
		if err := seedStore(clientStore, existing); err != nil {
			return nil, err
		}
		logger.Info("Reusing the node's client certificate", "kubeconfig", kubeconfigPath(root), "notAfter", existing.leaf.NotAfter)
	case bootstrap == nil && c.Discover == nil:
		return nil, fmt.Errorf("%s is %w and no bootstrap kubeconfig was given to obtain a certificate for %s",
			kubeconfigPath(root), reuseErr, clientTemplate.Subject.CommonName)
	default:
		b, err := bootstrapConfig(ctx)
		if err != nil {
			return nil, err
		}
		if id.cluster, err = clusterOf(b, c.BootstrapKubeconfig, c.ServerURL); err != nil {
			return nil, fmt.Errorf("bootstrap kubeconfig: %w", err)
		}
		logger.Info("Bootstrapping the node's client certificate", "reason", reuseErr.Error())
	}

	clientManager, err := newManager(certificate.Config{
		Name:             "kubelet-client",
		Template:         clientTemplate,
		SignerName:       certificatesv1.KubeAPIServerClientKubeletSignerName,
		GetUsages:        certificate.DefaultKubeletClientGetUsages,
		CertificateStore: clientStore,
		ClientsetFn: func(current *tls.Certificate) (kubernetes.Interface, error) {
			// Renewal goes through the node's own certificate while it is good; only a node
			// without one falls back to the bootstrap credentials.
			if current != nil && satisfies(current.Leaf, clientTemplate) && clk.Now().Before(current.Leaf.NotAfter) {
				return kubernetes.NewForConfig(id.RESTConfig())
			}
			b, err := bootstrapConfig(context.Background())
			if err != nil {
				return nil, err
			}
			if b == nil {
				return nil, fmt.Errorf("the node has no valid client certificate and no bootstrap kubeconfig was given")
			}
			return kubernetes.NewForConfig(b)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("client certificate manager: %w", err)
	}
	id.client = &rotation{
		name: "kubelet-client", manager: clientManager, template: clientTemplate, clock: clk, random: rand.Float64,
		pending: "approval of the kube-apiserver-client-kubelet CSR (the server approves node client CSRs of allowed requesters)",
		rotated: id.tracker.CloseAll,
	}
	if id.transport, err = newTransport(id.cluster.caPEM, id.ClientCertificate, id.tracker); err != nil {
		clientManager.Stop()
		return nil, err
	}

	bgCtx, cancel := context.WithCancel(klog.NewContext(context.WithoutCancel(ctx), logger))
	id.cancel = cancel
	id.stopAfter = context.AfterFunc(ctx, id.Stop)
	stopOnError := func(err error) (*Identity, error) {
		id.Stop()
		return nil, err
	}
	if id.client.usable() == nil && !id.client.rotate(bgCtx) {
		return stopOnError(fmt.Errorf("stopped before a client certificate for %s was issued: %w", clientTemplate.Subject.CommonName, ctx.Err()))
	}
	if err := writeNodeKubeconfig(kubeconfigPath(root), id.cluster, currentPair(root, clientPairPrefix)); err != nil {
		return stopOnError(err)
	}
	id.goRun(bgCtx, id.client)

	if template := servingTemplate(c.NodeName, c.Hostname, c.Addresses); template != nil {
		servingStore, err := certificate.NewFileStoreWithLogger(logger, servingPairPrefix, pkiDir(root), pkiDir(root), "", "")
		if err != nil {
			return stopOnError(fmt.Errorf("serving certificate store in %s: %w", pkiDir(root), err))
		}
		servingManager := newServingRequester(bgCtx, template, servingStore, filepath.Join(pkiDir(root), servingPairPrefix+"-pending.key"),
			func() (kubernetes.Interface, error) { return kubernetes.NewForConfig(id.RESTConfig()) }, clk)
		id.serving = &rotation{
			name: "kubelet-serving", manager: servingManager, template: template, clock: clk, random: rand.Float64,
			pending: "approval of the kubelet-serving CSR (idplane server --approve-kubelet-serving, or kubectl certificate approve)",
		}
		id.goRun(bgCtx, id.serving)
	} else {
		logger.Info("No host name or address given: no serving certificate is requested")
	}
	return id, nil
}

func (c Config) validate() error {
	var errs []error
	if c.RootDir == "" {
		errs = append(errs, errors.New("the agent directory is required"))
	}
	if c.NodeName == "" {
		errs = append(errs, errors.New("the node name is required"))
	} else if msgs := validation.IsDNS1123Subdomain(c.NodeName); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("node name %q: %v", c.NodeName, msgs))
	}
	if c.Hostname != "" {
		if msgs := validation.IsDNS1123Subdomain(strings.ToLower(c.Hostname)); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("host name %q: %v", c.Hostname, msgs))
		}
	}
	for _, ip := range c.Addresses {
		if ip == nil || ip.IsUnspecified() {
			errs = append(errs, fmt.Errorf("address %v cannot name the node in a certificate", ip))
		}
	}
	return errors.Join(errs...)
}

// nodeTemplate is the subject every certificate of the node carries.
func nodeTemplate(nodeName string) *x509.CertificateRequest {
	return &x509.CertificateRequest{Subject: pkix.Name{
		CommonName:   nodeidentity.UserPrefix + nodeName,
		Organization: []string{nodeidentity.NodesGroup},
	}}
}

func newManager(cfg certificate.Config) (rotatingManager, error) {
	m, err := certificate.NewManager(&cfg)
	if err != nil {
		return nil, err
	}
	r, ok := m.(rotatingManager)
	if !ok {
		m.Stop()
		return nil, fmt.Errorf("client-go's certificate manager %T no longer offers RotateCerts", m)
	}
	return r, nil
}

// ensurePrivateDir creates dir readable only by its owner, and narrows it if it exists wider.
func ensurePrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("restricting %s to its owner: %w", dir, err)
	}
	return nil
}

// seedStore makes the store's current pair the one DIR/kubeconfig holds, when it is not already.
func seedStore(store certificate.Store, k *nodeKubeconfig) error {
	if cur, err := store.Current(); err == nil && cur.Leaf != nil && bytes.Equal(cur.Leaf.Raw, k.leaf.Raw) {
		return nil
	}
	if _, err := store.Update(k.certPEM, k.keyPEM); err != nil {
		return fmt.Errorf("storing the certificate of the node kubeconfig: %w", err)
	}
	return nil
}

func (id *Identity) goRun(ctx context.Context, r *rotation) {
	id.wg.Add(1)
	go func() {
		defer id.wg.Done()
		r.run(ctx)
	}()
}

// RESTConfig is a client configuration authenticated as system:node:<name>. Every client made
// from it shares one transport that presents the current certificate and drops its connections
// when the certificate is renewed, so that no connection outlives the certificate it began with.
func (id *Identity) RESTConfig() *rest.Config {
	return &rest.Config{Host: id.cluster.server, Transport: id.transport}
}

// ClientCertificate is the node's current client certificate; nil once it has expired.
func (id *Identity) ClientCertificate() *tls.Certificate {
	return id.client.manager.Current()
}

// ServingCertificate is the node's kubelet-serving certificate; nil until one is issued or when
// the node has no name to serve under.
func (id *Identity) ServingCertificate() *tls.Certificate {
	if id.serving == nil {
		return nil
	}
	return id.serving.manager.Current()
}

// Stop ends renewal and closes the node's connections. It waits for the background work.
func (id *Identity) Stop() {
	id.stopOnce.Do(func() {
		id.stopAfter()
		id.cancel()
		id.client.manager.Stop()
		if id.serving != nil {
			id.serving.manager.Stop()
		}
		id.wg.Wait()
		id.transport.CloseIdleConnections()
		id.tracker.CloseAll()
	})
}
