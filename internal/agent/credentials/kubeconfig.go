package credentials

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/keyutil"

	"github.com/idplane/idplane/internal/pki"
)

// cluster is where the agent talks to and how it trusts the server.
type cluster struct {
	server string
	caPEM  []byte
}

// loadRESTConfig reads a kubeconfig's current context.
func loadRESTConfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}

// clusterOf is the server and CA bundle of a client configuration. The agent refuses a
// configuration without a CA: it would have to trust whatever answers at the address.
func clusterOf(cfg *rest.Config, path, serverOverride string) (cluster, error) {
	c := cluster{server: cfg.Host, caPEM: cfg.CAData}
	if serverOverride != "" {
		c.server = serverOverride
	}
	if len(c.caPEM) == 0 && cfg.CAFile != "" {
		data, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return cluster{}, fmt.Errorf("reading the CA bundle of kubeconfig %s: %w", path, err)
		}
		c.caPEM = data
	}
	if len(c.caPEM) == 0 {
		return cluster{}, fmt.Errorf("kubeconfig %s names no certificate authority for the server", path)
	}
	if _, err := x509.ParseCertificate(firstCertificate(c.caPEM)); err != nil {
		return cluster{}, fmt.Errorf("kubeconfig %s: certificate authority: %w", path, err)
	}
	if c.server == "" {
		return cluster{}, fmt.Errorf("kubeconfig %s names no server", path)
	}
	return c, nil
}

func firstCertificate(pemData []byte) []byte {
	block, _ := pem.Decode(pemData)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil
	}
	return block.Bytes
}

// nodeKubeconfig is what DIR/kubeconfig holds when its certificate is fit to use.
type nodeKubeconfig struct {
	cluster
	certPEM, keyPEM []byte
	leaf            *x509.Certificate
}

// errUnusable says why DIR/kubeconfig cannot be reused; the agent then bootstraps.
var errUnusable = errors.New("not usable")

// loadNodeKubeconfig reads DIR/kubeconfig and checks that its client certificate is the node's
// (CN system:node:N) and valid at now.
func loadNodeKubeconfig(path string, template *x509.CertificateRequest, serverOverride string, now time.Time) (*nodeKubeconfig, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%w: %w", errUnusable, err)
	}
	cfg, err := loadRESTConfig(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUnusable, err)
	}
	cl, err := clusterOf(cfg, path, serverOverride)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUnusable, err)
	}
	certPEM, err := dataOrFile(cfg.CertData, cfg.CertFile)
	if err != nil {
		return nil, fmt.Errorf("%w: client certificate: %w", errUnusable, err)
	}
	keyPEM, err := dataOrFile(cfg.KeyData, cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: client key: %w", errUnusable, err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%w: client certificate and key: %w", errUnusable, err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("%w: client certificate: %w", errUnusable, err)
		}
	}
	switch {
	case !satisfies(leaf, template):
		return nil, fmt.Errorf("%w: its certificate is for %q, not %q", errUnusable, leaf.Subject.CommonName, template.Subject.CommonName)
	case now.Before(leaf.NotBefore):
		return nil, fmt.Errorf("%w: its certificate is valid only from %v", errUnusable, leaf.NotBefore)
	case !now.Before(leaf.NotAfter):
		return nil, fmt.Errorf("%w: its certificate expired at %v", errUnusable, leaf.NotAfter)
	}
	// The pair as the store writes it: the key in its own PEM encoding.
	if keyPEM, err = keyutil.MarshalPrivateKeyToPEM(pair.PrivateKey); err != nil {
		return nil, fmt.Errorf("%w: client key: %w", errUnusable, err)
	}
	return &nodeKubeconfig{cluster: cl, certPEM: certPEM, keyPEM: keyPEM, leaf: leaf}, nil
}

func dataOrFile(data []byte, file string) ([]byte, error) {
	if len(data) > 0 {
		return data, nil
	}
	if file == "" {
		return nil, errors.New("none given")
	}
	return os.ReadFile(file)
}

// writeNodeKubeconfig writes DIR/kubeconfig: the server and its CA, and the client certificate
// and key by the path of the store's current pair, so that the file follows rotation.
func writeNodeKubeconfig(path string, cl cluster, pairPath string) error {
	const name = "default"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: cl.server, CertificateAuthorityData: cl.caPEM}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificate: pairPath, ClientKey: pairPath}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("encoding kubeconfig %s: %w", path, err)
	}
	return pki.WriteFile(path, data, 0o600)
}
