package signerauthz

import (
	"context"
	"errors"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// grants allows, per user, "verb/signer-name" pairs; fail makes every decision an error.
type grants struct {
	allowed map[string][]string
	fail    bool
}

func (g grants) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if g.fail {
		return authorizer.DecisionAllow, "", errors.New("authorizer unavailable")
	}
	if a.GetAPIGroup() != "certificates.k8s.io" || a.GetResource() != "signers" {
		return authorizer.DecisionNoOpinion, "", nil
	}
	for _, grant := range g.allowed[a.GetUser().GetName()] {
		if grant == a.GetVerb()+"/"+a.GetName() {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func (g grants) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(g.Authorize(ctx, a))
}

func (grants) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionNoOpinion, "", nil
}

func TestCheck(t *testing.T) {
	az := grants{allowed: map[string][]string{
		"exact":    {"approve/example.com/signer"},
		"wildcard": {"approve/example.com/*"},
		"signer":   {"sign/example.com/signer"},
	}}
	cases := []struct {
		name, user, verb, signer string
		az                       authorizer.Authorizer
		allowed                  bool
	}{
		{"exact name", "exact", "approve", "example.com/signer", az, true},
		{"domain wildcard", "wildcard", "approve", "example.com/other", az, true},
		{"wildcard of another domain", "wildcard", "approve", "example.org/signer", az, false},
		{"another verb", "signer", "approve", "example.com/signer", az, false},
		{"sign", "signer", "sign", "example.com/signer", az, true},
		{"no grants", "nobody", "approve", "example.com/signer", az, false},
		{"authorizer error fails closed", "exact", "approve", "example.com/signer", grants{fail: true}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			attrs := admission.NewAttributesRecord(nil, nil, certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"), "", "csr",
				certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"), "approval", admission.Update, nil, false, &user.DefaultInfo{Name: tc.user})
			err := Check(context.Background(), tc.az, attrs, tc.verb, tc.signer)
			if tc.allowed && err != nil {
				t.Fatalf("Check = %v, want allowed", err)
			}
			if !tc.allowed && !apierrors.IsForbidden(err) {
				t.Fatalf("Check = %v, want 403", err)
			}
		})
	}
}
