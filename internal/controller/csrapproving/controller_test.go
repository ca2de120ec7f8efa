package csrapproving

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
)

func servingCSR(t *testing.T, name, node string, dnsNames ...string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}}, DNSNames: dnsNames,
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeletServingSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
			Username:   "system:node:" + node, Groups: []string{"system:nodes", "system:authenticated"},
		},
	}
}

func node(name string, addresses ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, a := range addresses {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: a})
	}
	return n
}

// noOpinion is an authorizer that allows nothing: the serving approval asks none.
var noOpinion = authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionNoOpinion, "", nil
})

func approvals(client *fake.Clientset) []string {
	var names []string
	for _, a := range client.Actions() {
		if u, ok := a.(k8stesting.UpdateActionImpl); ok && u.Subresource == "approval" {
			csr := u.Object.(*certificatesv1.CertificateSigningRequest)
			last := csr.Status.Conditions[len(csr.Status.Conditions)-1]
			if last.Type == certificatesv1.CertificateApproved && last.Status == corev1.ConditionTrue && last.Reason == "AutoApproved" {
				names = append(names, csr.Name)
			}
		}
	}
	return names
}

func TestSyncServing(t *testing.T) {
	cases := []struct {
		name    string
		enabled bool
		csr     *certificatesv1.CertificateSigningRequest
		nodes   []runtime.Object
		approve bool
	}{
		{"on, names of the node", true, servingCSR(t, "c", "n1", "n1"), []runtime.Object{node("n1", "n1")}, true},
		{"on, a name not the node's", true, servingCSR(t, "c", "n1", "n1", "other"), []runtime.Object{node("n1", "n1")}, false},
		{"on, no such node", true, servingCSR(t, "c", "n1", "n1"), []runtime.Object{node("n2", "n1")}, false},
		{"on, already denied", true, func() *certificatesv1.CertificateSigningRequest {
			c := servingCSR(t, "c", "n1", "n1")
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue}}
			return c
		}(), []runtime.Object{node("n1", "n1")}, false},
		{"off", false, servingCSR(t, "c", "n1", "n1"), []runtime.Object{node("n1", "n1")}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(append([]runtime.Object{tc.csr}, tc.nodes...)...)
			factory := informers.NewSharedInformerFactory(client, 0)
			cfg := Config{ApproveKubeletServing: tc.enabled, Secrets: factory.Core().V1().Secrets(), Recorder: record.NewFakeRecorder(10)}
			if tc.enabled {
				cfg.Nodes = factory.Core().V1().Nodes()
			}
			c, err := New(client, noOpinion, factory.Certificates().V1().CertificateSigningRequests(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.queue.ShutDown()
			if err := factory.Certificates().V1().CertificateSigningRequests().Informer().GetStore().Add(tc.csr); err != nil {
				t.Fatal(err)
			}
			for _, n := range tc.nodes {
				if err := factory.Core().V1().Nodes().Informer().GetStore().Add(n); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.sync(context.Background(), tc.csr.Name); err != nil {
				t.Fatal(err)
			}
			if got := len(approvals(client)) == 1; got != tc.approve {
				t.Errorf("approved %v, want %v (actions %v)", got, tc.approve, client.Actions())
			}
		})
	}
}

// A serving CSR left pending for want of its Node is approved once the Node appears with its
// names, and one whose Node then changes its names is looked at again.
func TestServingCSRFollowsItsNode(t *testing.T) {
	csr := servingCSR(t, "c", "n1", "n1")
	client := fake.NewClientset(csr)
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, noOpinion, factory.Certificates().V1().CertificateSigningRequests(), Config{
		ApproveKubeletServing: true, Nodes: factory.Core().V1().Nodes(), Secrets: factory.Core().V1().Secrets(), Recorder: record.NewFakeRecorder(10),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	go c.Run(ctx, 1)
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("%s: actions %v", what, client.Actions())
		}
	}
	// The Node first shows another name: the CSR stays pending.
	if _, err := client.CoreV1().Nodes().Create(ctx, node("n1", "n1.other"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the node is in the cache", func() bool {
		_, err := c.nodes.Get("n1")
		return err == nil
	})
	if len(approvals(client)) != 0 {
		t.Fatalf("approved for a node without its name")
	}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, node("n1", "n1.other", "n1"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("approved once the node shows the name", func() bool { return len(approvals(client)) == 1 })
}
