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
// kubernetes.io/kubelet-serving CSR, who asked for it, and the Node its common name names.
type KubeletServingRequest struct {
	// Username and Groups are the CSR's requester (spec.username, spec.groups).
	Username string
	Groups   []string
	Usages   []certificatesv1.KeyUsage
	CSR      *x509.CertificateRequest
	// Node is the Node named by the common name, nil when it does not exist.
	Node *corev1.Node
}

// servingApprovalRule is one condition of approving a kubelet serving certificate.
type servingApprovalRule struct {
	name  string
	check func(*KubeletServingRequest) error
}

// kubeletServingApproval are the conditions, all required, under which a node's own serving
// certificate is approved without a human: what the signer would sign, with usages as upstream
// allows them, asked by the node itself, for names its Node object already shows.
var kubeletServingApproval = []servingApprovalRule{
	{"signer policy", func(r *KubeletServingRequest) error {
		return Policies[certificatesv1.KubeletServingSignerName].Check(&Request{CSR: r.CSR, Usages: r.Usages})
	}},
	{"usages", servingUsagesExactly},
	{"requester is the node", requesterIsTheNode},
	{"node exists", func(r *KubeletServingRequest) error {
		if r.Node == nil || nodeUserPrefix+r.Node.Name != r.CSR.Subject.CommonName {
			return fmt.Errorf("node %q does not exist", strings.TrimPrefix(r.CSR.Subject.CommonName, nodeUserPrefix))
		}
		return nil
	}},
	{"names are the node's", sansAreTheNodes},
}

// ApproveKubeletServing returns nil when the request may be approved, else the first condition
// it does not meet. It reads nothing but its argument.
func ApproveKubeletServing(r *KubeletServingRequest) error {
	for _, rule := range kubeletServingApproval {
		if err := rule.check(r); err != nil {
			return fmt.Errorf("%s: %w", rule.name, err)
		}
	}
	return nil
}

// servingUsageSets are the usages upstream accepts for a kubelet serving certificate, as sets:
// key encipherment is for RSA keys only, which the signer policy checks.
var servingUsageSets = [][]certificatesv1.KeyUsage{
	{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth},
	{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
}

func servingUsagesExactly(r *KubeletServingRequest) error {
	got := slices.Clone(r.Usages)
	slices.Sort(got)
	got = slices.Compact(got)
	for _, want := range servingUsageSets {
		want = slices.Clone(want)
		slices.Sort(want)
		if slices.Equal(got, want) {
			return nil
		}
	}
	return fmt.Errorf("usages %q are neither %q nor %q", r.Usages, servingUsageSets[0], servingUsageSets[1])
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
