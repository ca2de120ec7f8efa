package apiserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/idplane/idplane/internal/jointoken"
)

// whoAmI asks the server who the client is.
func whoAmI(c kubernetes.Interface) (authenticationv1.UserInfo, error) {
	r, err := c.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	return r.Status.UserInfo, nil
}

// nodeKeyAndCSR is a P-256 key and a kubelet client certificate request for node.
func nodeKeyAndCSR(t *testing.T, node string) (keyPEM, csrPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}}}, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// issued waits until the CSR is auto-approved and signed and returns its certificate.
func issued(t *testing.T, s *testServer, name string) []byte {
	t.Helper()
	var cert []byte
	eventually(t, name+" approved and issued", func() error {
		got, err := s.client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(got.Status.Conditions) == 0 || got.Status.Conditions[0].Type != certificatesv1.CertificateApproved ||
			got.Status.Conditions[0].Reason != "AutoApproved" || len(got.Status.Certificate) == 0 {
			return fmt.Errorf("status %+v", got.Status.Conditions)
		}
		cert = got.Status.Certificate
		return nil
	})
	return cert
}

func pending(t *testing.T, s *testServer, name string) {
	t.Helper()
	got, err := s.client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Conditions) > 0 || len(got.Status.Certificate) > 0 {
		t.Errorf("CSR %s: conditions %+v, want it left pending", name, got.Status.Conditions)
	}
}

// TestBootstrapTokens: a created token authenticates as system:bootstrap:<id> until it expires, an
// expired one is refused and cleaned away, and the bootstrap identity can get a node its client
// certificate, which the node then renews on its own, but cannot read secrets.
func TestBootstrapTokens(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	secrets := s.client.CoreV1().Secrets(metav1.NamespaceSystem)

	expired := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-exp123", Namespace: metav1.NamespaceSystem},
		Type:       "bootstrap.kubernetes.io/token",
		StringData: map[string]string{
			"token-id": "exp123", "token-secret": "0123456789abcdef", "usage-bootstrap-authentication": "true",
			"expiration": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339),
		},
	}
	mustCreate(t, secrets.Create, expired)
	withGroups := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-grp123", Namespace: metav1.NamespaceSystem},
		Type:       "bootstrap.kubernetes.io/token",
		StringData: map[string]string{
			"token-id": "grp123", "token-secret": "0123456789abcdef", "usage-bootstrap-authentication": "true",
			"auth-extra-groups": "system:bootstrappers:workers",
		},
	}
	mustCreate(t, secrets.Create, withGroups)
	tok, err := jointoken.Create(ctx, s.client, clock.RealClock{}, time.Hour, jointoken.Binding{})
	if err != nil {
		t.Fatal(err)
	}
	bootstrap := tokenClient(t, s.testServer, tok.String())
	// The authenticator reads an informer: the token works once the server has seen its secret.
	eventually(t, "the new token authenticates", func() error {
		u, err := whoAmI(bootstrap)
		if err != nil {
			return err
		}
		if u.Username != "system:bootstrap:"+tok.ID || !slices.Equal(u.Groups, []string{"system:bootstrappers", "system:authenticated"}) {
			return fmt.Errorf("user %q groups %q", u.Username, u.Groups)
		}
		return nil
	})
	// Secrets created before the new token's are in the informer too.
	u, err := whoAmI(tokenClient(t, s.testServer, "grp123.0123456789abcdef"))
	if err != nil || u.Username != "system:bootstrap:grp123" || !slices.Equal(u.Groups, []string{"system:bootstrappers", "system:bootstrappers:workers", "system:authenticated"}) {
		t.Errorf("token with extra groups: %+v %v", u, err)
	}
	for name, token := range map[string]string{
		"expired":      "exp123.0123456789abcdef",
		"wrong secret": tok.ID + ".0000000000000000",
		"unknown id":   "zzzzzz.0123456789abcdef",
	} {
		if _, err := whoAmI(tokenClient(t, s.testServer, token)); !apierrors.IsUnauthorized(err) {
			t.Errorf("%s token: %v, want 401", name, err)
		}
	}
	eventually(t, "the cleaner deletes the expired token", func() error {
		_, err := secrets.Get(ctx, expired.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %v", err)
	})
	if _, err := secrets.Get(ctx, bootstraptokenSecretName(tok.ID), metav1.GetOptions{}); err != nil {
		t.Errorf("the cleaner touched an unexpired token: %v", err)
	}

	if _, err := bootstrap.CoreV1().Secrets(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("bootstrap identity lists kube-system secrets: %v, want 403", err)
	}
	if _, err := bootstrap.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, bootstraptokenSecretName(tok.ID), metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("bootstrap identity reads its own token secret: %v, want 403", err)
	}

	// Join: the bootstrap identity asks for node n1's client certificate.
	keyPEM, request := nodeKeyAndCSR(t, "n1")
	join := newCSR("n1-join", certificatesv1.KubeAPIServerClientKubeletSignerName, request)
	if _, err := bootstrap.CertificatesV1().CertificateSigningRequests().Create(ctx, join, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bootstrap identity creating a node client CSR: %v", err)
	}
	certPEM := issued(t, s.testServer, "n1-join")
	if _, err := bootstrap.CertificatesV1().CertificateSigningRequests().Get(ctx, "n1-join", metav1.GetOptions{}); err != nil {
		t.Errorf("bootstrap identity following its CSR: %v", err)
	}
	nodeConfig := rest.AnonymousClientConfig(s.config)
	nodeConfig.CertData, nodeConfig.KeyData = certPEM, keyPEM
	node := kubernetes.NewForConfigOrDie(nodeConfig)
	if u, err := whoAmI(node); err != nil || u.Username != "system:node:n1" || !slices.Contains(u.Groups, "system:nodes") {
		t.Fatalf("with the issued certificate: %+v %v", u, err)
	}

	// Renewal: the node, with its certificate, asks for a new one in its own name.
	_, request = nodeKeyAndCSR(t, "n1")
	renew := newCSR("n1-renew", certificatesv1.KubeAPIServerClientKubeletSignerName, request)
	if _, err := node.CertificatesV1().CertificateSigningRequests().Create(ctx, renew, metav1.CreateOptions{}); err != nil {
		t.Fatalf("node creating its renewal CSR: %v", err)
	}
	issued(t, s.testServer, "n1-renew")
	got, err := s.client.CertificatesV1().CertificateSigningRequests().Get(ctx, "n1-renew", metav1.GetOptions{})
	if err != nil || got.Spec.Username != "system:node:n1" {
		t.Errorf("renewal requested by %q (%v), want the node itself", got.Spec.Username, err)
	}
}

