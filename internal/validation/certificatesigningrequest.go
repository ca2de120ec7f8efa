package validation

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/idplane/idplane/internal/certificates"
)

const (
	// maxCSRBytes bounds spec.request: a certificate request is a few kilobytes; anything near
	// this is not one, and parsing it would only cost the server.
	maxCSRBytes = 256 * 1024
	// maxSignerNameLength is a domain (253) and a path (317) around the slash.
	maxSignerNameLength, maxSignerPathLength = 571, 317
	// minCSRExpirationSeconds is the shortest certificate a CSR may ask for.
	minCSRExpirationSeconds = 600
	// legacyUnknownSignerName promises nothing about trust; v1 refuses it on create.
	legacyUnknownSignerName = "kubernetes.io/legacy-unknown"
)

var supportedKeyUsages = sets.New(
	certificatesv1.UsageSigning, certificatesv1.UsageDigitalSignature, certificatesv1.UsageContentCommitment,
	certificatesv1.UsageKeyEncipherment, certificatesv1.UsageKeyAgreement, certificatesv1.UsageDataEncipherment,
	certificatesv1.UsageCertSign, certificatesv1.UsageCRLSign, certificatesv1.UsageEncipherOnly,
	certificatesv1.UsageDecipherOnly, certificatesv1.UsageAny, certificatesv1.UsageServerAuth,
	certificatesv1.UsageClientAuth, certificatesv1.UsageCodeSigning, certificatesv1.UsageEmailProtection,
	certificatesv1.UsageSMIME, certificatesv1.UsageIPsecEndSystem, certificatesv1.UsageIPsecTunnel,
	certificatesv1.UsageIPsecUser, certificatesv1.UsageTimestamping, certificatesv1.UsageOCSPSigning,
	certificatesv1.UsageMicrosoftSGC, certificatesv1.UsageNetscapeSGC,
)

// CSROptions loosen the create rules for requests made through certificates.k8s.io/v1beta1.
type CSROptions struct {
	// AllowLegacyUnknownSigner accepts kubernetes.io/legacy-unknown, which v1beta1 clients get
	// by default when their request fits no kubelet signer.
	AllowLegacyUnknownSigner bool
}

// ValidateCertificateSigningRequest checks a CSR being created through v1.
func ValidateCertificateSigningRequest(csr *certificatesv1.CertificateSigningRequest) field.ErrorList {
	return ValidateCertificateSigningRequestWithOptions(csr, CSROptions{})
}

// ValidateCertificateSigningRequestWithOptions checks a CSR being created.
func ValidateCertificateSigningRequestWithOptions(csr *certificatesv1.CertificateSigningRequest, opts CSROptions) field.ErrorList {
	allErrs := validateObjectMeta(&csr.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	specPath := field.NewPath("spec")
	allErrs = append(allErrs, validateCSRRequest(csr.Spec.Request, specPath.Child("request"))...)
	allErrs = append(allErrs, validateSignerName(csr.Spec.SignerName, specPath.Child("signerName"))...)
	if csr.Spec.SignerName == legacyUnknownSignerName && !opts.AllowLegacyUnknownSigner {
		allErrs = append(allErrs, field.NotSupported(specPath.Child("signerName"), csr.Spec.SignerName,
			[]string{"a signer other than " + legacyUnknownSignerName}))
	}
	if s := csr.Spec.ExpirationSeconds; s != nil && *s < minCSRExpirationSeconds {
		allErrs = append(allErrs, field.Invalid(specPath.Child("expirationSeconds"), *s, fmt.Sprintf("may not specify a duration less than %d seconds", minCSRExpirationSeconds)))
	}
	allErrs = append(allErrs, validateKeyUsages(csr.Spec.Usages, specPath.Child("usages"))...)
	return append(allErrs, validateCSRStatus(csr, nil)...)
}

// ValidateCertificateSigningRequestUpdate checks an update of the CSR itself: its spec never
// changes, and its status only through the subresources.
func ValidateCertificateSigningRequestUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&csr.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, validateCSRSpecUnchanged(csr, old)...)
}

