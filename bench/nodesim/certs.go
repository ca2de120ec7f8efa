package main

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/rest"

	"github.com/idplane/idplane/internal/nodeidentity"
	"github.com/idplane/idplane/internal/pki"
)

// nodeCertValidity comfortably outlasts any run of the tool.
const nodeCertValidity = 24 * time.Hour

// loadCA reads the cluster CA a server wrote into its data directory.
func loadCA(dataDir string) (*pki.CA, error) {
	files := pki.Files{Dir: filepath.Join(dataDir, "pki")}
	certPEM, err := os.ReadFile(files.CACert())
	if err != nil {
		return nil, fmt.Errorf("reading the cluster CA: %w", err)
	}
	keyPEM, err := os.ReadFile(files.CAKey())
	if err != nil {
		return nil, fmt.Errorf("reading the cluster CA key: %w", err)
	}
	ca, err := pki.ParseCA(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("parsing the cluster CA: %w", err)
	}
	return ca, nil
}

// nodeCertificate issues the client certificate a node authenticates with: user
// system:node:<name> in group system:nodes, as the kubelet-client signer would.
func nodeCertificate(ca *pki.CA, node string, now time.Time) (certPEM, keyPEM []byte, err error) {
	certPEM, keyPEM, err = pki.Issue(ca, pki.IssueRequest{
		CommonName:   nodeidentity.UserPrefix + node,
		Organization: []string{user.NodesGroup},
		Usages:       []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		Validity:     nodeCertValidity,
		Now:          now,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("issuing the client certificate of node %s: %w", node, err)
	}
	return certPEM, keyPEM, nil
}

// clientSettings are what every simulated node's client shares.
type clientSettings struct {
	// caPEM verifies the servers.
	caPEM []byte
	// qps and burst are client-go's rate limit per node; the agent keeps client-go's defaults.
	qps   float32
	burst int
	rec   *recorder
}

// nodeRESTConfig is a node's client configuration for the server at host: its own certificate,
// hence its own TLS connection, and every request timed by the recorder.
func nodeRESTConfig(host string, certPEM, keyPEM []byte, s clientSettings) *rest.Config {
	return &rest.Config{
		Host:            host,
		TLSClientConfig: rest.TLSClientConfig{CAData: s.caPEM, CertData: certPEM, KeyData: keyPEM},
		QPS:             s.qps,
		Burst:           s.burst,
		UserAgent:       "idplane-nodesim",
		WrapTransport:   func(rt http.RoundTripper) http.RoundTripper { return &transport{next: rt, rec: s.rec} },
	}
}