func bootstraptokenSecretName(id string) string { return "bootstrap-token-" + id }

// servingCSR is a kubelet serving request of node for the given DNS names and IPs.
func servingCSR(t *testing.T, name, node string, dnsNames []string, ips ...string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}}, DNSNames: dnsNames}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	csr := newCSR(name, certificatesv1.KubeletServingSignerName, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
	csr.Spec.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	return csr
}

// registerNode creates the Node with the given addresses, as its kubelet would.
func registerNode(t *testing.T, s *rbacServer, name string, addresses ...corev1.NodeAddress) {
	t.Helper()
	ctx := context.Background()
	n, err := s.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Addresses = addresses
	if _, err := s.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createAs(t *testing.T, c kubernetes.Interface, csr *certificatesv1.CertificateSigningRequest) {
	t.Helper()
	eventually(t, "creating "+csr.Name, func() error {
		_, err := c.CertificatesV1().CertificateSigningRequests().Create(context.Background(), csr, metav1.CreateOptions{})
		return err
	})
}

// TestKubeletServingApproval: with --approve-kubelet-serving a node's own serving CSR for names
// its Node shows is approved and signed, one for another name stays pending, and one that comes
// before its Node reports the names is approved once it does.
func TestKubeletServingApproval(t *testing.T) {
	s := startRBACServerWith(t, func(o *Options) { o.ApproveKubeletServing = true })
	ctx := context.Background()
	registerNode(t, s, "n1",
		corev1.NodeAddress{Type: corev1.NodeHostName, Address: "n1"},
		corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.0.2.1"})
	n1, n2 := nodeClient(t, s, "n1"), nodeClient(t, s, "n2")

	createAs(t, n1, servingCSR(t, "n1-evil", "n1", []string{"n1", "evil.example.com"}, "192.0.2.1"))
	createAs(t, n2, servingCSR(t, "n2-early", "n2", []string{"n2"}, "192.0.2.2"))
	// The kubernetes Service's ClusterIP (10.0.0.1 by default) is the API server's name, which
	// no node may have a certificate for, even one whose Node lists it.
	registerNode(t, s, "n3", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.1"})
	createAs(t, nodeClient(t, s, "n3"), servingCSR(t, "n3-clusterip", "n3", nil, "10.0.0.1"))
	createAs(t, n1, servingCSR(t, "n1-serving", "n1", []string{"n1"}, "192.0.2.1"))
	certPEM := issued(t, s.testServer, "n1-serving")
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "system:node:n1" || !slices.Equal(cert.DNSNames, []string{"n1"}) || !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		t.Errorf("certificate CN %q DNS %q usages %v", cert.Subject.CommonName, cert.DNSNames, cert.ExtKeyUsage)
	}
	// The approver works through CSRs in the order it sees them: it has judged the two before.
	pending(t, s.testServer, "n1-evil")
	pending(t, s.testServer, "n2-early")
	pending(t, s.testServer, "n3-clusterip")

	// First the Node shows only the IP (the DNS name n2 is not yet the node's), then its hostname
	// label: each change of its names has the approver look at its pending CSRs again.
	registerNode(t, s, "n2", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.0.2.2"})
	node2, err := s.client.CoreV1().Nodes().Get(ctx, "n2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node2.Labels = map[string]string{corev1.LabelHostname: "n2"}
	if _, err := s.client.CoreV1().Nodes().Update(ctx, node2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	issued(t, s.testServer, "n2-early")
	pending(t, s.testServer, "n1-evil")
}

// Without --approve-kubelet-serving no serving CSR is approved, however right.
func TestKubeletServingNotApprovedByDefault(t *testing.T) {
	s := startRBACServer(t)
	registerNode(t, s, "n1", corev1.NodeAddress{Type: corev1.NodeHostName, Address: "n1"})
	n1 := nodeClient(t, s, "n1")
	createAs(t, n1, servingCSR(t, "n1-serving", "n1", []string{"n1"}))
	// A renewal of n1's client certificate, created after, shows the approver has seen the first.
	_, request := nodeKeyAndCSR(t, "n1")
	createAs(t, n1, newCSR("n1-client", certificatesv1.KubeAPIServerClientKubeletSignerName, request))
	issued(t, s.testServer, "n1-client")
	pending(t, s.testServer, "n1-serving")
}

// waitEvent waits for an event on CSR name with the reason, and returns its message.
func waitEvent(t *testing.T, s *testServer, csr, reason string) string {
	t.Helper()
	var message string
	eventually(t, "event "+reason+" on "+csr, func() error {
		list, err := s.client.CoreV1().Events(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "CertificateSigningRequest" && e.InvolvedObject.Name == csr && e.Reason == reason {
				message = e.Message
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(list.Items))
	})
	return message
}

// TestNodeBoundBootstrapToken: a token made with --node-name n1 --single-use gets n1 its client
// certificate, while its CSR for another node, and a second one for n1, stay pending with an
// event saying why (beyond upstream, which approves any node for any bootstrap token).
func TestNodeBoundBootstrapToken(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	tok, err := jointoken.Create(ctx, s.client, clock.RealClock{}, time.Hour, jointoken.Binding{NodeName: "n1", SingleUse: true})
	if err != nil {
		t.Fatal(err)
	}
	bootstrap := tokenClient(t, s.testServer, tok.String())
	_, request := nodeKeyAndCSR(t, "n2")
	eventually(t, "the bootstrap identity asks for node n2's certificate", func() error {
		_, err := bootstrap.CertificatesV1().CertificateSigningRequests().Create(ctx, newCSR("n2-join", certificatesv1.KubeAPIServerClientKubeletSignerName, request), metav1.CreateOptions{})
		return err
	})
	msg := waitEvent(t, s.testServer, "n2-join", "BootstrapTokenNodeMismatch")
	if want := fmt.Sprintf(`bootstrap token %s may join only node "n1"`, tok.ID); !strings.Contains(msg, want) || !strings.Contains(msg, `"system:node:n2"`) {
		t.Errorf("event message %q, want it to say %q and name system:node:n2", msg, want)
	}
	pending(t, s.testServer, "n2-join")

	_, request = nodeKeyAndCSR(t, "n1")
	if _, err := bootstrap.CertificatesV1().CertificateSigningRequests().Create(ctx, newCSR("n1-join", certificatesv1.KubeAPIServerClientKubeletSignerName, request), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	issued(t, s.testServer, "n1-join")
	// The agent collects its certificate with the token: the grace keeps the token until it has.
	if _, err := bootstrap.CertificatesV1().CertificateSigningRequests().Get(ctx, "n1-join", metav1.GetOptions{}); err != nil {
		t.Errorf("the bootstrap identity collecting its certificate: %v", err)
	}

	_, request = nodeKeyAndCSR(t, "n1")
	if _, err := bootstrap.CertificatesV1().CertificateSigningRequests().Create(ctx, newCSR("n1-again", certificatesv1.KubeAPIServerClientKubeletSignerName, request), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, s.testServer, "n1-again", "BootstrapTokenUsed")
	pending(t, s.testServer, "n1-again")
}
