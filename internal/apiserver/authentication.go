package apiserver

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/idplane/idplane/internal/authn"
	"github.com/idplane/idplane/internal/authn/bootstraptoken"
)

// authentication puts the request authenticator together: client certificates of the serving
// configuration's client CA, the static token file, service-account and bootstrap tokens, and
// anonymous requests as the flags or the AuthenticationConfiguration file allow them. It returns
// the service-account token parts, which the TokenRequest API and the controllers use too.
func (a *assembly) authentication() (tokenParts, error) {
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
	secrets := a.loopback.informers.Core().V1().Secrets().Lister().Secrets(metav1.NamespaceSystem)
	config := authn.Config{
		ClientCA: clusterCA, TokenAuthFile: a.o.TokenAuthFile, Anonymous: a.o.AnonymousAuth,
		ServiceAccounts: tokens.authenticator, APIAudiences: a.in.tokens.audiences,
		BootstrapTokens: bootstraptoken.New(secrets, clock.RealClock{}),
		PodCertificates: podCerts,
	}
	if a.o.AuthenticationConfigFile != "" {
		anonymous, err := authn.LoadConfigFile(a.o.AuthenticationConfigFile)
		if err != nil {
			return tokenParts{}, err
		}
		if anonymous != nil {
			config.Anonymous, config.AnonymousPaths = anonymous.Enabled, anonymous.Paths
		}
	}
	a.cfg.Authentication.APIAudiences = a.in.tokens.audiences
	a.cfg.Authentication.Authenticator, err = authn.New(config)
	if err != nil {
		return tokenParts{}, err
	}
	return tokens, nil
}