// ValidateCertificateSigningRequestStatusUpdate checks an update through /status: the signer's
// answer (the certificate) and conditions other than Approved and Denied, which only /approval sets.
func ValidateCertificateSigningRequestStatusUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&csr.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateCSRSpecUnchanged(csr, old)...)
	conditionsPath := field.NewPath("status", "conditions")
	for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
		if !sameConditions(conditionsOf(csr, t), conditionsOf(old, t)) {
			allErrs = append(allErrs, field.Forbidden(conditionsPath, fmt.Sprintf("updates may not change the %s condition: use the approval subresource", t)))
		}
	}
	return append(allErrs, validateCSRStatus(csr, old)...)
}

// ValidateCertificateSigningRequestApprovalUpdate checks an update through /approval: Approved and
// Denied, once added, stay; other conditions and the certificate are kept by the strategy.
func ValidateCertificateSigningRequestApprovalUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&csr.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateCSRSpecUnchanged(csr, old)...)
	conditionsPath := field.NewPath("status", "conditions")
	for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
		if len(conditionsOf(old, t)) > 0 && len(conditionsOf(csr, t)) == 0 {
			allErrs = append(allErrs, field.Forbidden(conditionsPath, fmt.Sprintf("updates may not remove a condition of type %q", t)))
		}
	}
	return append(allErrs, validateCSRStatus(csr, old)...)
}

func validateCSRSpecUnchanged(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	if !apiequality.Semantic.DeepEqual(csr.Spec, old.Spec) {
		return field.ErrorList{field.Forbidden(field.NewPath("spec"), "updates may not change the spec")}
	}
	return nil
}

// validateCSRRequest checks that spec.request is one PEM certificate request whose signature
// verifies: a signer must be able to trust that the requester holds the key.
func validateCSRRequest(request []byte, fldPath *field.Path) field.ErrorList {
	switch {
	case len(request) == 0:
		return field.ErrorList{field.Required(fldPath, "")}
	case len(request) > maxCSRBytes:
		return field.ErrorList{field.TooLong(fldPath, "", maxCSRBytes)}
	}
	var bad *certificates.RequestError
	if _, err := certificates.ParseRequest(request); !errors.As(err, &bad) {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, "", requestMessages[bad.Step](bad.Err))}
}

// requestMessages word each step at which a spec.request can fail.
var requestMessages = map[certificates.RequestStep]func(error) string{
	certificates.RequestNotPEM: func(error) string { return "must be a PEM-encoded CERTIFICATE REQUEST" },
	certificates.RequestUnparsable: func(err error) string {
		return fmt.Sprintf("the certificate request cannot be parsed: %v", err)
	},
	certificates.RequestBadSignature: func(err error) string {
		return fmt.Sprintf("the certificate request's signature does not verify: %v", err)
	},
}

