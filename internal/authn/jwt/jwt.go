// Package jwt authenticates the tokens of the issuers listed in an AuthenticationConfiguration's
// jwt section. The protocol (discovery, key sets, signature and claim checks, CEL claim mappings
// and validation rules, metrics) is k8s.io/apiserver's OIDC authenticator; this package owns the
// set's lifecycle: built at start, replaced whole when the configuration changes, and each
// replaced set's background key fetching stopped.
package jwt

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	authenticationcel "k8s.io/apiserver/pkg/authentication/cel"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/apiserver/plugin/pkg/authenticator/token/oidc"
)

// healthPoll is how often Update looks whether a new set's issuers have been discovered.
const healthPoll = 100 * time.Millisecond

// Options are what every issuer of a set is built with.
type Options struct {
	// Compiler compiles the CEL expressions; one is shared because each holds a CEL environment,
	// which is expensive to build.
	Compiler authenticationcel.Compiler
	// DisallowedIssuers are this server's own service-account issuers, which no JWT
	// authenticator may claim.
	DisallowedIssuers []string
	// APIServerID labels the JWKS fetch metrics (hashed).
	APIServerID string
}

// Authenticator authenticates tokens with the current set of issuers. A token whose "iss" names
// none of them is not its to judge (false, no error); one that names an issuer and fails that
// issuer's checks is refused with the reason.
type Authenticator struct {
	opts    Options
	current atomic.Pointer[issuerSet]
	// mu serialises Update and Stop, which replace the set.
	mu      sync.Mutex
	stopped bool
}

// issuerSet is one configuration's issuers, sharing a context whose end stops their discovery
// and key refreshes.
type issuerSet struct {
	urls    []string
	members []oidc.AuthenticatorTokenWithHealthCheck
	token   authenticator.Token
	cancel  context.CancelFunc
}

// New builds the set for issuers. Issuers are discovered in the background, as upstream does,
// so that an issuer hosted on the cluster itself can come up after the server: until an issuer
// is discovered its tokens are refused ("not initialized").
func New(issuers []apiserver.JWTAuthenticator, o Options) (*Authenticator, error) {
	set, err := o.build(issuers)
	if err != nil {
		return nil, err
	}
	a := &Authenticator{opts: o}
	a.current.Store(set)
	return a, nil
}

// AuthenticateToken implements authenticator.Token.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	return a.current.Load().token.AuthenticateToken(ctx, token)
}

// Issuers are the URLs of the current set's issuers.
func (a *Authenticator) Issuers() []string {
	return a.current.Load().urls
}

// Update builds a set for issuers and, once every issuer in it has been discovered, serves with
// it instead of the current one, whose fetching then stops. When ctx ends first, the new set is
// dropped and the current one keeps serving; the error says which issuer was not ready and why.
func (a *Authenticator) Update(ctx context.Context, issuers []apiserver.JWTAuthenticator) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return errors.New("the JWT authenticator has stopped")
	}
	set, err := a.opts.build(issuers)
	if err != nil {
		return err
	}
	var lastErr error
	err = wait.PollUntilContextCancel(ctx, healthPoll, true, func(context.Context) (bool, error) {
		lastErr = set.healthCheck()
		return lastErr == nil, nil
	})
	if err != nil {
		set.cancel()
		return fmt.Errorf("new JWT issuers not ready: %w", errors.Join(err, lastErr))
	}
	old := a.current.Swap(set)
	old.cancel()
	// A removed issuer's last key-set fetch would otherwise stay on /metrics as if current.
	for _, url := range old.urls {
		if !slices.Contains(set.urls, url) {
			oidc.DeleteJWKSFetchMetrics(url, a.opts.APIServerID)
		}
	}
	return nil
}

// Stop ends the current set's background discovery and key refreshes; the authenticator must
// not be used afterwards.
func (a *Authenticator) Stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stopped = true
	a.current.Load().cancel()
}

func (o Options) build(issuers []apiserver.JWTAuthenticator) (*issuerSet, error) {
	ctx, cancel := context.WithCancel(context.Background())
	set := &issuerSet{cancel: cancel}
	var tokens []authenticator.Token
	for i, issuer := range issuers {
		var ca oidc.CAContentProvider
		if issuer.Issuer.CertificateAuthority != "" {
			ca = staticCA(issuer.Issuer.CertificateAuthority)
		}
		a, err := oidc.New(ctx, oidc.Options{
			JWTAuthenticator:     issuer,
			CAContentProvider:    ca,
			Compiler:             o.Compiler,
			SupportedSigningAlgs: oidc.AllValidSigningAlgorithms(),
			DisallowedIssuers:    o.DisallowedIssuers,
			APIServerID:          o.APIServerID,
		})
		if err != nil {
			cancel()
			return nil, fmt.Errorf("jwt[%d] (issuer %s): %w", i, issuer.Issuer.URL, err)
		}
		set.urls = append(set.urls, issuer.Issuer.URL)
		set.members = append(set.members, a)
		tokens = append(tokens, a)
	}
	// Issuer URLs are unique (validation), so at most one member claims a token; its refusal
	// stands, as upstream's union of JWT authenticators has it.
	set.token = tokenunion.NewFailOnError(tokens...)
	return set, nil
}

func (s *issuerSet) healthCheck() error {
	var errs []error
	for _, m := range s.members {
		if err := m.HealthCheck(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// staticCA is the certificateAuthority of an issuer, PEM inline in the configuration: it changes
// only with the file, which builds a new set.
type staticCA string

func (c staticCA) CurrentCABundleContent() []byte { return []byte(c) }
