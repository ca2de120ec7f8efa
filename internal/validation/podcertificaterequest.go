package validation

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/mail"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The bounds of a PodCertificateRequest, as upstream 1.37 sets them.
const (
	// pcrMinMaxExpirationSeconds is the shortest lifetime a request may allow and a signer issue.
	pcrMinMaxExpirationSeconds = 3600
	// pcrMaxMaxExpirationSeconds (91 days) bounds every signer but Kubernetes' own.
	pcrMaxMaxExpirationSeconds = 7862400
	// pcrKubernetesMaxExpirationSeconds bounds kubernetes.io signers: they never issue beyond a day.
	pcrKubernetesMaxExpirationSeconds = 86400
	// maxStubPKCS10RequestBytes bounds the stub request: an RSA 4096 request is under 2 KiB.
	maxStubPKCS10RequestBytes = 10 * 1024
	// maxCertificateChainBytes bounds status.certificateChain.
	maxCertificateChainBytes = 100 * 1024
	// maxPCRUIDLength bounds each UID the spec names.
	maxPCRUIDLength = 128
	// pcrNotBeforeSkew is how far status.notBefore may be from the server's clock.
	pcrNotBeforeSkew = 5 * time.Minute
	// pcrRefreshMargin is how far inside the validity beginRefreshAt must be.
	pcrRefreshMargin = 10 * time.Minute
	// pcrMinLifetime is the shortest certificate a signer may issue.
	pcrMinLifetime = time.Hour
)

// PodCertificateV1beta1KeyFieldsAnnotation marks a request that came through v1beta1 with
// pkixPublicKey or proofOfPossession, which the stored v1 form cannot hold: the conversion sets
// it, and validation refuses any request that carries it, so it is never stored.
const PodCertificateV1beta1KeyFieldsAnnotation = "certificates.idplane.io/v1beta1-pkix-public-key"

var (
	stubRequestPath  = field.NewPath("spec", "stubPKCS10Request")
	certChainPath    = field.NewPath("status", "certificateChain")
	notBeforePath    = field.NewPath("status", "notBefore")
	notAfterPath     = field.NewPath("status", "notAfter")
	beginRefreshPath = field.NewPath("status", "beginRefreshAt")
)

// pcrKeyType is one kind of subject key a stub request may carry; check returns why a key of the
// kind is refused, or "".
type pcrKeyType struct {
	matches func(any) bool
	check   func(any) (value, detail string)
}

// pcrKeyTypes are the keys upstream 1.37 accepts: RSA 3072/4096, ECDSA P-256/384/521, Ed25519.
var pcrKeyTypes = []pcrKeyType{
	{
		matches: func(k any) bool { _, ok := k.(ed25519.PublicKey); return ok },
		check:   func(any) (string, string) { return "", "" },
	},
	{
		matches: func(k any) bool { _, ok := k.(*ecdsa.PublicKey); return ok },
		check: func(k any) (string, string) {
			switch c := k.(*ecdsa.PublicKey).Curve; c {
			case elliptic.P256(), elliptic.P384(), elliptic.P521():
				return "", ""
			default:
				return "curve " + c.Params().Name, "elliptic public keys must use curve P256, P384 or P521"
			}
		},
	},
	{
		matches: func(k any) bool { _, ok := k.(*rsa.PublicKey); return ok },
		check: func(k any) (string, string) {
			if bits := k.(*rsa.PublicKey).Size() * 8; bits != 3072 && bits != 4096 {
				return fmt.Sprintf("%d-bit modulus", bits), "RSA keys must have modulus size 3072 or 4096"
			}
			return "", ""
		},
	},
}

