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
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/idplane/idplane/internal/pki"
)

// csrPEM is a fresh P-256 certificate request for subject cn/orgs.
func csrPEM(t *testing.T, cn string, orgs ...string) []byte {
	t.Helper()
	return csrPEMWithSANs(t, cn, orgs, nil)
}

// csrPEMWithSANs is csrPEM with DNS names.
func csrPEMWithSANs(t *testing.T, cn string, orgs, dnsNames []string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}, DNSNames: dnsNames}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func newCSR(name, signer string, request []byte) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: request, SignerName: signer, ExpirationSeconds: ptr(int32(3600)),
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}
}

// grant gives user the rules through a ClusterRole and ClusterRoleBinding of the same name.
func grant(t *testing.T, s *rbacServer, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	name := "test:" + user
	mustCreate(t, s.client.RbacV1().ClusterRoles().Create, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules})
	mustCreate(t, s.client.RbacV1().ClusterRoleBindings().Create, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	})
}

func csrRule(verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests", "certificatesigningrequests/approval", "certificatesigningrequests/status"}, Verbs: verbs}
}

func signerRule(verb, name string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"}, ResourceNames: []string{name}, Verbs: []string{verb}}
}

// TestCertificateSigningRequestFlow is the design's flow for a custom signer: a user asks, an
// approver approves through /approval, an external signer answers through /status; each step
// refused to whoever may not take it.
func TestCertificateSigningRequestFlow(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	const signer = "example.com/my-signer"
	grant(t, s, "alice", csrRule("create", "get", "list"))
	grant(t, s, "bob", csrRule("get", "update"))
	grant(t, s, "approver", csrRule("get", "update"), signerRule("approve", "example.com/*"))
	grant(t, s, "signer", csrRule("get", "update"), signerRule("sign", signer))
	alice, bob, approver, signerClient := s.user(t, "alice", "devs"), s.user(t, "bob"), s.user(t, "approver"), s.user(t, "signer")

	forged := newCSR("alice-1", signer, csrPEM(t, "alice"))
	forged.Spec.Username, forged.Spec.Groups = "mallory", []string{"system:masters"}
	var csr *certificatesv1.CertificateSigningRequest
	eventually(t, "alice creates a CSR", func() error {
		var err error
		csr, err = alice.CertificatesV1().CertificateSigningRequests().Create(ctx, forged, metav1.CreateOptions{})
		return err
	})
	if csr.Spec.Username != "alice" || !strings.Contains(strings.Join(csr.Spec.Groups, ","), "devs") || strings.Contains(strings.Join(csr.Spec.Groups, ","), "system:masters") {
		t.Errorf("requester recorded as %q %v, want alice in devs and never the forged values", csr.Spec.Username, csr.Spec.Groups)
	}

	for _, tc := range []struct {
		name, field string
		csr         *certificatesv1.CertificateSigningRequest
	}{
		{"garbage request", "spec.request", newCSR("bad-1", signer, []byte("not a CSR"))},
		{"legacy-unknown signer", "spec.signerName", newCSR("bad-2", "kubernetes.io/legacy-unknown", csrPEM(t, "x"))},
		{"signer without a path", "spec.signerName", newCSR("bad-3", "example.com", csrPEM(t, "x"))},
		{"huge request", "spec.request", newCSR("bad-4", signer, make([]byte, 300*1024))},
	} {
		_, err := alice.CertificatesV1().CertificateSigningRequests().Create(ctx, tc.csr, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: got %v, want 422 naming %s", tc.name, err, tc.field)
		}
	}

	approve := func(c *certificatesv1.CertificateSigningRequest) *certificatesv1.CertificateSigningRequest {
		c = c.DeepCopy()
		c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test", Message: "approved in a test",
		})
		return c
	}
	_, err := bob.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, approve(csr), metav1.UpdateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `user "bob" not permitted to approve requests with signerName "example.com/my-signer"`) {
		t.Errorf("bob approving: got %v, want 403 naming the verb, signer and user", err)
	}
	_, err = signerClient.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, approve(csr), metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("approving through /status: got %v, want 422", err)
	}
	approved, err := approver.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, approve(csr), metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("approver approving through the domain wildcard: %v", err)
	}

	certPEM, _, err := pki.Issue(s.ca, pki.IssueRequest{CommonName: "alice", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, Validity: time.Hour, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	issue := func(c *certificatesv1.CertificateSigningRequest, cert []byte) *certificatesv1.CertificateSigningRequest {
		c = c.DeepCopy()
		c.Status.Certificate = cert
		return c
	}
	_, err = bob.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, issue(approved, certPEM), metav1.UpdateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "not permitted to sign") {
		t.Errorf("bob signing: got %v, want 403", err)
	}
	_, err = signerClient.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, issue(approved, []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")), metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "status.certificate") {
		t.Errorf("signing with an unparseable certificate: got %v, want 422 naming status.certificate", err)
	}
	issued, err := signerClient.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, issue(approved, certPEM), metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("the signer issuing: %v", err)
	}
	if string(issued.Status.Certificate) != string(certPEM) {
		t.Error("issued certificate not stored")
	}
	other, _, err := pki.Issue(s.ca, pki.IssueRequest{CommonName: "mallory", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, Validity: time.Hour, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := signerClient.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, issue(issued, other), metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("replacing an issued certificate: got %v, want 422", err)
	}
	if _, err := approver.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, issued.Name, func() *certificatesv1.CertificateSigningRequest {
		c := issued.DeepCopy()
		c.Status.Conditions = nil
		return c
	}(), metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("removing the Approved condition: got %v, want 422", err)
	}

	list, err := alice.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{FieldSelector: "spec.signerName=" + signer})
	if err != nil || len(list.Items) != 1 {
		t.Errorf("listing by spec.signerName: %v, %d items, want 1", err, len(list.Items))
	}
}

