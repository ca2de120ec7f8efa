// Package kubeconfig writes client configuration files that stock kubectl and client-go read.
package kubeconfig

import (
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/idplane/idplane/internal/pki"
)

// Credentials are what a kubeconfig holds: the server's CA and a client certificate, embedded or
// named by the path of a file holding certificate and key.
type Credentials struct {
	Server  string
	CAPEM   []byte
	CertPEM []byte
	KeyPEM  []byte
	// CertKeyFile, when set, names a PEM file with the certificate and key instead of CertPEM and
	// KeyPEM: the kubeconfig then follows a certificate that rotation replaces in that file.
	CertKeyFile string
}

// Write writes a kubeconfig with one cluster, user and context named name, readable only by its owner
// because it holds or names a private key.
func Write(path, name string, c Credentials) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthorityData: c.CAPEM}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: c.CertPEM, ClientKeyData: c.KeyPEM}
	if c.CertKeyFile != "" {
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificate: c.CertKeyFile, ClientKey: c.CertKeyFile}
	}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("encoding kubeconfig %s: %w", path, err)
	}
	return pki.WriteFile(path, data, 0o600)
}