// ValidatePodCertificateRequest checks a request being created (defaulted, in its v1 form).
func ValidatePodCertificateRequest(req *certificatesv1.PodCertificateRequest) field.ErrorList {
	allErrs := validateObjectMeta(&req.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	allErrs = append(allErrs, refuseV1beta1KeyFields(&req.ObjectMeta)...)
	specPath := field.NewPath("spec")
	spec := &req.Spec
	allErrs = append(allErrs, validateSignerName(spec.SignerName, specPath.Child("signerName"))...)
	if spec.UnverifiedUserAnnotations != nil {
		allErrs = append(allErrs, validateUserAnnotations(spec.UnverifiedUserAnnotations, specPath.Child("unverifiedUserAnnotations"))...)
	}
	allErrs = append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, spec.PodName, specPath.Child("podName"))...)
	allErrs = append(allErrs, validatePCRUID(string(spec.PodUID), specPath.Child("podUID"))...)
	allErrs = append(allErrs, nameErrors(apivalidation.ValidateServiceAccountName, spec.ServiceAccountName, specPath.Child("serviceAccountName"))...)
	allErrs = append(allErrs, validatePCRUID(string(spec.ServiceAccountUID), specPath.Child("serviceAccountUID"))...)
	allErrs = append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, string(spec.NodeName), specPath.Child("nodeName"))...)
	allErrs = append(allErrs, validatePCRUID(string(spec.NodeUID), specPath.Child("nodeUID"))...)
	allErrs = append(allErrs, validateMaxExpiration(spec.SignerName, spec.MaxExpirationSeconds, specPath.Child("maxExpirationSeconds"))...)
	return append(allErrs, validateStubRequest(spec.StubPKCS10Request)...)
}

// ValidatePodCertificateRequestUpdate checks an update of the request itself: only metadata may
// change; the spec is immutable and the status changes only through /status.
func ValidatePodCertificateRequestUpdate(req, old *certificatesv1.PodCertificateRequest) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&req.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, refuseV1beta1KeyFields(&req.ObjectMeta)...)
	return append(allErrs, apivalidation.ValidateImmutableField(req.Spec, old.Spec, field.NewPath("spec"))...)
}

// ValidatePodCertificateRequestStatusUpdate checks a signer's answer through /status, judged at
// now: at most one of Issued, Denied and Failed, each True; once one is set the status never
// changes again; an issued certificate is for the requested key and agrees with the times beside it.
func ValidatePodCertificateRequestStatusUpdate(req, old *certificatesv1.PodCertificateRequest, now time.Time) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&req.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, refuseV1beta1KeyFields(&req.ObjectMeta)...)
	if len(allErrs) > 0 {
		return allErrs
	}
	allErrs = append(allErrs, validatePCRConditions(req.Status.Conditions)...)
	// The conditions decide which rules the other fields follow: nothing more is judged until
	// they are sound.
	if len(allErrs) > 0 {
		return allErrs
	}
	statusPath := field.NewPath("status")
	switch {
	case pcrTerminal(old):
		return pcrStatusUnchanged(req.Status, old.Status, statusPath, "immutable after PodCertificateRequest is issued, denied, or failed")
	case pcrHas(req, certificatesv1.PodCertificateRequestConditionTypeDenied), pcrHas(req, certificatesv1.PodCertificateRequestConditionTypeFailed):
		return pcrStatusUnchanged(req.Status, certificatesv1.PodCertificateRequestStatus{Conditions: req.Status.Conditions}, statusPath,
			"non-condition status fields must be empty when denying or failing the PodCertificateRequest")
	case pcrHas(req, certificatesv1.PodCertificateRequestConditionTypeIssued):
		return validateIssuance(req, old, now)
	default:
		return pcrStatusUnchanged(req.Status, old.Status, statusPath, `status is immutable unless transitioning to "Issued", "Denied", or "Failed"`)
	}
}

// refuseV1beta1KeyFields refuses a request that v1beta1 conversion marked as using its deprecated
// key fields.
func refuseV1beta1KeyFields(meta *metav1.ObjectMeta) field.ErrorList {
	if _, ok := meta.Annotations[PodCertificateV1beta1KeyFieldsAnnotation]; !ok {
		return nil
	}
	return field.ErrorList{field.Required(stubRequestPath,
		"pkixPublicKey and proofOfPossession are not supported: send the public key in stubPKCS10Request, a PKCS#10 request signed with the key")}
}