// TestCertificateSubjectAndNodeRestrictions: nobody gets system:masters from the
// kube-apiserver-client signer, and a node asks only for its own kubelet certificates.
func TestCertificateSubjectAndNodeRestrictions(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	masters := newCSR("masters", certificatesv1.KubeAPIServerClientSignerName, csrPEM(t, "eve", "system:masters"))
	_, err := s.client.CertificatesV1().CertificateSigningRequests().Create(ctx, masters, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "system:masters") {
		t.Errorf("a system:masters client CSR: got %v, want 403", err)
	}
	node1 := nodeClient(t, s, "node1")
	own := newCSR("node1-client", certificatesv1.KubeAPIServerClientKubeletSignerName, csrPEM(t, "system:node:node1", "system:nodes"))
	own.Spec.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	if _, err := node1.CertificatesV1().CertificateSigningRequests().Create(ctx, own, metav1.CreateOptions{}); err != nil {
		t.Errorf("node1 asking for its own client certificate: %v", err)
	}
	theirs := newCSR("node2-client", certificatesv1.KubeAPIServerClientKubeletSignerName, csrPEM(t, "system:node:node2", "system:nodes"))
	if _, err := node1.CertificatesV1().CertificateSigningRequests().Create(ctx, theirs, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node1 asking for node2's client certificate: got %v, want 403", err)
	}
}