// validateSignerName checks a signer name: a fully qualified domain, a slash, and a path.
func validateSignerName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if len(name) > maxSignerNameLength {
		return field.ErrorList{field.TooLong(fldPath, "", maxSignerNameLength)}
	}
	domain, path, ok := strings.Cut(name, "/")
	if !ok || strings.Contains(path, "/") {
		return field.ErrorList{field.Invalid(fldPath, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	var allErrs field.ErrorList
	if err := utilvalidation.IsFullyQualifiedDomainName(fldPath, domain).ToAggregate(); err != nil {
		allErrs = append(allErrs, field.Invalid(fldPath, name, "the domain before the slash: "+err.Error()))
	}
	switch {
	case path == "":
		allErrs = append(allErrs, field.Invalid(fldPath, name, "a path must follow the domain"))
	case len(path) > maxSignerPathLength:
		allErrs = append(allErrs, field.TooLong(fldPath, "", maxSignerNameLength))
	default:
		for _, msg := range utilvalidation.IsDNS1123Subdomain(strings.ToLower(path)) {
			allErrs = append(allErrs, field.Invalid(fldPath, name, "the path after the slash: "+msg))
		}
	}
	return allErrs
}

func validateKeyUsages(usages []certificatesv1.KeyUsage, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(usages) == 0 {
		return field.ErrorList{field.Required(fldPath, "usages must be provided")}
	}
	seen := sets.New[certificatesv1.KeyUsage]()
	for i, u := range usages {
		switch {
		case !supportedKeyUsages.Has(u):
			allErrs = append(allErrs, field.NotSupported(fldPath.Index(i), u, sets.List(supportedKeyUsages)))
		case seen.Has(u):
			allErrs = append(allErrs, field.Duplicate(fldPath.Index(i), u))
		}
		seen.Insert(u)
	}
	return allErrs
}

// validateCSRStatus checks the status as written; old is nil on create. Approved and Denied
// exclude each other and are only ever True; the certificate, once issued, never changes.
func validateCSRStatus(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	var allErrs field.ErrorList
	conditionsPath := field.NewPath("status", "conditions")
	seen := sets.New[certificatesv1.RequestConditionType]()
	for i, c := range csr.Status.Conditions {
		idxPath := conditionsPath.Index(i)
		switch {
		case c.Type == "":
			allErrs = append(allErrs, field.Required(idxPath.Child("type"), ""))
		case seen.Has(c.Type):
			allErrs = append(allErrs, field.Duplicate(idxPath.Child("type"), c.Type))
		}
		seen.Insert(c.Type)
		switch c.Status {
		case "":
			allErrs = append(allErrs, field.Required(idxPath.Child("status"), ""))
		case corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown:
		default:
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("status"), c.Status, []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown}))
		}
		if (c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied) && c.Status != corev1.ConditionTrue {
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("status"), c.Status, []corev1.ConditionStatus{corev1.ConditionTrue}))
		}
	}
	if seen.Has(certificatesv1.CertificateApproved) && seen.Has(certificatesv1.CertificateDenied) {
		allErrs = append(allErrs, field.Invalid(conditionsPath, "", "Approved and Denied conditions are mutually exclusive"))
	}
	certPath := field.NewPath("status", "certificate")
	switch {
	case old != nil && len(old.Status.Certificate) > 0 && !bytes.Equal(csr.Status.Certificate, old.Status.Certificate):
		allErrs = append(allErrs, field.Forbidden(certPath, "updates may not modify existing certificate content"))
	case old == nil && len(csr.Status.Certificate) > 0:
		allErrs = append(allErrs, field.Forbidden(certPath, "may not be set on create"))
	case len(csr.Status.Certificate) > 0 && (old == nil || !bytes.Equal(csr.Status.Certificate, old.Status.Certificate)):
		allErrs = append(allErrs, validateIssuedCertificate(csr.Status.Certificate, certPath)...)
	}
	return allErrs
}

// validateIssuedCertificate checks status.certificate: one or more CERTIFICATE PEM blocks without
// headers, each parseable. Text around the blocks is allowed, as PEM allows it.
func validateIssuedCertificate(data []byte, fldPath *field.Path) field.ErrorList {
	blocks := 0
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		blocks++
		switch {
		case block.Type != "CERTIFICATE":
			return field.ErrorList{field.Invalid(fldPath, "<certificate data>", fmt.Sprintf("only CERTIFICATE PEM blocks are allowed, found %q", block.Type))}
		case len(block.Headers) > 0:
			return field.ErrorList{field.Invalid(fldPath, "<certificate data>", "no PEM block headers are permitted")}
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return field.ErrorList{field.Invalid(fldPath, "<certificate data>", fmt.Sprintf("block %d cannot be parsed: %v", blocks, err))}
		}
	}
	if blocks == 0 {
		return field.ErrorList{field.Invalid(fldPath, "<certificate data>", "must contain at least one CERTIFICATE PEM block")}
	}
	return nil
}

func conditionsOf(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) []certificatesv1.CertificateSigningRequestCondition {
	var out []certificatesv1.CertificateSigningRequestCondition
	for _, c := range csr.Status.Conditions {
		if c.Type == t {
			out = append(out, c)
		}
	}
	return out
}

func sameConditions(a, b []certificatesv1.CertificateSigningRequestCondition) bool {
	return apiequality.Semantic.DeepEqual(a, b)
}