func validatePCRUID(uid string, fldPath *field.Path) field.ErrorList {
	switch {
	case uid == "":
		return field.ErrorList{field.Invalid(fldPath, uid, "must not be empty")}
	case len(uid) > maxPCRUIDLength:
		return field.ErrorList{field.TooLong(fldPath, uid, maxPCRUIDLength)}
	}
	return nil
}

// isKubernetesSigner is a signer whose domain is kubernetes.io or under it.
func isKubernetesSigner(signerName string) bool {
	domain, _, _ := strings.Cut(signerName, "/")
	return domain == "kubernetes.io" || strings.HasSuffix(domain, ".kubernetes.io")
}

func validateMaxExpiration(signerName string, seconds *int32, fldPath *field.Path) field.ErrorList {
	if seconds == nil {
		return field.ErrorList{field.Required(fldPath, "must be set")}
	}
	upper := int32(pcrMaxMaxExpirationSeconds)
	if isKubernetesSigner(signerName) {
		upper = pcrKubernetesMaxExpirationSeconds
	}
	if *seconds < pcrMinMaxExpirationSeconds || *seconds > upper {
		return field.ErrorList{field.Invalid(fldPath, *seconds, fmt.Sprintf("must be in the range [%d, %d]", pcrMinMaxExpirationSeconds, upper))}
	}
	return nil
}

// validateUserAnnotations: keys as metadata annotation keys, each with a domain prefix; the
// whole map within the annotations' size limit.
func validateUserAnnotations(annotations map[string]string, fldPath *field.Path) field.ErrorList {
	allErrs := apivalidation.ValidateAnnotations(annotations, fldPath)
	for k := range annotations {
		if prefix, _, ok := strings.Cut(k, "/"); !ok || prefix == "" {
			allErrs = append(allErrs, field.Invalid(fldPath, k, `must be a domain-prefixed key (such as "acme.io/foo")`))
		}
	}
	return allErrs
}

// validateStubRequest: a DER PKCS#10 request whose signature verifies, over a supported key.
func validateStubRequest(der []byte) field.ErrorList {
	switch {
	case len(der) == 0:
		return field.ErrorList{field.Required(stubRequestPath, "")}
	case len(der) > maxStubPKCS10RequestBytes:
		return field.ErrorList{field.TooLong(stubRequestPath, "", maxStubPKCS10RequestBytes)}
	}
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return field.ErrorList{field.Invalid(stubRequestPath, field.OmitValueType{}, "must be a valid DER-encoded PKCS#10 certificate request")}
	}
	if value, detail := checkPCRKey(csr.PublicKey); detail != "" {
		return field.ErrorList{field.Invalid(stubRequestPath, value, detail)}
	}
	if err := csr.CheckSignature(); err != nil {
		return field.ErrorList{field.Invalid(stubRequestPath, field.OmitValueType{}, "could not verify the certificate request's signature")}
	}
	return nil
}

// checkPCRKey returns why key is not one a request may carry, or "".
func checkPCRKey(key any) (value, detail string) {
	for _, t := range pcrKeyTypes {
		if t.matches(key) {
			return t.check(key)
		}
	}
	return fmt.Sprintf("%T", key), "unknown public key type; supported types are Ed25519, ECDSA, and RSA"
}

var pcrTerminalTypes = []string{
	certificatesv1.PodCertificateRequestConditionTypeIssued,
	certificatesv1.PodCertificateRequestConditionTypeDenied,
	certificatesv1.PodCertificateRequestConditionTypeFailed,
}

