package apiserver

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	authenticationcel "k8s.io/apiserver/pkg/authentication/cel"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/utils/clock"

	"github.com/idplane/idplane/internal/authn"
	"github.com/idplane/idplane/internal/authn/bootstraptoken"
	"github.com/idplane/idplane/internal/authn/jwt"
	"github.com/idplane/idplane/internal/clusterinfo"
	"github.com/idplane/idplane/internal/stackreserve"
)

// authentication puts the request authenticator together: client certificates of the serving
// configuration's client CA, the static token file, service-account and bootstrap tokens, the
// JWT issuers and anonymous requests of the AuthenticationConfiguration file (or anonymous
// requests as the flags allow them). It returns the service-account token parts, which the
// TokenRequest API and the controllers use too.
func (a *assembly) authentication(closers *closerStack) (tokenParts, error) {
	tokens, err := a.in.tokens.build(a.loopback.client, a.loopback.informers)
	if err != nil {
		return tokenParts{}, err
	}
	// The cluster CA alone verifies general client certificates; the TLS layer's list of
	// acceptable CAs gains the client-pod CA below.
	clusterCA := a.cfg.SecureServing.ClientCA
	podCerts, err := a.podCertAuthentication()
	if err != nil {
		return tokenParts{}, err
	}
	secrets := bootstrapTokenSecrets(a.loopback.informers).Lister().Secrets(metav1.NamespaceSystem)
	config := authn.Config{
		ClientCA: clusterCA, TokenAuthFile: a.o.TokenAuthFile, Anonymous: a.o.AnonymousAuth,
		ServiceAccounts: tokens.authenticator, APIAudiences: a.in.tokens.audiences,
		BootstrapTokens: bootstraptoken.New(secrets, clock.RealClock{}),
		PodCertificates: podCerts,
	}
	if a.o.AuthenticationConfigFile != "" {
		if err := a.authenticationConfigFile(&config, closers); err != nil {
			return tokenParts{}, err
		}
	}
	if a.o.ClusterInfo.Anonymous {
		// Merged with, not replacing, the anonymous access configured above.
		config.AnonymousGets = []string{clusterinfo.Path}
	}
	a.cfg.Authentication.APIAudiences = a.in.tokens.audiences
	authenticator, err := authn.New(config)
	if err != nil {
		return tokenParts{}, err
	}
	// Authentication is the first thing the goroutine of the library's timeout filter does.
	a.cfg.Authentication.Authenticator = stackreserve.Authenticator(authenticator)
	return tokens, nil
}

// authenticationConfigFile applies the AuthenticationConfiguration file to config: its anonymous
// section, and its JWT issuers, which a post-start hook replaces when the file changes.
func (a *assembly) authenticationConfigFile(config *authn.Config, closers *closerStack) error {
	// One compiler for the start and every reload: each holds a CEL environment.
	compiler := authenticationcel.NewDefaultCompiler()
	// This server's own issuers stay its own: no JWT authenticator may claim their tokens.
	own := a.in.tokens.issuers
	file, err := authn.LoadConfigFile(a.o.AuthenticationConfigFile, compiler, own)
	if err != nil {
		return err
	}
	if file.Anonymous != nil {
		// As upstream: the flag applies to a file without an anonymous section, never beside one.
		if a.o.AnonymousAuth {
			return field.Forbidden(field.NewPath("anonymous"), "--anonymous-auth flag cannot be set when anonymous field is configured in authentication configuration file")
		}
		config.Anonymous, config.AnonymousPaths = file.Anonymous.Enabled, file.Anonymous.Paths
	}
	jwts, err := jwt.New(file.JWT, jwt.Options{Compiler: compiler, DisallowedIssuers: own, APIServerID: a.cfg.APIServerID})
	if err != nil {
		return err
	}
	closers.push(jwts.Stop)
	config.JWT = jwts
	reloader := authn.NewReloader(a.o.AuthenticationConfigFile, file, compiler, own, a.cfg.APIServerID, jwts)
	return a.cfg.AddPostStartHook("authentication-config-reload", func(ctx genericapiserver.PostStartHookContext) error {
		reloader.Start(ctx)
		return nil
	})
}
