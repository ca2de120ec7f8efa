// Package signerauthz answers whether a user may act for a signer: a verb on resource "signers"
// in certificates.k8s.io, named by the signer's name or by its domain's wildcard.
package signerauthz

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Check returns nil when the user of request a may take verb on signerName, else a 403 for a
// that names the verb, the signer and the user. An authorizer error is a refusal: the check
// fails closed.
func Check(ctx context.Context, az authorizer.Authorizer, a admission.Attributes, verb, signerName string) error {
	u := a.GetUserInfo()
	if Allowed(ctx, az, u, verb, signerName) {
		return nil
	}
	return admission.NewForbidden(a, fmt.Errorf("user %q not permitted to %s requests with signerName %q", u.GetName(), verb, signerName))
}

// Allowed reports whether u may take verb on signerName, by its name or its domain's wildcard.
// An authorizer error is a refusal.
func Allowed(ctx context.Context, az authorizer.Authorizer, u user.Info, verb, signerName string) bool {
	names := []string{signerName}
	if domain, _, ok := strings.Cut(signerName, "/"); ok {
		names = append(names, domain+"/*")
	}
	for _, name := range names {
		decision, _, err := az.Authorize(ctx, authorizer.AttributesRecord{
			User: u, Verb: verb, APIGroup: "certificates.k8s.io", APIVersion: "*",
			Resource: "signers", Name: name, ResourceRequest: true,
		})
		if err == nil && decision == authorizer.DecisionAllow {
			return true
		}
	}
	return false
}
