package apiserver

import (
	"fmt"
	"net/url"

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
		issuers = []string{serverURL}
	}
	audiences := sa.APIAudiences
	if len(audiences) == 0 {
		audiences = issuers
	}
	return &tokenSettings{keys: keys, issuers: issuers, audiences: audiences, options: sa}, nil
}

// tokenParts are what the server is assembled with: the authenticator and the TokenRequest settings.
type tokenParts struct {
	authenticator *serviceaccount.Authenticator
	config        saregistry.TokenConfig
}

// verifiedTokenCacheSize bounds the verified-token cache: a few hundred bytes an entry, so a few
// MiB when full. Entries go with their objects, so a deleted pod's token is refused as soon as
// the uncached path would refuse it.
const verifiedTokenCacheSize = 16384

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
		CacheSize: verifiedTokenCacheSize,
	})
	if err := auth.WatchObjects(factory); err != nil {
		return tokenParts{}, fmt.Errorf("watching the objects cached tokens name: %w", err)
	}
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
