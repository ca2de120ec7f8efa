package certificates

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authentication/user"
)

// KubeletServingRequest is what the kubelet-serving approval decides on: a
// kubernetes.io/kubelet-serving CSR, who asked for it, the Node its common name names, and what
// else in the cluster answers to names.
type KubeletServingRequest struct {
	// Username and Groups are the CSR's requester (spec.username, spec.groups).
	Username string
	Groups   []string
	Usages   []certificatesv1.KeyUsage
	CSR      *x509.CertificateRequest
	// Node is the Node named by the common name, nil when it does not exist.
	Node *corev1.Node
	// APIServer are the names the API server's serving certificate covers.
	APIServer ServerNames
	// Claimants are Nodes that claim one of the request's names (NodeClaims), the requester's
	// own Node possibly among them.
	Claimants []*corev1.Node
}

// ServerNames are the DNS names and IP addresses of a serving certificate.
type ServerNames struct {
	DNS []string
	IPs []net.IP
}

// servingApprovalRule is one condition of approving a kubelet serving certificate.
type servingApprovalRule struct {
	name  string
	check func(*KubeletServingRequest) error
}

// kubeletServingApproval are the conditions, all required, under which a node's own serving
// certificate is approved without a human: what the signer would sign, asked by the node itself,
// for names that are not anyone else's and that its Node object already shows.
var kubeletServingApproval = []servingApprovalRule{
	{"signer policy", func(r *KubeletServingRequest) error {
		return policies[certificatesv1.KubeletServingSignerName].Check(&Request{CSR: r.CSR, Usages: r.Usages})
	}},
	{"requester is the node", requesterIsTheNode},
	{"node exists", func(r *KubeletServingRequest) error {
		if r.Node == nil || nodeUserPrefix+r.Node.Name != r.CSR.Subject.CommonName {
			return fmt.Errorf("node %q does not exist", strings.TrimPrefix(r.CSR.Subject.CommonName, nodeUserPrefix))
		}
		return nil
	}},
	{"names are no one else's", namesAreNoOneElses},
	{"names are the node's", sansAreTheNodes},
}

// ApproveKubeletServing returns nil when the request may be approved, else the first condition
// it does not meet; a *RefusedNamesError when that is a name no node may have. It reads nothing
// but its argument.
func ApproveKubeletServing(r *KubeletServingRequest) error {
	for _, rule := range kubeletServingApproval {
		if err := rule.check(r); err != nil {
			return fmt.Errorf("%s: %w", rule.name, err)
		}
	}
	return nil
}

func requesterIsTheNode(r *KubeletServingRequest) error {
	switch {
	case r.Username != r.CSR.Subject.CommonName:
		return fmt.Errorf("requester %q is not %q", r.Username, r.CSR.Subject.CommonName)
	case !slices.Contains(r.Groups, user.NodesGroup):
		return fmt.Errorf("requester %q is not in group %s", r.Username, user.NodesGroup)
	}
	return nil
}

// sansAreTheNodes: every DNS name must be one of the Node's host or DNS addresses or its
// kubernetes.io/hostname label, every IP one of its IP addresses. A node sets its own status, so
// this does not prove it owns the names; it keeps a node to the names it publishes, which an
// administrator can see and watch.
func sansAreTheNodes(r *KubeletServingRequest) error {
	var dnsNames []string
	var ips []net.IP
	for _, a := range r.Node.Status.Addresses {
		switch a.Type {
		case corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS:
			dnsNames = append(dnsNames, a.Address)
		case corev1.NodeInternalIP, corev1.NodeExternalIP:
			if ip := net.ParseIP(a.Address); ip != nil {
				ips = append(ips, ip)
			}
		}
	}
	if h := r.Node.Labels[corev1.LabelHostname]; h != "" {
		dnsNames = append(dnsNames, h)
	}
	var errs []error
	for _, name := range r.CSR.DNSNames {
		if !slices.ContainsFunc(dnsNames, func(n string) bool { return strings.EqualFold(n, name) }) {
			errs = append(errs, fmt.Errorf("DNS name %q is not among the node's addresses or hostname label", name))
		}
	}
	for _, ip := range r.CSR.IPAddresses {
		if !slices.ContainsFunc(ips, ip.Equal) {
			errs = append(errs, fmt.Errorf("IP address %s is not among the node's addresses", ip))
		}
	}
	return errors.Join(errs...)
}

// RefusedNamesError: the request names something a node's serving certificate never carries
// without a human's decision, whatever its Node reports: a node sets its own status, so the
// names it shows prove nothing about the names that belong to others.
type RefusedNamesError struct {
	// Names are the refused names, each with the reason.
	Names []string
}

func (e *RefusedNamesError) Error() string {
	return strings.Join(e.Names, "; ")
}

// servingName is one subject alternative name of a request as the name rules see it.
type servingName struct {
	// text is the name as requested, for messages.
	text string
	// dns is a DNS name lower-case and without a final dot; empty for an IP address.
	dns string
	// ip is the address of an IP name, and of a DNS name that is an IP literal (some clients
	// match those against DNS names).
	ip net.IP
}

