// Package kubeconfig writes client configuration files that stock kubectl and client-go read.
package kubeconfig

import (
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/idplane/idplane/internal/pki"
)

// Credentials are what a kubeconfig embeds: the server's CA and a client certificate.
type Credentials struct {
	Server  string
	CAPEM   []byte
	CertPEM []byte
	KeyPEM  []byte
}

// Write writes a kubeconfig with one cluster, user and context named name, readable only by its owner
// because it embeds a private key.
func Write(path, name string, c Credentials) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthorityData: c.CAPEM}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: c.CertPEM, ClientKeyData: c.KeyPEM}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("encoding kubeconfig %s: %w", path, err)
	}
	return pki.WriteFile(path, data, 0o600)
}
