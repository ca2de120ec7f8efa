package validation

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxTrustBundleBytes bounds a bundle; a few hundred CA certificates fit.
const maxTrustBundleBytes = 1024 * 1024

// ValidateClusterTrustBundle checks a bundle being created.
func ValidateClusterTrustBundle(b *certificatesv1.ClusterTrustBundle) field.ErrorList {
	allErrs := validateObjectMeta(&b.ObjectMeta, false, trustBundleName(b.Spec.SignerName), field.NewPath("metadata"))
	specPath := field.NewPath("spec")
	if b.Spec.SignerName != "" {
		allErrs = append(allErrs, validateSignerName(b.Spec.SignerName, specPath.Child("signerName"))...)
	}
	return append(allErrs, validateTrustBundle(b.Spec.TrustBundle, specPath.Child("trustBundle"))...)
}

// ValidateClusterTrustBundleUpdate checks an update: the signer a bundle is linked to never changes.
func ValidateClusterTrustBundleUpdate(b, old *certificatesv1.ClusterTrustBundle) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&b.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	if b.Spec.SignerName != old.Spec.SignerName {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec", "signerName"), b.Spec.SignerName, "field is immutable"))
	}
	return append(allErrs, validateTrustBundle(b.Spec.TrustBundle, field.NewPath("spec", "trustBundle"))...)
}

// trustBundleName: a bundle linked to a signer is named after it (its name with ':' for '/',
// then ':' and a suffix), so that the name alone says whose it is; an unlinked one has no ':'.
func trustBundleName(signerName string) apivalidation.ValidateNameFunc {
	return func(name string, prefix bool) []string {
		if signerName == "" {
			if strings.Contains(name, ":") {
				return []string{`a ClusterTrustBundle without signerName must not have ":" in its name`}
			}
			return apivalidation.NameIsDNSSubdomain(name, prefix)
		}
		required := strings.ReplaceAll(signerName, "/", ":") + ":"
		suffix, ok := strings.CutPrefix(name, required)
		if !ok {
			return []string{fmt.Sprintf("a ClusterTrustBundle for signerName %s must be named with prefix %s", signerName, required)}
		}
		return apivalidation.NameIsDNSSubdomain(suffix, prefix)
	}
}

// validateTrustBundle checks the PEM bundle: CA certificates only, each once, no headers.
func validateTrustBundle(bundle string, fldPath *field.Path) field.ErrorList {
	switch {
	case bundle == "":
		return field.ErrorList{field.Required(fldPath, "")}
	case len(bundle) > maxTrustBundleBytes:
		return field.ErrorList{field.TooLong(fldPath, "", maxTrustBundleBytes)}
	}
	var seen [][]byte
	rest := []byte(bundle)
	for i := 0; ; i++ {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			if i == 0 {
				return field.ErrorList{field.Invalid(fldPath, "<bundle>", "must contain at least one CERTIFICATE PEM block")}
			}
			return nil
		}
		switch {
		case block.Type != "CERTIFICATE":
			return field.ErrorList{field.Invalid(fldPath, "<bundle>", fmt.Sprintf("block %d is a %q, only CERTIFICATE blocks are allowed", i, block.Type))}
		case len(block.Headers) > 0:
			return field.ErrorList{field.Invalid(fldPath, "<bundle>", fmt.Sprintf("block %d has PEM headers, which are not allowed", i))}
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return field.ErrorList{field.Invalid(fldPath, "<bundle>", fmt.Sprintf("block %d cannot be parsed: %v", i, err))}
		}
		if !cert.BasicConstraintsValid || !cert.IsCA {
			return field.ErrorList{field.Invalid(fldPath, "<bundle>", fmt.Sprintf("block %d is not a CA certificate", i))}
		}
		for _, s := range seen {
			if bytes.Equal(s, block.Bytes) {
				return field.ErrorList{field.Invalid(fldPath, "<bundle>", fmt.Sprintf("block %d duplicates an earlier one", i))}
			}
		}
		seen = append(seen, block.Bytes)
	}
}