func validatePCRConditions(conditions []metav1.Condition) field.ErrorList {
	var allErrs field.ErrorList
	condPath := field.NewPath("status", "conditions")
	terminal := 0
	for i, c := range conditions {
		switch c.Type {
		case certificatesv1.PodCertificateRequestConditionTypeIssued, certificatesv1.PodCertificateRequestConditionTypeDenied, certificatesv1.PodCertificateRequestConditionTypeFailed:
			if terminal++; terminal > 1 {
				allErrs = append(allErrs, field.Invalid(condPath.Index(i).Child("type"), c.Type, `There may be at most one condition with type "Issued", "Denied", or "Failed"`))
			}
			if c.Status != metav1.ConditionTrue {
				allErrs = append(allErrs, field.NotSupported(condPath.Index(i).Child("status"), c.Status, []metav1.ConditionStatus{metav1.ConditionTrue}))
			}
		default:
			allErrs = append(allErrs, field.NotSupported(condPath.Index(i).Child("type"), c.Type, pcrTerminalTypes))
		}
	}
	return append(allErrs, metav1validation.ValidateConditions(conditions, condPath)...)
}

func pcrHas(req *certificatesv1.PodCertificateRequest, conditionType string) bool {
	for _, c := range req.Status.Conditions {
		if c.Type == conditionType && c.Status == metav1.ConditionTrue {
			return true
		}
	}
	return false
}

func pcrTerminal(req *certificatesv1.PodCertificateRequest) bool {
	for _, t := range pcrTerminalTypes {
		if pcrHas(req, t) {
			return true
		}
	}
	return false
}

func pcrStatusUnchanged(got, want any, fldPath *field.Path, detail string) field.ErrorList {
	if apiequality.Semantic.DeepEqual(got, want) {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, field.OmitValueType{}, detail)}
}

// validateIssuance checks an Issued status: a chain of certificates whose leaf is for the
// requested key, with notBefore, notAfter and beginRefreshAt set beside it and agreeing with it.
func validateIssuance(req, old *certificatesv1.PodCertificateRequest, now time.Time) field.ErrorList {
	st := &req.Status
	if len(st.CertificateChain) > maxCertificateChainBytes {
		return field.ErrorList{field.TooLong(certChainPath, "", maxCertificateChainBytes)}
	}
	certs, errs := parseChain(st.CertificateChain)
	if len(errs) > 0 {
		return errs
	}
	leaf := certs[0]
	if errs := leafNames(leaf); len(errs) > 0 {
		return errs
	}
	if errs := issuedToRequestedKey(leaf, old.Spec.StubPKCS10Request); len(errs) > 0 {
		return errs
	}
	var allErrs field.ErrorList
	if st.NotBefore == nil {
		allErrs = append(allErrs, field.Required(notBeforePath, "must be present and consistent with the issued certificate"))
	}
	if st.NotAfter == nil {
		allErrs = append(allErrs, field.Required(notAfterPath, "must be present and consistent with the issued certificate"))
	}
	if st.BeginRefreshAt == nil {
		allErrs = append(allErrs, field.Required(beginRefreshPath, "must be present and in the range [notbefore+10min, notafter-10min]"))
	}
	if len(allErrs) > 0 {
		return allErrs
	}
	notBefore, notAfter, refresh := st.NotBefore.Time, st.NotAfter.Time, st.BeginRefreshAt.Time
	lifetime := leaf.NotAfter.Sub(leaf.NotBefore)
	// Each rule reads what the ones before it established, so the first broken one is the answer.
	rules := []struct {
		broken bool
		err    func() *field.Error
	}{
		{!notBefore.Equal(leaf.NotBefore), func() *field.Error {
			return field.Invalid(notBeforePath, notBefore, "must be set to the NotBefore time encoded in the leaf certificate")
		}},
		{!notBefore.After(now.Add(-pcrNotBeforeSkew)) || !notBefore.Before(now.Add(pcrNotBeforeSkew)), func() *field.Error {
			return field.Invalid(notBeforePath, notBefore, "must be set to within 5 minutes of kube-apiserver's current time")
		}},
		{!notAfter.Equal(leaf.NotAfter), func() *field.Error {
			return field.Invalid(notAfterPath, notAfter, "must be set to the NotAfter time encoded in the leaf certificate")
		}},
		{lifetime < pcrMinLifetime, func() *field.Error {
			return field.Invalid(certChainPath, lifetime.String(), "leaf certificate lifetime must be >= 1 hour")
		}},
		{old.Spec.MaxExpirationSeconds == nil || lifetime > time.Duration(*old.Spec.MaxExpirationSeconds)*time.Second, func() *field.Error {
			return field.Invalid(certChainPath, lifetime.String(), fmt.Sprintf("leaf certificate lifetime must be <= spec.maxExpirationSeconds (%v)", maxExpiration(old)))
		}},
		{refresh.Before(notBefore.Add(pcrRefreshMargin)), func() *field.Error {
			return field.Invalid(beginRefreshPath, refresh, "must be at least 10 minutes after status.notBefore")
		}},
		{refresh.After(notAfter.Add(-pcrRefreshMargin)), func() *field.Error {
			return field.Invalid(beginRefreshPath, refresh, "must be at least 10 minutes before status.notAfter")
		}},
	}
	for _, r := range rules {
		if r.broken {
			return field.ErrorList{r.err()}
		}
	}
	return nil
}

