// Package authn assembles the request authenticators: x509 client certificates (CN is the user,
// O the groups), service-account tokens, bootstrap tokens, an optional static token file, JWTs
// of external issuers (AuthenticationConfiguration), and anonymous access only when enabled,
// everywhere or on listed paths.
package authn

import (
	"fmt"

	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/authentication/token/tokenfile"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/utils/clock"
)

// Config says which authenticators to build.
type Config struct {
	// ClientCA verifies client certificates.
	ClientCA dynamiccertificates.CAContentProvider
	// PodCertificates authenticates kube-apiserver-client-pod client certificates, or is nil.
	PodCertificates authenticator.Request
	// TokenAuthFile is a static token CSV (token,user,uid,"group1,group2"), or empty.
	TokenAuthFile string
	// ServiceAccounts authenticates service-account tokens, or is nil.
	ServiceAccounts authenticator.Token
	// BootstrapTokens authenticates bootstrap tokens (<id>.<secret>), or is nil.
	BootstrapTokens authenticator.Token
	// JWT authenticates tokens of the external issuers an AuthenticationConfiguration lists, or
	// is nil.
	JWT authenticator.Token
	// APIAudiences are the audiences of tokens that name none (bootstrap and static tokens).
	APIAudiences authenticator.Audiences
	// Anonymous lets requests with no credentials through as system:anonymous.
	Anonymous bool
	// AnonymousPaths, when Anonymous is set, limits anonymous access to these paths.
	AnonymousPaths []string
	// AnonymousGets are paths anonymous requests may GET whatever Anonymous says (cluster-info).
	AnonymousGets []string
}

// New returns the request authenticator. Every authenticated user also gets the group
// system:authenticated.
func New(c Config) (authenticator.Request, error) {
	var auths []authenticator.Request
	if c.ClientCA != nil {
		certs := x509.NewDynamic(c.ClientCA.VerifyOptions, x509.CommonNameUserConversion)
		auths = append(auths, newVerifiedCerts(certs, c.ClientCA, clock.RealClock{}))
	}
	if c.PodCertificates != nil {
		// Not behind the verified-chain cache: each request checks the pod again.
		auths = append(auths, c.PodCertificates)
	}
	var tokens []authenticator.Token
	if c.ServiceAccounts != nil {
		tokens = append(tokens, c.ServiceAccounts)
	}
	if c.BootstrapTokens != nil {
		// Bootstrap tokens name no audience either: they are for joining this API server.
		tokens = append(tokens, authenticator.WrapAudienceAgnosticToken(c.APIAudiences, c.BootstrapTokens))
	}
	if c.TokenAuthFile != "" {
		static, err := tokenfile.NewCSV(c.TokenAuthFile)
		if err != nil {
			return nil, fmt.Errorf("loading token file %s: %w", c.TokenAuthFile, err)
		}
		// Static tokens name no audience: they are good for the API server's own.
		tokens = append(tokens, authenticator.WrapAudienceAgnosticToken(c.APIAudiences, static))
	}
	if c.JWT != nil {
		// After the local kinds, as upstream orders them: a JWT issuer may fetch keys over the
		// network, and only tokens naming its "iss" reach it. Its audiences are the issuer's
		// configured ones, which the library checks; the request's are this server's.
		tokens = append(tokens, authenticator.WrapAudienceAgnosticToken(c.APIAudiences, c.JWT))
	}
	if len(tokens) > 0 {
		// A token one authenticator refuses with a reason stays refused: no other may claim it.
		auths = append(auths, bearertoken.New(tokenunion.NewFailOnError(tokens...)))
	}
	var auth authenticator.Request = group.NewAuthenticatedGroupAdder(union.New(auths...))
	if c.Anonymous {
		// Anonymous applies only when no other authenticator recognised the request; a request
		// with bad credentials stays refused.
		var conditions []apiserver.AnonymousAuthCondition
		for _, p := range c.AnonymousPaths {
			conditions = append(conditions, apiserver.AnonymousAuthCondition{Path: p})
		}
		auth = union.NewFailOnError(auth, anonymous.NewAuthenticator(conditions))
	}
	if len(c.AnonymousGets) > 0 {
		// After every other: credentials, and anonymous access the configuration gives, come first.
		auth = union.NewFailOnError(auth, newAnonymousGets(c.AnonymousGets))
	}
	return auth, nil
}
