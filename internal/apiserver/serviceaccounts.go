package apiserver

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/idplane/idplane/internal/pki"
	saregistry "github.com/idplane/idplane/internal/registry/core/serviceaccount"
	"github.com/idplane/idplane/internal/serviceaccount"
)

// tokenSettings are the service-account token settings resolved at start: keys read, issuer and
// audiences defaulted to the server's own URL.
type tokenSettings struct {
	keys      *serviceaccount.Keys
	issuers   []string
	audiences authenticator.Audiences
	options   ServiceAccountOptions
}

func serviceAccountTokens(o *Options, files pki.Files, serverURL string) (*tokenSettings, error) {
	sa := o.ServiceAccounts
	signingKey := sa.SigningKeyFile
	if signingKey == "" {
		signingKey = files.SAKey()
	}
	keys, err := serviceaccount.LoadKeys(signingKey, sa.KeyFiles)
	if err != nil {
		return nil, err
	}
	issuers := sa.Issuers
	if len(issuers) == 0 {
		issuer, err := recordedIssuer(files, serverURL)
		if err != nil {
			return nil, err
		}
		issuers = []string{issuer}
	}
	audiences := sa.APIAudiences
	if len(audiences) == 0 {
		audiences = issuers
	}
	return &tokenSettings{keys: keys, issuers: issuers, audiences: audiences, options: sa}, nil
}

// issuerFile records, beside the signing key, the issuer the server chose on its first start
// without --service-account-issuer.
const issuerFile = "service-account-issuer"

// recordedIssuer is the default issuer: the one recorded in the data directory, else serverURL,
// which it records. Every token names its issuer, so a default that followed the URL would make
// each restart on another port (--secure-port 0) refuse every token issued before it.
func recordedIssuer(files pki.Files, serverURL string) (string, error) {
	path := filepath.Join(files.Dir, issuerFile)
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		issuer := strings.TrimSpace(string(data))
		if issuer == "" {
			return "", fmt.Errorf("%s is empty: write the service-account issuer in it, or remove it to have this server's URL recorded", path)
		}
		if issuer != serverURL {
			klog.InfoS("Service-account issuer is the one recorded in the data directory, not this server's URL", "issuer", issuer, "url", serverURL, "file", path)
		}
		return issuer, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("reading the service-account issuer: %w", err)
	}
	if err := pki.WriteFile(path, []byte(serverURL+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("recording the service-account issuer: %w", err)
	}
	return serverURL, nil
}

// tokenParts are what the server is assembled with: the authenticator and the TokenRequest settings.
type tokenParts struct {
	authenticator *serviceaccount.Authenticator
	config        saregistry.TokenConfig
}

// build registers the informers the authenticator looks objects up in with factory.
func (t *tokenSettings) build(client kubernetes.Interface, factory informers.SharedInformerFactory) (tokenParts, error) {
	serviceaccount.RegisterMetrics()
	issuer, err := serviceaccount.NewIssuer(t.issuers[0], t.keys, clock.RealClock{})
	if err != nil {
		return tokenParts{}, err
	}
	auth := serviceaccount.NewAuthenticator(serviceaccount.AuthenticatorConfig{
		Issuers: t.issuers, Keys: t.keys, APIAudiences: t.audiences,
		Getter: serviceaccount.NewInformerGetter(client, factory), Clock: clock.RealClock{},
	})
	return tokenParts{
		authenticator: auth,
		config: saregistry.TokenConfig{
			Issuer: issuer, APIAudiences: t.audiences,
			MaxExpiration: t.options.MaxTokenExpiration, ExtendExpiration: t.options.ExtendTokenExpiration,
		},
	}, nil
}

// installDiscovery serves OIDC discovery for the issuer when it is an https URL a relying party
// could fetch; an issuer that is a plain name has nothing to discover.
func (t *tokenSettings) installDiscovery(srv *genericapiserver.GenericAPIServer, externalAddress string) error {
	if u, err := url.Parse(t.issuers[0]); err != nil || u.Scheme != "https" {
		klog.InfoS("Service-account issuer is not an https URL: OIDC discovery is not served", "issuer", t.issuers[0])
		return nil
	}
	jwksURI := t.options.JWKSURI
	if jwksURI == "" {
		jwksURI = (&url.URL{Scheme: "https", Host: externalAddress, Path: serviceaccount.JWKSPath}).String()
	}
	d, err := serviceaccount.NewDiscovery(t.issuers[0], jwksURI, t.keys)
	if err != nil {
		return fmt.Errorf("serving OIDC discovery: %w", err)
	}
	srv.Handler.NonGoRestfulMux.Handle(serviceaccount.OpenIDConfigurationPath, d.ConfigurationHandler())
	srv.Handler.NonGoRestfulMux.Handle(serviceaccount.JWKSPath, d.JWKSHandler())
	return nil
}
