package certificates

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
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
	ecKey, rsaK, edKey := testKey(t, ecdsaKey), testKey(t, rsaKey), testKey(t, ed25519Key)
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
		{"RSA key with key encipherment", good(usages(withKE...), csr(rsaK, x509.CertificateRequest{Subject: subject, DNSNames: []string{"n1"}})), ""},

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
		{"no digital signature", good(usages(certificatesv1.UsageServerAuth)), "signer policy"},
		{"client auth too", good(usages(certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth, certificatesv1.UsageClientAuth)), "signer policy"},
		{"key encipherment on an EC key", good(usages(withKE...)), ""},
		{"key encipherment on an Ed25519 key", good(usages(withKE...), csr(edKey, x509.CertificateRequest{Subject: subject, DNSNames: []string{"n1"}})), ""},
		{"Ed25519 key without key encipherment", good(csr(edKey, x509.CertificateRequest{Subject: subject, DNSNames: []string{"n1"}})), ""},
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

// TestKubeletServingRefusesNamesNotTheNodes: a node that reports a name in its own status still
// never gets, without a human, a name that reaches the client's own host, the API server's
// names, a wildcard, or what another Node reports; it gets what is only its own.
func TestKubeletServingRefusesNamesNotTheNodes(t *testing.T) {
	const (
		loopback  = "a loopback name or address"
		inCluster = "the API server's in-cluster name"
		apiServer = "covered by the API server's serving certificate"
		wildcard  = "a wildcard"
		otherNode = `claimed by Node "n2"`
	)
	other := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n2", Labels: map[string]string{corev1.LabelHostname: "n2-host"}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: "10.0.0.2"},
			{Type: corev1.NodeExternalIP, Address: "2001:db8::2"},
			{Type: corev1.NodeExternalDNS, Address: "n2.example.com"},
		}},
	}
	apiServerNames := ServerNames{
		DNS: []string{"localhost", "apiserver-loopback-client", "api.example.com", "*.api.example.com"},
		IPs: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1"), net.ParseIP("10.0.0.100")},
	}
	cases := []struct {
		dns, ip string
		want    string // the reason the name is refused; "": approved
	}{
		{dns: "localhost", want: loopback},
		{dns: "LOCALHOST.", want: loopback},
		{dns: "app.localhost", want: loopback},
		{dns: "localhost.localdomain", want: loopback},
		{dns: "ip6-localhost", want: loopback},
		{dns: "127.0.0.1", want: loopback},
		{ip: "127.0.0.1", want: loopback},
		{ip: "127.1.2.3", want: loopback},
		{ip: "::1", want: loopback},
		{ip: "::ffff:127.0.0.1", want: loopback},
		{ip: "0.0.0.0", want: loopback},
		{ip: "::", want: loopback},
		{dns: "kubernetes", want: inCluster},
		{dns: "kubernetes.default", want: inCluster},
		{dns: "kubernetes.default.svc", want: inCluster},
		{dns: "Kubernetes.Default.Svc.cluster.local.", want: inCluster},
		{dns: "apiserver-loopback-client", want: apiServer},
		{dns: "API.example.com", want: apiServer},
		{dns: "x.api.example.com", want: apiServer},
		{ip: "10.0.0.100", want: apiServer},
		{dns: "10.0.0.100", want: apiServer},
		{dns: "*.n1.example.com", want: wildcard},
		{dns: "*", want: wildcard},
		{dns: "n2", want: otherNode},
		{dns: "N2-Host", want: otherNode},
		{dns: "n2.example.com.", want: otherNode},
		{ip: "10.0.0.2", want: otherNode},
		{ip: "::ffff:10.0.0.2", want: otherNode},
		{ip: "2001:db8:0::2", want: otherNode},
		{dns: "10.0.0.2", want: otherNode},

		{dns: "n1"},
		{dns: "n1.example.com"},
		{ip: "10.0.0.1"},
		{ip: "2001:db8::1"},
		{dns: "a.b.api.example.com"},
		{dns: "kubernetes.default.svcs"},
		{dns: "n2.example.com.n1"},
	}
	for _, tc := range cases {
		name := tc.dns
		if tc.ip != "" {
			name = "IP " + tc.ip
		}
		t.Run(name, func(t *testing.T) {
			self := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
			tmpl := x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}}
			// The node reports the name itself, as the attacker's did: only the name rules stand
			// between it and the certificate.
			if tc.dns != "" {
				tmpl.DNSNames = []string{tc.dns}
				self.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: tc.dns}}
			} else {
				tmpl.IPAddresses = []net.IP{net.ParseIP(tc.ip)}
				self.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: tc.ip}}
			}
			err := ApproveKubeletServing(&KubeletServingRequest{
				Username: "system:node:n1", Groups: []string{"system:nodes"},
				Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
				CSR:    servingCSR(t, testKey(t, ecdsaKey), tmpl), Node: self,
				APIServer: apiServerNames, Claimants: []*corev1.Node{self, other},
			})
			var refused *RefusedNamesError
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("not approved: %v", err)
			case tc.want != "" && !errors.As(err, &refused):
				t.Fatalf("ApproveKubeletServing = %v, want the name refused as %s", err, tc.want)
			case tc.want != "" && (len(refused.Names) != 1 || !strings.HasSuffix(refused.Names[0], ": "+tc.want)):
				t.Fatalf("refused %q, want one name refused as %s", refused.Names, tc.want)
			}
		})
	}

	// Every refused name is named, not just the first.
	self := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
		{Type: corev1.NodeHostName, Address: "n1"}, {Type: corev1.NodeHostName, Address: "localhost"}, {Type: corev1.NodeInternalIP, Address: "10.0.0.2"},
	}}}
	err := ApproveKubeletServing(&KubeletServingRequest{
		Username: "system:node:n1", Groups: []string{"system:nodes"},
		Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
		CSR: servingCSR(t, testKey(t, ecdsaKey), x509.CertificateRequest{
			Subject:  pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}},
			DNSNames: []string{"n1", "localhost"}, IPAddresses: []net.IP{net.ParseIP("10.0.0.2")},
		}),
		Node: self, Claimants: []*corev1.Node{self, other},
	})
	want := `names are no one else's: DNS name "localhost": ` + loopback + `; IP address 10.0.0.2: ` + otherNode
	if err == nil || err.Error() != want {
		t.Errorf("ApproveKubeletServing = %v, want %s", err, want)
	}
}
