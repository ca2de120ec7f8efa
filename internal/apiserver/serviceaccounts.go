package apiserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/idplane/idplane/internal/pki"
	saregistry "github.com/idplane/idplane/internal/registry/core/serviceaccount"
	"github.com/idplane/idplane/internal/serviceaccount"
	"github.com/idplane/idplane/internal/serviceaccount/externalsigner"
)

// tokenSettings are the service-account token settings resolved at start: keys read (or an
// external signer connected to), issuer and audiences defaulted to the server's own URL.
type tokenSettings struct {
	// keys are the local key files'; nil with an external signer, which external then is, once
	// connectSigner ran.
	keys      *serviceaccount.Keys
	external  *externalsigner.Client
	issuers   []string
	audiences authenticator.Audiences
	options   ServiceAccountOptions
	// extendedLifetime, when positive, is how long the admission plugin's extended pod tokens
	// live instead of a year.
	extendedLifetime time.Duration
}

func serviceAccountTokens(o *Options, files pki.Files, serverURL string) (*tokenSettings, error) {
	sa := o.ServiceAccounts
	var keys *serviceaccount.Keys
	if sa.SigningEndpoint == "" {
		signingKey := sa.SigningKeyFile
		if signingKey == "" {
			signingKey = files.SAKey()
		}
		var err error
		if keys, err = serviceaccount.LoadKeys(signingKey, sa.KeyFiles); err != nil {
			return nil, err
		}
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

// verifiedTokenCacheSize bounds the verified-token cache: a few hundred bytes an entry, so a few
// MiB when full. Entries go with their objects, so a deleted pod's token is refused as soon as
// the uncached path would refuse it.
const verifiedTokenCacheSize = 16384

// signer and publicKeys are the external signer's, else the key files'.
func (t *tokenSettings) signer() (serviceaccount.Signer, error) {
	if t.external != nil {
		return t.external, nil
	}
	return t.keys.Signer()
}

func (t *tokenSettings) publicKeys() serviceaccount.PublicKeys {
	if t.external != nil {
		return t.external
	}
	return t.keys
}

// build registers the informers the authenticator looks objects up in with factory.
func (t *tokenSettings) build(client kubernetes.Interface, factory informers.SharedInformerFactory) (tokenParts, error) {
	serviceaccount.RegisterMetrics()
	signer, err := t.signer()
	if err != nil {
		return tokenParts{}, err
	}
	issuer := serviceaccount.NewIssuer(t.issuers[0], signer, clock.RealClock{})
	auth := serviceaccount.NewAuthenticator(serviceaccount.AuthenticatorConfig{
		Issuers: t.issuers, Keys: t.publicKeys(), APIAudiences: t.audiences,
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
			ExtendedLifetime: t.extendedLifetime,
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
	d, err := serviceaccount.NewDiscovery(t.issuers[0], jwksURI, t.publicKeys())
	if err != nil {
		return fmt.Errorf("serving OIDC discovery: %w", err)
	}
	srv.Handler.NonGoRestfulMux.Handle(serviceaccount.OpenIDConfigurationPath, d.ConfigurationHandler())
	srv.Handler.NonGoRestfulMux.Handle(serviceaccount.JWKSPath, d.JWKSHandler())
	return nil
}

const signingEndpointHelp = "Path of the unix socket of an external service-account token signer (the ExternalJWTSigner gRPC service of " +
	"k8s.io/externaljwt): it signs every token and publishes the keys they are verified with and that OIDC discovery serves; " +
	"the server refuses to start when it does not answer. Excludes --service-account-signing-key-file and --service-account-key-file. " +
	"--service-account-max-token-expiration defaults to, and may not exceed, the longest lifetime the signer announces."

func (sa ServiceAccountOptions) validateSigningEndpoint() []error {
	if sa.SigningEndpoint == "" {
		return nil
	}
	var errs []error
	if sa.SigningKeyFile != "" {
		errs = append(errs, errors.New("--service-account-signing-endpoint and --service-account-signing-key-file are mutually exclusive: the external signer holds the signing key"))
	}
	if len(sa.KeyFiles) > 0 {
		errs = append(errs, errors.New("--service-account-signing-endpoint and --service-account-key-file are mutually exclusive: the external signer publishes the verification keys"))
	}
	return errs
}

// connectSigner connects to the external signer, if one is configured, for as long as the
// server runs, and fits the token lifetimes to the longest it signs, as kube-apiserver does:
// the maximum defaults to it and may not exceed it, and extended pod tokens live at most that.
func (t *tokenSettings) connectSigner(closers *closerStack) error {
	if t.options.SigningEndpoint == "" {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	client, err := externalsigner.Start(ctx, externalsigner.Config{Socket: strings.TrimPrefix(t.options.SigningEndpoint, "unix://")})
	if err != nil {
		cancel()
		return fmt.Errorf("--service-account-signing-endpoint: %w", err)
	}
	closers.push(cancel)
	longest := client.MaxTokenExpiration()
	switch {
	case t.options.MaxTokenExpiration == 0:
		t.options.MaxTokenExpiration = longest
	case t.options.MaxTokenExpiration > longest:
		return fmt.Errorf("--service-account-max-token-expiration cannot be set longer than the token expiration supported by --service-account-signing-endpoint: %v > %v",
			t.options.MaxTokenExpiration, longest)
	}
	t.extendedLifetime = min(serviceaccount.ExtendedTokenLifetime, longest)
	t.external = client
	return nil
}
