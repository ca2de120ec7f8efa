// Package certificates holds the built-in signers' rules and the signing of what they allow: each
// kubernetes.io signer is a Policy composed of small rules, checked against the parsed request
// before a certificate is made.
package certificates

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
)

// Policy is what a signer issues: the rules a request must meet. A request that breaks one is
// refused with the rule's reason, never signed. Its rules are unexported so that a Policy handed
// out is a read-only view: no package can loosen a signer's rules for everyone else.
type Policy struct {
	SignerName string
	rules      []Rule
}

// Rule checks one aspect of a request; it returns why the request breaks it, or nil.
type Rule func(req *Request) error

// Request is a CSR as the rules see it.
type Request struct {
	CSR    *x509.CertificateRequest
	Usages []certificatesv1.KeyUsage
}

// Check returns the first rule the request breaks.
func (p Policy) Check(req *Request) error {
	for _, r := range p.rules {
		if err := r(req); err != nil {
			return fmt.Errorf("%s: %w", p.SignerName, err)
		}
	}
	return nil
}

// RequestStep is the step of reading a CSR's spec.request that failed.
type RequestStep int

const (
	// RequestNotPEM: the data is not a PEM block of type CERTIFICATE REQUEST.
	RequestNotPEM RequestStep = iota
	// RequestUnparsable: the block holds no PKCS#10 request Go can parse.
	RequestUnparsable
	// RequestBadSignature: the request's self-signature does not verify.
	RequestBadSignature
)

// RequestError is a spec.request ParseRequest refused, with the step that refused it, so that
// each caller (validation, admission, the signers) words the failure for its own users from
// the one parser.
type RequestError struct {
	Step RequestStep
	// Err is the library's error; nil for RequestNotPEM.
	Err error
}

func (e *RequestError) Error() string {
	switch e.Step {
	case RequestNotPEM:
		return "not a PEM CERTIFICATE REQUEST"
	case RequestUnparsable:
		return fmt.Sprintf("parsing the certificate request: %v", e.Err)
	default:
		return fmt.Sprintf("checking the certificate request's signature: %v", e.Err)
	}
}

func (e *RequestError) Unwrap() error { return e.Err }

// ParseRequest decodes a CSR's spec.request: one PEM CERTIFICATE REQUEST whose signature
// verifies. It fails with a *RequestError.
func ParseRequest(data []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, &RequestError{Step: RequestNotPEM}
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, &RequestError{Step: RequestUnparsable, Err: err}
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, &RequestError{Step: RequestBadSignature, Err: err}
	}
	return csr, nil
}

// nodeUserPrefix starts the common name of every kubelet certificate.
const nodeUserPrefix = "system:node:"

// PolicyFor returns the policy of a built-in signer; false for any other signer name.
func PolicyFor(signerName string) (Policy, bool) {
	p, ok := policies[signerName]
	return p, ok
}

// policies are the built-in signers, by name.
var policies = map[string]Policy{
	certificatesv1.KubeAPIServerClientSignerName: {
		SignerName: certificatesv1.KubeAPIServerClientSignerName,
		rules: []Rule{
			usagesWithin(certificatesv1.UsageClientAuth, certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment),
			usagesInclude(certificatesv1.UsageClientAuth),
		},
	},
	certificatesv1.KubeAPIServerClientKubeletSignerName: {
		SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
		rules: []Rule{
			commonNamePrefix(nodeUserPrefix),
			organizationsExactly("system:nodes"),
			noSANs,
			usagesExactlyOneOf(kubeletClientUsageSets),
		},
	},
	certificatesv1.KubeletServingSignerName: {
		SignerName: certificatesv1.KubeletServingSignerName,
		rules: []Rule{
			commonNamePrefix(nodeUserPrefix),
			organizationsExactly("system:nodes"),
			dnsOrIPSANsOnly,
			usagesExactlyOneOf(kubeletServingUsageSets),
		},
	},
	legacyUnknownSignerName: {SignerName: legacyUnknownSignerName},
}

// kubeletClientUsageSets and kubeletServingUsageSets are the usages the kubelet signers issue,
// each request exactly one of the sets, whatever its key type. The design lists the sets with
// key encipherment; current Kubernetes also takes them without, as a kubelet with a non-RSA key
// asks. Key encipherment on an ECDSA or Ed25519 key grants nothing (no TLS version encrypts a
// key to one), so it is not refused for them.
var (
	kubeletClientUsageSets = [][]certificatesv1.KeyUsage{
		{certificatesv1.UsageKeyEncipherment, certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
	}
	kubeletServingUsageSets = [][]certificatesv1.KeyUsage{
		{certificatesv1.UsageKeyEncipherment, certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
		{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
	}
)

// legacyUnknownSignerName promises nothing; only v1beta1 clients can still ask for it.
const legacyUnknownSignerName = "kubernetes.io/legacy-unknown"

func commonNamePrefix(prefix string) Rule {
	return func(req *Request) error {
		if cn := req.CSR.Subject.CommonName; !strings.HasPrefix(cn, prefix) || cn == prefix {
			return fmt.Errorf("subject common name %q must start with %q and name a node", cn, prefix)
		}
		return nil
	}
}

func organizationsExactly(orgs ...string) Rule {
	return func(req *Request) error {
		if !slices.Equal(req.CSR.Subject.Organization, orgs) {
			return fmt.Errorf("subject organizations %q must be exactly %q", req.CSR.Subject.Organization, orgs)
		}
		return nil
	}
}

func noSANs(req *Request) error {
	c := req.CSR
	if len(c.DNSNames)+len(c.IPAddresses)+len(c.EmailAddresses)+len(c.URIs) > 0 {
		return errors.New("subject alternative names are not allowed")
	}
	return nil
}

func dnsOrIPSANsOnly(req *Request) error {
	c := req.CSR
	switch {
	case len(c.EmailAddresses)+len(c.URIs) > 0:
		return errors.New("only DNS and IP subject alternative names are allowed")
	case len(c.DNSNames)+len(c.IPAddresses) == 0:
		return errors.New("at least one DNS or IP subject alternative name is required")
	}
	return nil
}

func usagesWithin(allowed ...certificatesv1.KeyUsage) Rule {
	return func(req *Request) error {
		for _, u := range req.Usages {
			if !slices.Contains(allowed, u) {
				return fmt.Errorf("usage %q is not allowed (allowed: %q)", u, allowed)
			}
		}
		return nil
	}
}

func usagesInclude(required certificatesv1.KeyUsage) Rule {
	return func(req *Request) error {
		if !slices.Contains(req.Usages, required) {
			return fmt.Errorf("usage %q is required", required)
		}
		return nil
	}
}

// usagesExactlyOneOf: the request's usages, as a set (order and repeats do not matter), are one
// of the given sets.
func usagesExactlyOneOf(sets [][]certificatesv1.KeyUsage) Rule {
	return func(req *Request) error {
		got := usageSet(req.Usages)
		for _, want := range sets {
			if slices.Equal(got, usageSet(want)) {
				return nil
			}
		}
		return fmt.Errorf("usages %q must be exactly one of %q", req.Usages, sets)
	}
}

// usageSet is the sorted set of the usages.
func usageSet(usages []certificatesv1.KeyUsage) []certificatesv1.KeyUsage {
	s := slices.Clone(usages)
	slices.Sort(s)
	return slices.Compact(s)
}