// TestBuiltInSigners: approved CSRs of the kubernetes.io signers are signed as their signer's
// rules allow, client certificates by the cluster CA and kubelet serving certificates by the
// kubelet-serving CA alone, or fail naming the broken rule; other signers are left alone.
func TestBuiltInSigners(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	csrs := s.client.CertificatesV1().CertificateSigningRequests()
	approveAndWait := func(c *certificatesv1.CertificateSigningRequest, done func(*certificatesv1.CertificateSigningRequest) bool) *certificatesv1.CertificateSigningRequest {
		t.Helper()
		if _, err := csrs.Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The kubelet-client approver may approve first (the admin may have node credentials).
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			current, err := csrs.Get(ctx, c.Name, metav1.GetOptions{})
			if err != nil || len(current.Status.Conditions) > 0 {
				return err
			}
			current.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test"}}
			_, err = csrs.UpdateApproval(ctx, c.Name, current, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		var got *certificatesv1.CertificateSigningRequest
		eventually(t, "the signing controller answers "+c.Name, func() error {
			got, err = csrs.Get(ctx, c.Name, metav1.GetOptions{})
			if err == nil && !done(got) {
				return fmt.Errorf("status: %+v", got.Status.Conditions)
			}
			return err
		})
		return got
	}
	issued := func(c *certificatesv1.CertificateSigningRequest) bool { return len(c.Status.Certificate) > 0 }
	failed := func(c *certificatesv1.CertificateSigningRequest) bool {
		for _, cond := range c.Status.Conditions {
			if cond.Type == certificatesv1.CertificateFailed {
				return true
			}
		}
		return false
	}

	// An external signer's CSR, approved first: events reach the controller in order, so once the
	// kubelet CSR approved after it is signed, the controller has seen it and left it alone.
	external := newCSR("external", "example.com/other", csrPEM(t, "alice"))
	created, err := csrs.Create(ctx, external, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test"}}
	if _, err := csrs.UpdateApproval(ctx, created.Name, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubelet := newCSR("node1-client", certificatesv1.KubeAPIServerClientKubeletSignerName, csrPEM(t, "system:node:node1", "system:nodes"))
	got := approveAndWait(kubelet, issued)
	block, _ := pem.Decode(got.Status.Certificate)
	if block == nil {
		t.Fatalf("certificate is not PEM: %q", got.Status.Certificate)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(s.ca.Cert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("issued certificate does not verify against the cluster CA for client auth: %v", err)
	}
	if cert.Subject.CommonName != "system:node:node1" || cert.IsCA || len(cert.DNSNames) > 0 {
		t.Errorf("issued certificate: CN %q, CA %v, DNS %v", cert.Subject.CommonName, cert.IsCA, cert.DNSNames)
	}
	if lifetime := cert.NotAfter.Sub(cert.NotBefore); lifetime < time.Hour || lifetime > time.Hour+10*time.Minute {
		t.Errorf("lifetime %v, want the hour asked for plus the backdate", lifetime)
	}

	// The design's other two built-in flows, approved by hand: a kubelet serving certificate for
	// the node's names, and an API client certificate for a user.
	verify := func(c *certificatesv1.CertificateSigningRequest, roots *x509.CertPool, usage x509.ExtKeyUsage, dnsName string) *x509.Certificate {
		t.Helper()
		block, _ := pem.Decode(c.Status.Certificate)
		if block == nil {
			t.Fatalf("%s: certificate is not PEM", c.Name)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: dnsName, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("%s: does not verify against its signer's CA: %v", c.Name, err)
		}
		return cert
	}
	servingCA, err := pki.ParseCertificate(readFile(t, filepath.Join(s.dataDir, "pki", "kubelet-serving-ca.crt")))
	if err != nil {
		t.Fatal(err)
	}
	servingRoots := x509.NewCertPool()
	servingRoots.AddCert(servingCA)
	serving := newCSR("node1-serving", certificatesv1.KubeletServingSignerName, csrPEMWithSANs(t, "system:node:node1", []string{"system:nodes"}, []string{"node1.example.com"}))
	serving.Spec.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	servingCert := verify(approveAndWait(serving, issued), servingRoots, x509.ExtKeyUsageServerAuth, "node1.example.com")
	if len(servingCert.ExtKeyUsage) != 1 || servingCert.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		t.Errorf("serving certificate usages %v, want server auth only", servingCert.ExtKeyUsage)
	}
	if _, err := servingCert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "node1.example.com"}); err == nil {
		t.Error("a kubelet serving certificate verifies against the cluster CA, which clients trust for the API server")
	}
	apiClient := newCSR("alice-client", certificatesv1.KubeAPIServerClientSignerName, csrPEM(t, "alice", "devs"))
	if cert := verify(approveAndWait(apiClient, issued), roots, x509.ExtKeyUsageClientAuth, ""); cert.Subject.CommonName != "alice" || cert.Subject.Organization[0] != "devs" {
		t.Errorf("API client certificate subject %v", cert.Subject)
	}

	serverUsage := newCSR("wrong-usage", certificatesv1.KubeAPIServerClientSignerName, csrPEM(t, "alice"))
	serverUsage.Spec.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageServerAuth}
	got = approveAndWait(serverUsage, failed)
	if len(got.Status.Certificate) > 0 || !strings.Contains(got.Status.Conditions[len(got.Status.Conditions)-1].Message, `usage "server auth" is not allowed`) {
		t.Errorf("a client signer asked for server auth: %+v", got.Status)
	}

	if got, err := csrs.Get(ctx, "external", metav1.GetOptions{}); err != nil || len(got.Status.Certificate) > 0 || failed(got) {
		t.Errorf("a CSR of an external signer was answered: %v %+v", err, got.Status)
	}

	sum := scrapeMetrics(t, s.testServer)
	for _, want := range []struct {
		name   string
		labels map[string]string
	}{
		{"idplane_certificates_signer_issued_total", map[string]string{"signer": certificatesv1.KubeAPIServerClientKubeletSignerName}},
		{"idplane_certificates_signer_failed_total", map[string]string{"signer": certificatesv1.KubeAPIServerClientSignerName}},
		{"idplane_certificates_signer_signing_duration_seconds_count", map[string]string{"signer": certificatesv1.KubeAPIServerClientKubeletSignerName}},
		{"apiserver_certificates_registry_csr_requested_duration_total", map[string]string{"signerName": "other"}},
		{"apiserver_certificates_registry_csr_honored_duration_total", map[string]string{"signerName": certificatesv1.KubeAPIServerClientKubeletSignerName}},
	} {
		if v, ok := sum(want.name, want.labels); !ok || v <= 0 {
			t.Errorf("%s%v = %v (found %v); want > 0", want.name, want.labels, v, ok)
		}
	}
}

