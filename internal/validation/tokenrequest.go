package validation

import (
	"math"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Bounds of a requested token lifetime: shorter tokens would expire before a client could use
// them, and the claim must fit the 32-bit times older verifiers keep.
const (
	MinTokenExpirationSeconds = 10 * 60
	MaxTokenExpirationSeconds = math.MaxUint32
)

// tokenBindableKinds are the objects a token may be bound to, all in core/v1.
var tokenBindableKinds = []string{"Pod", "Secret", "Node"}

// ValidateTokenRequest validates a TokenRequest after its defaults are applied.
func ValidateTokenRequest(tr *authenticationv1.TokenRequest) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if tr.Spec.ExpirationSeconds != nil {
		exp := *tr.Spec.ExpirationSeconds
		p := spec.Child("expirationSeconds")
		if exp < MinTokenExpirationSeconds {
			errs = append(errs, field.Invalid(p, exp, "may not specify a duration less than 10 minutes"))
		}
		if exp > MaxTokenExpirationSeconds {
			errs = append(errs, field.Invalid(p, exp, "may not specify a duration larger than 2^32 seconds"))
		}
	}
	for i, a := range tr.Spec.Audiences {
		if a == "" {
			errs = append(errs, field.Required(spec.Child("audiences").Index(i), "an audience may not be empty"))
		}
	}
	if ref := tr.Spec.BoundObjectRef; ref != nil {
		p := spec.Child("boundObjectRef")
		if ref.APIVersion != "v1" {
			errs = append(errs, field.NotSupported(p.Child("apiVersion"), ref.APIVersion, []string{"v1"}))
		}
		if !slices.Contains(tokenBindableKinds, ref.Kind) {
			errs = append(errs, field.NotSupported(p.Child("kind"), ref.Kind, tokenBindableKinds))
		}
		if ref.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
	}
	return errs
}
