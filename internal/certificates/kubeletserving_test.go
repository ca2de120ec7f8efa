package certificates

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"net/url"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func servingCSR(t *testing.T, key crypto.Signer, tmpl x509.CertificateRequest) *x509.CertificateRequest {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil {
		t.Fatal(err)
	}
	return csr
}

func TestApproveKubeletServing(t *testing.T) {
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{corev1.LabelHostname: "n1-label"}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeHostName, Address: "n1"},
			{Type: corev1.NodeInternalIP, Address: "10.0.0.1"},
			{Type: corev1.NodeExternalIP, Address: "2001:db8::1"},
			{Type: corev1.NodeInternalDNS, Address: "n1.internal"},
			{Type: corev1.NodeExternalDNS, Address: "n1.example.com"},
		}},
	}
	subject := pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}
	plain := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	withKE := []certificatesv1.KeyUsage{certificatesv1.UsageKeyEncipherment, certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	type request = KubeletServingRequest
	good := func(edit ...func(*request)) *request {
		r := &request{
			Username: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}, Usages: plain, Node: node,
			CSR: servingCSR(t, ecKey, x509.CertificateRequest{Subject: subject, DNSNames: []string{"n1", "n1.internal"}, IPAddresses: []net.IP{net.ParseIP("10.0.0.1")}}),
		}
		for _, e := range edit {
			e(r)
		}
		return r
	}
	csr := func(key crypto.Signer, tmpl x509.CertificateRequest) func(*request) {
		return func(r *request) { r.CSR = servingCSR(t, key, tmpl) }
	}
	sans := func(dns []string, ips ...string) func(*request) {
		var parsed []net.IP
		for _, ip := range ips {
			parsed = append(parsed, net.ParseIP(ip))
		}
		return csr(ecKey, x509.CertificateRequest{Subject: subject, DNSNames: dns, IPAddresses: parsed})
	}
	usages := func(u ...certificatesv1.KeyUsage) func(*request) { return func(r *request) { r.Usages = u } }
	cases := []struct {
		name    string
		req     *request
		failsAt string // "": approved
	}{
		{"DNS and IP names of the node", good(), ""},
		{"every address type and the hostname label", good(sans([]string{"n1", "n1.internal", "n1.example.com", "n1-label"}, "10.0.0.1", "2001:db8::1")), ""},
		{"DNS names compare without case", good(sans([]string{"N1.Example.COM"})), ""},
		{"IPv6 in another spelling", good(sans(nil, "2001:0db8:0:0::1")), ""},
		{"usages in another order, repeated", good(usages(certificatesv1.UsageServerAuth, certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth)), ""},
		{"RSA key with key encipherment", good(usages(withKE...), csr(rsaKey, x509.CertificateRequest{Subject: subject, DNSNames: []string{"n1"}})), ""},

		{"node does not exist", good(func(r *request) { r.Node = nil }), "node exists"},
		{"node of another name", good(func(r *request) {
			r.Node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}, Status: node.Status}
		}), "node exists"},
		{"DNS name not the node's", good(sans([]string{"n1", "evil.example.com"})), "names are the node's"},
		{"IP not the node's", good(sans([]string{"n1"}, "10.0.0.2")), "names are the node's"},
		{"IP given as DNS name", good(sans([]string{"10.0.0.1"})), "names are the node's"},
		{"DNS name given as IP type address does not count", good(func(r *request) {
			n := node.DeepCopy()
			n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "n1"}}
			n.Labels = nil
			r.Node = n
		}), "names are the node's"},
		{"no SANs", good(sans(nil)), "signer policy"},
		{"email SAN", good(csr(ecKey, x509.CertificateRequest{Subject: subject, DNSNames: []string{"n1"}, EmailAddresses: []string{"n1@example.com"}})), "signer policy"},
		{"URI SAN", good(csr(ecKey, x509.CertificateRequest{Subject: subject, DNSNames: []string{"n1"}, URIs: []*url.URL{{Scheme: "spiffe", Host: "n1"}}})), "signer policy"},
		{"requester another node", good(func(r *request) { r.Username = "system:node:n2" }), "requester is the node"},
		{"requester not in system:nodes", good(func(r *request) { r.Groups = []string{"system:authenticated"} }), "requester is the node"},
		{"requester a bootstrap token", good(func(r *request) {
			r.Username, r.Groups = "system:bootstrap:abcdef", []string{"system:bootstrappers", "system:nodes"}
		}), "requester is the node"},
		{"common name not a node", good(csr(ecKey, x509.CertificateRequest{Subject: pkix.Name{CommonName: "n1", Organization: []string{"system:nodes"}}, DNSNames: []string{"n1"}}), func(r *request) { r.Username = "n1" }), "signer policy"},
		{"organization missing", good(csr(ecKey, x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1"}, DNSNames: []string{"n1"}})), "signer policy"},
		{"extra organization", good(csr(ecKey, x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes", "system:masters"}}, DNSNames: []string{"n1"}})), "signer policy"},
		{"no server auth", good(usages(certificatesv1.UsageDigitalSignature)), "signer policy"},
		{"no digital signature", good(usages(certificatesv1.UsageServerAuth)), "usages"},
		{"client auth too", good(usages(certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth, certificatesv1.UsageClientAuth)), "signer policy"},
		{"key encipherment on an EC key", good(usages(withKE...)), "signer policy"},
		{"no usages", good(usages()), "signer policy"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ApproveKubeletServing(tc.req)
			switch {
			case tc.failsAt == "" && err != nil:
				t.Fatalf("not approved: %v", err)
			case tc.failsAt != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.failsAt+": ")):
				t.Fatalf("ApproveKubeletServing = %v, want a refusal by rule %q", err, tc.failsAt)
			}
		})
	}
}
