// Package podcert holds idplane's built-in PodCertificateRequest signers: what each issues (its
// rules, as data) and the certificate formats, which the client-pod authenticator reads too.
//
//   - idplane.io/spiffe issues X.509-SVIDs (SPIFFE X509-SVID specification): exactly one URI SAN
//     spiffe://<trust-domain>/ns/<namespace>/sa/<service-account>, not a CA, usages digital
//     signature (and key encipherment for RSA), extended usages server and client auth.
//   - kubernetes.io/kube-apiserver-client-pod issues client certificates that idplane's
//     client-pod authenticator takes as the pod's service account while the pod, its service
//     account and its node are the ones named (format: ParseClientPodCertificate).
package podcert

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apiserviceaccount "k8s.io/apiserver/pkg/authentication/serviceaccount"
)

// The signers' names.
const (
	SPIFFESignerName    = "idplane.io/spiffe"
	ClientPodSignerName = "kubernetes.io/kube-apiserver-client-pod"
)

// KeyType names a subject key as the podCertificate projected volume source's keyType does.
type KeyType string

// The key types the API accepts in a stub PKCS#10 request.
const (
	RSA3072   KeyType = "RSA3072"
	RSA4096   KeyType = "RSA4096"
	ECDSAP256 KeyType = "ECDSAP256"
	ECDSAP384 KeyType = "ECDSAP384"
	ECDSAP521 KeyType = "ECDSAP521"
	ED25519   KeyType = "ED25519"
)

// keyTypeOf names pub's type, or "" for a key the API does not accept.
func keyTypeOf(pub crypto.PublicKey) KeyType {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		switch k.N.BitLen() {
		case 3072:
			return RSA3072
		case 4096:
			return RSA4096
		}
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return ECDSAP256
		case elliptic.P384():
			return ECDSAP384
		case elliptic.P521():
			return ECDSAP521
		}
	case ed25519.PublicKey:
		return ED25519
	}
	return ""
}

// Denial reasons beside the API's two.
const (
	// ReasonInvalidRequest: the stub PKCS#10 request does not parse or its signature does not
	// verify (the API checks both; a signer does not take that on trust).
	ReasonInvalidRequest = "InvalidStubPKCS10Request"
	// ReasonUnencodableIdentity: a name or UID the request carries cannot be put in the format.
	ReasonUnencodableIdentity = "UnencodableIdentity"
)

// Policy is one signer's rules: the key types it issues for (the first is the one it suggests),
// the unverifiedUserAnnotations keys it understands (any other is refused), and the certificate
// it makes for a request.
type Policy struct {
	SignerName  string
	KeyTypes    []KeyType
	Annotations []string
	// leaf fills in the certificate's subject, names and usages, or says why the request's
	// identity cannot be encoded.
	leaf func(p Params, id PodIdentity, keyType KeyType) (*x509.Certificate, error)
	// maxLifetime caps the certificate whatever maxExpirationSeconds and the duration flag say
	// (24 h for kubernetes.io signers, as the API documents); 0 is no cap of its own.
	maxLifetime time.Duration
}

// Params are the settings the signers share.
type Params struct {
	// TrustDomain is the SPIFFE trust domain (--spiffe-trust-domain).
	TrustDomain string
	// Duration is the longest lifetime issued (--pod-certificate-duration).
	Duration time.Duration
}

// Policies are the built-in signers, by name.
func Policies() map[string]Policy {
	return map[string]Policy{
		SPIFFESignerName: {
			SignerName: SPIFFESignerName,
			// The key types SPIRE issues SVIDs for, with RSA 3072: not Ed25519 or P-521, which the
			// TLS stacks of common service meshes do not accept by default.
			KeyTypes: []KeyType{ECDSAP256, ECDSAP384, RSA3072, RSA4096},
			leaf:     spiffeLeaf,
		},
		ClientPodSignerName: {
			SignerName:  ClientPodSignerName,
			KeyTypes:    []KeyType{ECDSAP256, ECDSAP384, ECDSAP521, ED25519, RSA3072, RSA4096},
			leaf:        clientPodLeaf,
			maxLifetime: 24 * time.Hour,
		},
	}
}

// signatureUsages are the key usages of a leaf whose key signs, plus key encipherment for RSA
// keys, with which TLS 1.2's RSA key exchange encrypts.
func signatureUsages(kt KeyType) x509.KeyUsage {
	if kt == RSA3072 || kt == RSA4096 {
		return x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	}
	return x509.KeyUsageDigitalSignature
}

func spiffeLeaf(p Params, id PodIdentity, kt KeyType) (*x509.Certificate, error) {
	spiffeID, err := SPIFFEID(p.TrustDomain, id.Namespace, id.ServiceAccountName)
	if err != nil {
		return nil, err
	}
	// An empty subject: the SVID is its URI (the library then marks the SAN extension critical,
	// as RFC 5280 asks).
	return &x509.Certificate{
		URIs:        []*url.URL{spiffeID},
		KeyUsage:    signatureUsages(kt),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}, nil
}