func maxExpiration(req *certificatesv1.PodCertificateRequest) int32 {
	if req.Spec.MaxExpirationSeconds == nil {
		return 0
	}
	return *req.Spec.MaxExpirationSeconds
}

// parseChain reads a chain of one or more CERTIFICATE PEM blocks, leaf first.
func parseChain(chain string) ([]*x509.Certificate, field.ErrorList) {
	var certs []*x509.Certificate
	for rest := []byte(chain); ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, field.ErrorList{field.Invalid(certChainPath, field.OmitValueType{}, "issued certificate chain must consist entirely of CERTIFICATE PEM blocks")}
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			what := "intermediate certificate"
			if len(certs) == 0 {
				what = "leaf certificate"
			}
			return nil, field.ErrorList{field.Invalid(certChainPath, field.OmitValueType{}, what+" does not parse as valid X.509")}
		}
		certs = append(certs, cert)
	}
	if len(certs) == 0 {
		return nil, field.ErrorList{field.Invalid(certChainPath, field.OmitValueType{}, "issued certificate chain must contain at least one certificate")}
	}
	return certs, nil
}

// leafNames refuses DNS names and email addresses a TLS stack could misread.
func leafNames(leaf *x509.Certificate) field.ErrorList {
	var allErrs field.ErrorList
	for _, name := range leaf.DNSNames {
		switch {
		case name == "":
			allErrs = append(allErrs, field.Invalid(certChainPath, name, "leaf certificate should not contain empty DNSName"))
		case strings.Contains(name, ".."):
			allErrs = append(allErrs, field.Invalid(certChainPath, name, "leaf certificate's DNSName should not contain '..'"))
		case strings.HasPrefix(name, ".") || strings.HasSuffix(name, "."):
			allErrs = append(allErrs, field.Invalid(certChainPath, name, "leaf certificate's DNSName should not start or end with '.'"))
		}
	}
	for _, addr := range leaf.EmailAddresses {
		if _, err := mail.ParseAddress(addr); err != nil {
			allErrs = append(allErrs, field.Invalid(certChainPath, addr, "leaf certificate should not contain invalid EmailAddress"))
		}
	}
	return allErrs
}

// issuedToRequestedKey: the leaf's key is the one the stored stub request carries.
func issuedToRequestedKey(leaf *x509.Certificate, stub []byte) field.ErrorList {
	csr, err := x509.ParseCertificateRequest(stub)
	if err != nil {
		return field.ErrorList{field.Invalid(stubRequestPath, field.OmitValueType{}, "must be a valid DER-encoded PKCS#10 certificate request")}
	}
	want, ok := csr.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !want.Equal(leaf.PublicKey) {
		return field.ErrorList{field.Invalid(certChainPath, field.OmitValueType{}, "leaf certificate was not issued to the requested public key")}
	}
	return nil
}