// TestKubeletClientAutoApproval: a node renewing its own client certificate and a bootstrap
// identity asking for a new node's are approved and signed; anyone else waits for a human.
func TestKubeletClientAutoApproval(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	grant(t, s, "system:bootstrap:abc123", csrRule("create", "get"))
	grant(t, s, "alice", csrRule("create", "get"))
	kubeletCSR := func(name, node string) *certificatesv1.CertificateSigningRequest {
		return newCSR(name, certificatesv1.KubeAPIServerClientKubeletSignerName, csrPEM(t, "system:node:"+node, "system:nodes"))
	}
	requests := []struct {
		client kubernetes.Interface
		csr    *certificatesv1.CertificateSigningRequest
	}{
		{s.user(t, "alice"), kubeletCSR("by-alice", "node9")},
		{nodeClient(t, s, "node1"), kubeletCSR("node1-renewal", "node1")},
		{s.user(t, "system:bootstrap:abc123", "system:bootstrappers"), kubeletCSR("node7-join", "node7")},
	}
	for _, r := range requests {
		eventually(t, "creating "+r.csr.Name, func() error {
			_, err := r.client.CertificatesV1().CertificateSigningRequests().Create(ctx, r.csr, metav1.CreateOptions{})
			return err
		})
	}
	for _, name := range []string{"node1-renewal", "node7-join"} {
		eventually(t, name+" approved and issued", func() error {
			got, err := s.client.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if len(got.Status.Conditions) == 0 || got.Status.Conditions[0].Reason != "AutoApproved" || len(got.Status.Certificate) == 0 {
				return fmt.Errorf("status %+v", got.Status.Conditions)
			}
			return nil
		})
	}
	// alice's CSR was created before the two that were approved, so the approver has seen it.
	got, err := s.client.CertificatesV1().CertificateSigningRequests().Get(ctx, "by-alice", metav1.GetOptions{})
	if err != nil || len(got.Status.Conditions) > 0 {
		t.Errorf("a kubelet CSR from a user without nodeclient rights: %v %+v, want it left pending", err, got.Status.Conditions)
	}
}

