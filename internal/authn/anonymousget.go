package authn

import (
	"net/http"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
)

// anonymousGets authenticates as system:anonymous the requests without credentials that GET one
// of a few exact paths, and no other: a published object (cluster-info) is readable by anyone
// while every other method and path, a list or watch included, stays unauthenticated.
type anonymousGets struct {
	paths map[string]bool
	anon  authenticator.Request
}

func newAnonymousGets(paths []string) *anonymousGets {
	a := &anonymousGets{paths: map[string]bool{}, anon: anonymous.NewAuthenticator(nil)}
	for _, p := range paths {
		a.paths[p] = true
	}
	return a
}

func (a *anonymousGets) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	if req.Method != http.MethodGet || !a.paths[req.URL.Path] {
		return nil, false, nil
	}
	return a.anon.AuthenticateRequest(req)
}
