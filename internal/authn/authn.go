// Package authn assembles the request authenticators: x509 client certificates (CN is the user,
// O the groups), an optional static token file, and anonymous access only when enabled.
package authn

import (
	"fmt"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/authentication/token/tokenfile"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
)

// Config says which authenticators to build.
type Config struct {
	// ClientCA verifies client certificates.
	ClientCA dynamiccertificates.CAContentProvider
	// TokenAuthFile is a static token CSV (token,user,uid,"group1,group2"), or empty.
	TokenAuthFile string
	// Anonymous lets requests with no credentials through as system:anonymous.
	Anonymous bool
}

// New returns the request authenticator. Every authenticated user also gets the group
// system:authenticated.
func New(c Config) (authenticator.Request, error) {
	var auths []authenticator.Request
	if c.ClientCA != nil {
		auths = append(auths, x509.NewDynamic(c.ClientCA.VerifyOptions, x509.CommonNameUserConversion))
	}
	if c.TokenAuthFile != "" {
		tokens, err := tokenfile.NewCSV(c.TokenAuthFile)
		if err != nil {
			return nil, fmt.Errorf("loading token file %s: %w", c.TokenAuthFile, err)
		}
		auths = append(auths, bearertoken.New(tokens))
	}
	var auth authenticator.Request = group.NewAuthenticatedGroupAdder(union.New(auths...))
	if c.Anonymous {
		// Anonymous applies only when no other authenticator recognised the request; a request
		// with bad credentials stays refused.
		auth = union.NewFailOnError(auth, anonymous.NewAuthenticator(nil))
	}
	return auth, nil
}