// TestCertificateSigningRequestsV1beta1: v1beta1 is served beside v1 over the same objects, with
// its defaults (the signer guessed from the request, condition status True) and its looser rule
// for kubernetes.io/legacy-unknown.
func TestCertificateSigningRequestsV1beta1(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	beta := s.client.CertificatesV1beta1().CertificateSigningRequests()
	newBeta := func(name string, request []byte, usages ...certificatesv1beta1.KeyUsage) *certificatesv1beta1.CertificateSigningRequest {
		return &certificatesv1beta1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: certificatesv1beta1.CertificateSigningRequestSpec{Request: request, Usages: usages}}
	}
	cases := []struct {
		name, wantSigner string
		csr              *certificatesv1beta1.CertificateSigningRequest
	}{
		{"kubelet client", certificatesv1.KubeAPIServerClientKubeletSignerName,
			newBeta("beta-client", csrPEM(t, "system:node:n5", "system:nodes"), certificatesv1beta1.UsageDigitalSignature, certificatesv1beta1.UsageClientAuth)},
		{"anything else", "kubernetes.io/legacy-unknown",
			newBeta("beta-other", csrPEM(t, "alice"), certificatesv1beta1.UsageDigitalSignature, certificatesv1beta1.UsageClientAuth)},
	}
	for _, tc := range cases {
		if _, err := beta.Create(ctx, tc.csr, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: creating through v1beta1: %v", tc.name, err)
		}
		got, err := s.client.CertificatesV1().CertificateSigningRequests().Get(ctx, tc.csr.Name, metav1.GetOptions{})
		if err != nil || got.Spec.SignerName != tc.wantSigner || got.Spec.Username != "idplane-admin" {
			t.Errorf("%s read through v1: %v, signer %q user %q, want signer %q", tc.name, err, got.Spec.SignerName, got.Spec.Username, tc.wantSigner)
		}
	}
	other, err := beta.Get(ctx, "beta-other", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other.Status.Conditions = []certificatesv1beta1.CertificateSigningRequestCondition{{Type: certificatesv1beta1.CertificateApproved, Reason: "Test"}}
	approved, err := beta.UpdateApproval(ctx, other, metav1.UpdateOptions{})
	if err != nil || approved.Status.Conditions[0].Status != corev1.ConditionTrue {
		t.Errorf("approving through v1beta1 without a condition status: %v, %+v, want status defaulted to True", err, approved)
	}
	list, err := beta.List(ctx, metav1.ListOptions{FieldSelector: "spec.signerName=kubernetes.io/legacy-unknown"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "beta-other" {
		t.Errorf("v1beta1 list by signer: %v %+v", err, list)
	}
}

// TestClusterTrustBundles: the built-in signers' CAs are published as signer-linked bundles, and
// publishing a bundle for a signer needs "attest" on it.
func TestClusterTrustBundles(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	bundles := s.client.CertificatesV1().ClusterTrustBundles()
	name := "kubernetes.io:kube-apiserver-client:idplane"
	eventually(t, "the kube-apiserver-client CA is published", func() error {
		b, err := bundles.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if b.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName || b.Spec.TrustBundle != string(s.ca.CertPEM) {
			return fmt.Errorf("bundle %+v, want the cluster CA for %s", b.Spec, certificatesv1.KubeAPIServerClientSignerName)
		}
		return nil
	})
	list, err := bundles.List(ctx, metav1.ListOptions{FieldSelector: "spec.signerName=" + certificatesv1.KubeletServingSignerName})
	if err != nil || len(list.Items) != 1 {
		t.Errorf("bundles of the kubelet-serving signer: %v, %d, want 1", err, len(list.Items))
	} else if servingCA := readFile(t, filepath.Join(s.dataDir, "pki", "kubelet-serving-ca.crt")); list.Items[0].Spec.TrustBundle != string(servingCA) {
		t.Errorf("the kubelet-serving bundle holds %q, want the kubelet-serving CA %q", list.Items[0].Spec.TrustBundle, servingCA)
	}

	grant(t, s, "carol", rbacv1.PolicyRule{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"clustertrustbundles"}, Verbs: []string{"create"}})
	carol := s.user(t, "carol")
	linked := &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "example.com:s:carol"},
		Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/s", TrustBundle: string(s.ca.CertPEM)}}
	eventually(t, "carol may create bundles", func() error {
		_, err := carol.CertificatesV1().ClusterTrustBundles().Create(ctx, &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "carol-unlinked"},
			Spec: certificatesv1.ClusterTrustBundleSpec{TrustBundle: string(s.ca.CertPEM)}}, metav1.CreateOptions{})
		return err
	})
	if _, err := carol.CertificatesV1().ClusterTrustBundles().Create(ctx, linked, metav1.CreateOptions{}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "attest") {
		t.Errorf("carol linking a bundle to a signer: got %v, want 403 naming attest", err)
	}
	for _, tc := range []struct {
		name string
		b    *certificatesv1.ClusterTrustBundle
	}{
		{"name without the signer prefix", &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "wrong"}, Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/s", TrustBundle: string(s.ca.CertPEM)}}},
		{"a leaf certificate", &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "leaf"}, Spec: certificatesv1.ClusterTrustBundleSpec{TrustBundle: func() string {
			c, _, err := pki.Issue(s.ca, pki.IssueRequest{CommonName: "leaf", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, Validity: time.Hour, Now: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			return string(c)
		}()}}},
		{"no PEM", &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "junk"}, Spec: certificatesv1.ClusterTrustBundleSpec{TrustBundle: "junk"}}},
	} {
		if _, err := bundles.Create(ctx, tc.b, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("%s: got %v, want 422", tc.name, err)
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