func clientPodLeaf(_ Params, id PodIdentity, kt KeyType) (*x509.Certificate, error) {
	uris, err := id.ClientPodURIs()
	if err != nil {
		return nil, err
	}
	return &x509.Certificate{
		Subject: pkix.Name{
			CommonName:   apiserviceaccount.MakeUsername(id.Namespace, id.ServiceAccountName),
			Organization: apiserviceaccount.MakeGroupNames(id.Namespace),
		},
		URIs:        uris,
		KeyUsage:    signatureUsages(kt),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, nil
}

// Outcome is a signer's answer to a request: a condition type with its reason and message and,
// when Issued, the certificate and its times. Retry, with no condition, says the CA cannot sign
// at the moment (its files do not hold a pair that loads, say halfway through a rotation): the
// request is to be asked again later, not failed for good; Message says why.
type Outcome struct {
	Retry     bool
	Condition string
	Reason    string
	Message   string

	CertificateChain                    string
	NotBefore, NotAfter, BeginRefreshAt time.Time
}

func denied(reason, format string, args ...any) Outcome {
	return Outcome{Condition: certificatesv1.PodCertificateRequestConditionTypeDenied, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

func failed(reason, format string, args ...any) Outcome {
	return Outcome{Condition: certificatesv1.PodCertificateRequestConditionTypeFailed, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Signer signs with a CA.
type Signer interface {
	SignLeaf(tmpl *x509.Certificate, pub crypto.PublicKey) (*x509.Certificate, error)
}

// Clock skew: notBefore is this far before the signing, so a relying party whose clock is a
// little behind accepts the certificate; it stays well within the five minutes the API allows.
const backdate = time.Minute

// minLifetime is the shortest certificate the API accepts.
const minLifetime = time.Hour

// defaultMaxExpiration is maxExpirationSeconds when the request leaves it out (the API defaults it).
const defaultMaxExpiration = 24 * time.Hour

// Decide answers a request: Denied when it breaks the policy, Retry while the CA cannot sign,
// Failed when the CA expires within the shortest lifetime the API allows, else Issued with a certificate valid from a minute before now for the shortest of
// maxExpirationSeconds, the Duration and the policy's cap, refreshed at half-life.
func (pol Policy) Decide(p Params, ca Signer, pcr *certificatesv1.PodCertificateRequest, now time.Time) Outcome {
	spec := &pcr.Spec
	if unknown := pol.unknownAnnotations(spec.UnverifiedUserAnnotations); len(unknown) > 0 {
		known := "none"
		if len(pol.Annotations) > 0 {
			known = strings.Join(pol.Annotations, ", ")
		}
		return denied(certificatesv1.PodCertificateRequestConditionInvalidUserConfig,
			"%s does not understand unverifiedUserAnnotations %q (it understands: %s)", pol.SignerName, unknown, known)
	}
	csr, err := x509.ParseCertificateRequest(spec.StubPKCS10Request)
	if err == nil {
		err = csr.CheckSignature()
	}
	if err != nil {
		return denied(ReasonInvalidRequest, "stubPKCS10Request: %v", err)
	}
	kt := keyTypeOf(csr.PublicKey)
	if !slices.Contains(pol.KeyTypes, kt) {
		have := string(kt)
		if have == "" {
			have = fmt.Sprintf("%T", csr.PublicKey)
		}
		return denied(certificatesv1.PodCertificateRequestConditionUnsupportedKeyType,
			"%s does not issue certificates for %s keys: use %s (supported: %s)", pol.SignerName, have, pol.KeyTypes[0], joinKeyTypes(pol.KeyTypes))
	}
	id := PodIdentity{
		Namespace:          pcr.Namespace,
		ServiceAccountName: spec.ServiceAccountName, ServiceAccountUID: spec.ServiceAccountUID,
		PodName: spec.PodName, PodUID: spec.PodUID,
		NodeName: string(spec.NodeName), NodeUID: spec.NodeUID,
	}
	tmpl, err := pol.leaf(p, id, kt)
	if err != nil {
		return denied(ReasonUnencodableIdentity, "%s: %v", pol.SignerName, err)
	}
	lifetime := defaultMaxExpiration
	if spec.MaxExpirationSeconds != nil {
		lifetime = time.Duration(*spec.MaxExpirationSeconds) * time.Second
	}
	lifetime = min(lifetime, p.Duration)
	if pol.maxLifetime > 0 {
		lifetime = min(lifetime, pol.maxLifetime)
	}
	// Whole seconds: the certificate's times have no more, and the API compares them with the
	// status's.
	tmpl.NotBefore = now.Add(-backdate).Truncate(time.Second)
	tmpl.NotAfter = tmpl.NotBefore.Add(lifetime)
	cert, err := ca.SignLeaf(tmpl, csr.PublicKey)
	if err != nil {
		return Outcome{Retry: true, Message: fmt.Sprintf("%s: %v", pol.SignerName, err)}
	}
	if got := cert.NotAfter.Sub(cert.NotBefore); got < minLifetime {
		return failed("CAExpiring", "%s: its CA expires at %s, leaving the certificate %v, less than the %v the API requires",
			pol.SignerName, cert.NotAfter.UTC().Format(time.RFC3339), got, minLifetime)
	}
	return Outcome{
		Condition:        certificatesv1.PodCertificateRequestConditionTypeIssued,
		Reason:           "Issued",
		Message:          fmt.Sprintf("issued by %s", pol.SignerName),
		CertificateChain: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})),
		NotBefore:        cert.NotBefore,
		NotAfter:         cert.NotAfter,
		BeginRefreshAt:   cert.NotBefore.Add(cert.NotAfter.Sub(cert.NotBefore) / 2),
	}
}

func (pol Policy) unknownAnnotations(annotations map[string]string) []string {
	var unknown []string
	for k := range annotations {
		if !slices.Contains(pol.Annotations, k) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	return unknown
}

func joinKeyTypes(kts []KeyType) string {
	s := make([]string, len(kts))
	for i, kt := range kts {
		s[i] = string(kt)
	}
	return strings.Join(s, ", ")
}
