package podcert

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	apiserviceaccount "k8s.io/apiserver/pkg/authentication/serviceaccount"
)

// PodIdentity is who a pod certificate speaks for: the pod's service account, the pod and its
// node, each with the UID it had when the certificate was requested.
type PodIdentity struct {
	Namespace          string
	ServiceAccountName string
	ServiceAccountUID  types.UID
	PodName            string
	PodUID             types.UID
	NodeName           string
	NodeUID            types.UID
}

// The kubernetes.io/kube-apiserver-client-pod certificate format. Its subject is the service
// account's user: common name system:serviceaccount:<namespace>:<name>, organizations
// system:serviceaccounts and system:serviceaccounts:<namespace>. Its subject alternative names
// are exactly three URIs, which the authenticator reads (the subject is informative only):
//
//	urn:idplane:serviceaccount:<namespace>:<name>:<uid>
//	urn:idplane:pod:<namespace>:<name>:<uid>
//	urn:idplane:node:<name>:<uid>
//
// Names and namespaces are DNS labels or subdomains and UIDs are the server's, so none holds a
// colon; the signer refuses to encode anything else. URNs rather than spiffe:// URIs: a relying
// party that takes SPIFFE IDs must never read one of these as a workload identity.
const (
	clientPodURNPrefix    = "urn:idplane:"
	serviceAccountURNKind = "serviceaccount"
	podURNKind            = "pod"
	nodeURNKind           = "node"
)

// uidPattern is what a UID in a certificate may hold: the server's UUIDs and nothing that could
// change how the URN reads.
var uidPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// namePattern is a DNS label or subdomain, as every object name a certificate names is.
var namePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$`)

func checkPart(what, v string, pattern *regexp.Regexp) error {
	if len(v) > 253 || !pattern.MatchString(v) {
		return fmt.Errorf("%s %q cannot be put in a certificate", what, v)
	}
	return nil
}

func (id PodIdentity) check() error {
	return errors.Join(
		checkPart("namespace", id.Namespace, namePattern),
		checkPart("service account name", id.ServiceAccountName, namePattern),
		checkPart("service account UID", string(id.ServiceAccountUID), uidPattern),
		checkPart("pod name", id.PodName, namePattern),
		checkPart("pod UID", string(id.PodUID), uidPattern),
		checkPart("node name", id.NodeName, namePattern),
		checkPart("node UID", string(id.NodeUID), uidPattern),
	)
}

// ClientPodURIs are the URIs of the client-pod format for id.
func (id PodIdentity) ClientPodURIs() ([]*url.URL, error) {
	if err := id.check(); err != nil {
		return nil, err
	}
	urn := func(parts ...string) *url.URL {
		return &url.URL{Scheme: "urn", Opaque: strings.TrimPrefix(clientPodURNPrefix, "urn:") + strings.Join(parts, ":")}
	}
	return []*url.URL{
		urn(serviceAccountURNKind, id.Namespace, id.ServiceAccountName, string(id.ServiceAccountUID)),
		urn(podURNKind, id.Namespace, id.PodName, string(id.PodUID)),
		urn(nodeURNKind, id.NodeName, string(id.NodeUID)),
	}, nil
}

// ParseClientPodCertificate reads the identity of a client-pod certificate: exactly the three
// URIs, each once, no other alternative name, the pod in the service account's namespace, and a
// subject that is the service account's user.
func ParseClientPodCertificate(cert *x509.Certificate) (PodIdentity, error) {
	var id PodIdentity
	if len(cert.DNSNames)+len(cert.IPAddresses)+len(cert.EmailAddresses) > 0 || len(cert.URIs) != 3 {
		return id, errors.New("a pod client certificate has exactly three URI subject alternative names and no other")
	}
	seen := map[string]bool{}
	var podNamespace string
	for _, u := range cert.URIs {
		s := u.String()
		rest, ok := strings.CutPrefix(s, clientPodURNPrefix)
		if !ok {
			return id, fmt.Errorf("URI %q is not part of the pod client certificate format", s)
		}
		kind, value, _ := strings.Cut(rest, ":")
		if seen[kind] {
			return id, fmt.Errorf("URI kind %q appears twice", kind)
		}
		seen[kind] = true
		parts := strings.Split(value, ":")
		switch {
		case kind == serviceAccountURNKind && len(parts) == 3:
			id.Namespace, id.ServiceAccountName, id.ServiceAccountUID = parts[0], parts[1], types.UID(parts[2])
		case kind == podURNKind && len(parts) == 3:
			podNamespace, id.PodName, id.PodUID = parts[0], parts[1], types.UID(parts[2])
		case kind == nodeURNKind && len(parts) == 2:
			id.NodeName, id.NodeUID = parts[0], types.UID(parts[1])
		default:
			return id, fmt.Errorf("URI %q is not part of the pod client certificate format", s)
		}
	}
	if podNamespace != id.Namespace {
		return id, fmt.Errorf("pod namespace %q is not the service account's %q", podNamespace, id.Namespace)
	}
	if err := id.check(); err != nil {
		return id, err
	}
	if want := apiserviceaccount.MakeUsername(id.Namespace, id.ServiceAccountName); cert.Subject.CommonName != want {
		return id, fmt.Errorf("subject common name %q is not %q", cert.Subject.CommonName, want)
	}
	return id, nil
}

// trustDomainPattern: a SPIFFE trust domain is lowercase letters, digits, dots, dashes and
// underscores (SPIFFE ID specification, 2.1).
var trustDomainPattern = regexp.MustCompile(`^[a-z0-9._-]+$`)

// ValidateTrustDomain checks a SPIFFE trust domain name.
func ValidateTrustDomain(td string) error {
	if len(td) > 255 || !trustDomainPattern.MatchString(td) {
		return fmt.Errorf("SPIFFE trust domain %q must be 1 to 255 lowercase letters, digits, dots, dashes or underscores", td)
	}
	return nil
}

// SPIFFEID is the SPIFFE ID of a service account in a trust domain,
// spiffe://<trust-domain>/ns/<namespace>/sa/<name>.
func SPIFFEID(trustDomain, namespace, serviceAccount string) (*url.URL, error) {
	if err := errors.Join(ValidateTrustDomain(trustDomain),
		checkPart("namespace", namespace, namePattern),
		checkPart("service account name", serviceAccount, namePattern)); err != nil {
		return nil, err
	}
	return &url.URL{Scheme: "spiffe", Host: trustDomain, Path: "/ns/" + namespace + "/sa/" + serviceAccount}, nil
}