// nameRule refuses a name: it returns why, or "".
type nameRule func(n servingName, r *KubeletServingRequest) string

// refusedNameRules are the names no node gets by itself: the ones that reach the host a client
// runs on, the API server's, wildcards, and any other Node's.
var refusedNameRules = []nameRule{
	func(n servingName, _ *KubeletServingRequest) string {
		if strings.Contains(n.dns, "*") {
			return "a wildcard"
		}
		return ""
	},
	func(n servingName, _ *KubeletServingRequest) string {
		if slices.Contains(loopbackNames, n.dns) || strings.HasSuffix(n.dns, ".localhost") ||
			(n.ip != nil && (n.ip.IsLoopback() || n.ip.IsUnspecified())) {
			return "a loopback name or address"
		}
		return ""
	},
	func(n servingName, _ *KubeletServingRequest) string {
		if slices.Contains(apiServerServiceNames, n.dns) || strings.HasPrefix(n.dns, "kubernetes.default.svc.") {
			return "the API server's in-cluster name"
		}
		return ""
	},
	func(n servingName, r *KubeletServingRequest) string {
		if n.ip != nil && slices.ContainsFunc(r.APIServer.IPs, n.ip.Equal) ||
			n.dns != "" && slices.ContainsFunc(r.APIServer.DNS, func(d string) bool { return dnsNameCovers(d, n.dns) }) {
			return "covered by the API server's serving certificate"
		}
		return ""
	},
	func(n servingName, r *KubeletServingRequest) string {
		key := n.key()
		for _, other := range r.Claimants {
			if other.Name != r.Node.Name && slices.Contains(NodeClaims(other), key) {
				return fmt.Sprintf("claimed by Node %q", other.Name)
			}
		}
		return ""
	},
}

// loopbackNames are the host names that resolve to the loopback interface on common systems
// (RFC 6761's localhost and the aliases /etc/hosts of the usual distributions give it); any
// name under .localhost is loopback too.
var loopbackNames = []string{
	"localhost", "localhost.localdomain", "localhost4", "localhost4.localdomain4",
	"localhost6", "localhost6.localdomain6", "ip6-localhost", "ip6-loopback",
}

// apiServerServiceNames are the names of the kubernetes Service in the default namespace, which
// pods use to reach the API server; anything under kubernetes.default.svc. is too.
var apiServerServiceNames = []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc"}

// dnsNameCovers reports whether a certificate's DNS name (lower-case, possibly a wildcard of one
// label) matches the name.
func dnsNameCovers(certName, name string) bool {
	certName = nameKey(certName)
	if suffix, ok := strings.CutPrefix(certName, "*."); ok {
		label, rest, found := strings.Cut(name, ".")
		return found && label != "" && rest == suffix
	}
	return certName == name
}

// namesAreNoOneElses refuses a request naming anything refusedNameRules refuses.
func namesAreNoOneElses(r *KubeletServingRequest) error {
	var names []servingName
	for _, d := range r.CSR.DNSNames {
		n := servingName{text: fmt.Sprintf("DNS name %q", d), dns: nameKey(d)}
		n.ip = net.ParseIP(d)
		names = append(names, n)
	}
	for _, ip := range r.CSR.IPAddresses {
		names = append(names, servingName{text: "IP address " + ip.String(), ip: ip})
	}
	var refused []string
	for _, n := range names {
		for _, rule := range refusedNameRules {
			if why := rule(n, r); why != "" {
				refused = append(refused, n.text+": "+why)
				break
			}
		}
	}
	if len(refused) > 0 {
		return &RefusedNamesError{Names: refused}
	}
	return nil
}

// key is the name in the form NodeClaims gives.
func (n servingName) key() string {
	if n.ip != nil {
		return n.ip.String()
	}
	return n.dns
}

// nameKey is a name in the form names are compared in: an IP literal in its canonical spelling,
// a DNS name lower-case without a final dot.
func nameKey(name string) string {
	if ip := net.ParseIP(name); ip != nil {
		return ip.String()
	}
	return strings.ToLower(strings.TrimSuffix(name, "."))
}

// NodeClaims are the names a Node answers to, each in the form names are compared in: its name,
// its kubernetes.io/hostname label and every address in its status.
func NodeClaims(n *corev1.Node) []string {
	claims := []string{nameKey(n.Name)}
	if h := n.Labels[corev1.LabelHostname]; h != "" {
		claims = append(claims, nameKey(h))
	}
	for _, a := range n.Status.Addresses {
		claims = append(claims, nameKey(a.Address))
	}
	slices.Sort(claims)
	return slices.Compact(claims)
}

// RequestNames are the request's DNS names and IP addresses in the form NodeClaims gives, to
// find the Nodes that claim them.
func RequestNames(csr *x509.CertificateRequest) []string {
	var names []string
	for _, d := range csr.DNSNames {
		names = append(names, nameKey(d))
	}
	for _, ip := range csr.IPAddresses {
		names = append(names, ip.String())
	}
	return names
}
