package apiserver

import (
	"net"
	"path/filepath"
	"strconv"
	"time"

	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/idplane/idplane/internal/kubeconfig"
	"github.com/idplane/idplane/internal/pki"
)

// serverURL is the address clients reach the server on ln at: the bind address, or loopback
// when the server binds every address.
func serverURL(o *Options, ln net.Listener) string {
	port := ln.Addr().(*net.TCPAddr).Port
	host := o.BindAddress.String()
	if o.BindAddress.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "https://" + net.JoinHostPort(host, strconv.Itoa(port))
}

// credentialFiles are what the server finds in its data directory, or writes there on its first
// start, before it opens anything.
type credentialFiles struct {
	servingCert, servingKey []byte
	// encryptionConfig is the EncryptionConfiguration file.
	encryptionConfig string
	tokens           *tokenSettings
	adminKubeconfig  string
}

// ensureCredentials reads or writes, in the data directory, the serving certificate for the
// names the server answers to, the service-account signing key, the encryption configuration
// and the admin kubeconfig naming url.
func ensureCredentials(o *Options, files pki.Files, ca *pki.CA, url string, now time.Time) (credentialFiles, error) {
	var c credentialFiles
	names := pki.ServingNames{
		DNS: []string{"localhost", genericapiserver.LoopbackClientServerNameOverride},
		IPs: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
	}
	if !o.BindAddress.IsUnspecified() {
		names.IPs = append(names.IPs, o.BindAddress)
	}
	if err := addKubernetesServiceNames(o, &names); err != nil {
		return c, err
	}
	var err error
	if c.servingCert, c.servingKey, err = pki.EnsureServingCert(files, ca, names, now); err != nil {
		return c, err
	}
	// An external signer holds the keys: no local key is made that nothing would use.
	if o.ServiceAccounts.SigningEndpoint == "" {
		if _, err := pki.EnsureServiceAccountKey(files); err != nil {
			return c, err
		}
	}
	if c.encryptionConfig, err = o.Encryption.configFile(files); err != nil {
		return c, err
	}
	if c.tokens, err = serviceAccountTokens(o, files, url); err != nil {
		return c, err
	}
	adminCert, adminKey, err := pki.EnsureAdminCert(files, ca, now)
	if err != nil {
		return c, err
	}
	c.adminKubeconfig = filepath.Join(o.DataDir, "admin.kubeconfig")
	// Updated, not rewritten: users add their own users and contexts to this file.
	err = kubeconfig.Update(c.adminKubeconfig, "idplane", kubeconfig.Credentials{
		Server: url, CAPEM: ca.CertPEM, CertPEM: adminCert, KeyPEM: adminKey,
	})
	return c, err
}
