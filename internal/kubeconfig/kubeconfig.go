// Package kubeconfig writes client configuration files that stock kubectl and client-go read.
package kubeconfig

import (
	"errors"
	"fmt"
	"io/fs"

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
	return write(path, clientcmdapi.NewConfig(), name, c)
}

// Update sets the cluster, user and context named name in the kubeconfig at path, as Write
// does, and keeps every other entry, the preferences and extensions: a user who added their
// own users and contexts to the file (kubectl config set-credentials, use-context) keeps
// them, and the namespace they chose for context name. The current context stays when it
// names a context of the file, else it becomes name.
// A file that is missing or empty is written anew; one that does not parse is an error, never
// overwritten.
func Update(path, name string, c Credentials) error {
	cfg, err := clientcmd.LoadFromFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		cfg = clientcmdapi.NewConfig()
	case err != nil:
		return fmt.Errorf("updating kubeconfig %s (move it away to have it written anew): %w", path, err)
	}
	return write(path, cfg, name, c)
}

func write(path string, cfg *clientcmdapi.Config, name string, c Credentials) error {
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthorityData: c.CAPEM}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: c.CertPEM, ClientKeyData: c.KeyPEM}
	if c.CertKeyFile != "" {
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificate: c.CertKeyFile, ClientKey: c.CertKeyFile}
	}
	ctx := &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	if old := cfg.Contexts[name]; old != nil {
		// The namespace is the user's choice (kubectl config set-context --current --namespace).
		ctx.Namespace = old.Namespace
	}
	cfg.Contexts[name] = ctx
	if _, ok := cfg.Contexts[cfg.CurrentContext]; !ok {
		cfg.CurrentContext = name
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("encoding kubeconfig %s: %w", path, err)
	}
	return pki.WriteFile(path, data, 0o600)
}
