package main

import (
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/connrotation"

	"github.com/idplane/idplane/internal/nodeidentity"
	"github.com/idplane/idplane/internal/pki"
)

// nodeCertValidity comfortably outlasts any run of the tool.
const nodeCertValidity = 24 * time.Hour

// loadCA reads the cluster CA a server wrote into its data directory.
func loadCA(dataDir string) (*pki.CA, error) {
	files := pki.Files{Dir: filepath.Join(dataDir, "pki")}
	return loadCAFiles(files.CACert(), files.CAKey())
}

// loadCAFiles reads a client CA's certificate and key: the CA a server trusts for client
// certificates, from which the tool mints the nodes' identities.
func loadCAFiles(certFile, keyFile string) (*pki.CA, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("reading the client CA: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("reading the client CA key: %w", err)
	}
	ca, err := pki.ParseCA(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("parsing the client CA: %w", err)
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

// nodeRESTConfig is a node's client configuration: base's server and its trust (an anonymous
// copy of the admin's), the node's own certificate, hence its own TLS connection, and every
// request timed by the recorder. The agent sets its clients' rate limits itself.
//
// Every client made from it shares one transport, as a real agent's clients share its
// identity's, and that transport dials through the returned dialer, whose CloseAll drops the
// node's connections once its agent has stopped: the server then holds nothing for the node but
// what it stored.
func nodeRESTConfig(base *rest.Config, certPEM, keyPEM []byte, rec *recorder) (*rest.Config, *connrotation.Dialer, error) {
	tlsConfig := rest.AnonymousClientConfig(base)
	tlsConfig.CertFile, tlsConfig.KeyFile = "", ""
	tlsConfig.CertData, tlsConfig.KeyData = certPEM, keyPEM
	dialer := connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
	tlsConfig.Dial = dialer.DialContext
	rt, err := rest.TransportFor(tlsConfig)
	if err != nil {
		return nil, nil, fmt.Errorf("building a node's transport: %w", err)
	}
	c := rest.AnonymousClientConfig(base)
	c.TLSClientConfig = rest.TLSClientConfig{}
	c.Transport = rt
	// The admin's load settings (no rate limit, a 30 s bound on everything, watches too) are not
	// the agent's: it sets its own rate limits and bounds.
	c.QPS, c.Burst, c.Timeout = 0, 0, 0
	c.UserAgent = "idplane-nodesim"
	c.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return &transport{next: rt, rec: rec} }
	return c, dialer, nil
}
