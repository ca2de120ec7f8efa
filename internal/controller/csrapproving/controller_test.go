package csrapproving

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
	"strings"
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

	"github.com/idplane/idplane/internal/certificates"
	"github.com/idplane/idplane/internal/testing/testkeys"
)

func servingCSR(t *testing.T, name, node string, dnsNames ...string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	return servingCSRWithIPs(t, name, node, dnsNames, nil)
}

func servingCSRWithIPs(t *testing.T, name, node string, dnsNames []string, ips []net.IP) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}}, DNSNames: dnsNames, IPAddresses: ips,
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

// TestServingNamesOfOthersStayPending replays the review's attack through the controller: a node
// that put localhost, 127.0.0.1, another node's name and the API server's in-cluster name in its
// own status asks for them. The CSR is neither approved nor denied, and one event on it names
// every refused name; the node's request for its own name alone is approved.
func TestServingNamesOfOthersStayPending(t *testing.T) {
	attacker := node("n1", "n1", "localhost", "n2", "kubernetes.default.svc", "apiserver.example")
	attacker.Status.Addresses = append(attacker.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "127.0.0.1"})
	victim := node("n2", "n2")
	evil := servingCSRWithIPs(t, "evil", "n1", []string{"n1", "localhost", "n2", "kubernetes.default.svc", "apiserver.example"}, []net.IP{net.ParseIP("127.0.0.1")})
	own := servingCSR(t, "own", "n1", "n1")
	client := fake.NewClientset(evil, own, attacker, victim)
	factory := informers.NewSharedInformerFactory(client, 0)
	recorder := record.NewFakeRecorder(10)
	c, err := New(client, noOpinion, factory.Certificates().V1().CertificateSigningRequests(), Config{
		ApproveKubeletServing: true, Nodes: factory.Core().V1().Nodes(), Secrets: factory.Core().V1().Secrets(), Recorder: recorder,
		APIServer: certificates.ServerNames{DNS: []string{"apiserver.example"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.queue.ShutDown()
	for _, obj := range []*certificatesv1.CertificateSigningRequest{evil, own} {
		if err := factory.Certificates().V1().CertificateSigningRequests().Informer().GetStore().Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []*corev1.Node{attacker, victim} {
		if err := factory.Core().V1().Nodes().Informer().GetStore().Add(n); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"evil", "own"} {
		if err := c.sync(context.Background(), name); err != nil {
			t.Fatal(err)
		}
	}
	if got := approvals(client); len(got) != 1 || got[0] != "own" {
		t.Errorf("approved %q, want only the CSR for the node's own name", got)
	}
	for _, a := range client.Actions() {
		if u, ok := a.(k8stesting.UpdateActionImpl); ok && u.Subresource == "approval" && u.Object.(*certificatesv1.CertificateSigningRequest).Name == "evil" {
			t.Errorf("the refused CSR was answered: %+v", u.Object)
		}
	}
	if len(recorder.Events) != 1 {
		t.Fatalf("%d events, want 1", len(recorder.Events))
	}
	event := <-recorder.Events
	for _, want := range []string{"Warning KubeletServingNameRefused ", `DNS name "localhost": a loopback`, `DNS name "n2": claimed by Node "n2"`,
		`DNS name "kubernetes.default.svc": the API server's in-cluster name`, `DNS name "apiserver.example": covered by the API server's serving certificate`,
		"IP address 127.0.0.1: a loopback"} {
		if !strings.Contains(event, want) {
			t.Errorf("event %q does not say %q", event, want)
		}
	}
}

// An event names as many refused names as its message holds (the API refuses longer ones), then
// how many more.
func TestRefusedMessage(t *testing.T) {
	var many []string
	for i := range 100 {
		many = append(many, fmt.Sprintf(`DNS name "n%02d.localhost": a loopback name or address`, i))
	}
	long := `DNS name "` + strings.Repeat("a", 2000) + `": a wildcard`
	cases := []struct {
		name  string
		names []string
		want  []string
	}{
		{"one", many[:1], []string{many[0]}},
		{"all that fit", many[:3], []string{many[0], many[1], many[2]}},
		{"too many", many, []string{many[0], many[17] + "; and 82 more"}},
		{"one too long", []string{long, many[0]}, []string{"aaa...", "Left pending"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := refusedMessage(tc.names)
			if len(got) > maxEventMessage {
				t.Errorf("message of %d bytes, over %d", len(got), maxEventMessage)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("message %q does not hold %q", got, w)
				}
			}
		})
	}
}

// allowAll lets every requester self-request, so that only the request decides.
var allowAll = authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionAllow, "", nil
})

// TestKubeletClientUsageSetsPerKeyType: a kubelet client CSR is auto-approved for the design's
// usages and for them without key encipherment, whatever the key type, and for nothing else.
func TestKubeletClientUsageSetsPerKeyType(t *testing.T) {
	const (
		ke = certificatesv1.UsageKeyEncipherment
		ds = certificatesv1.UsageDigitalSignature
		ca = certificatesv1.UsageClientAuth
	)
	sets := []struct {
		name    string
		usages  []certificatesv1.KeyUsage
		approve bool
	}{
		{"design set", []certificatesv1.KeyUsage{ke, ds, ca}, true},
		{"without key encipherment", []certificatesv1.KeyUsage{ds, ca}, true},
		{"client auth alone", []certificatesv1.KeyUsage{ca}, false},
		{"server auth too", []certificatesv1.KeyUsage{ke, ds, ca, certificatesv1.UsageServerAuth}, false},
	}
	for _, keyType := range testkeys.Types() {
		key := testkeys.Key(t, keyType)
		for _, set := range sets {
			t.Run(keyType+"/"+set.name, func(t *testing.T) {
				der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
					Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}},
				}, key)
				if err != nil {
					t.Fatal(err)
				}
				csr := &certificatesv1.CertificateSigningRequest{
					ObjectMeta: metav1.ObjectMeta{Name: "c"},
					Spec: certificatesv1.CertificateSigningRequestSpec{
						Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
						SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName, Usages: set.usages,
						Username: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"},
					},
				}
				client := fake.NewClientset(csr)
				factory := informers.NewSharedInformerFactory(client, 0)
				c, err := New(client, allowAll, factory.Certificates().V1().CertificateSigningRequests(), Config{Secrets: factory.Core().V1().Secrets(), Recorder: record.NewFakeRecorder(10)})
				if err != nil {
					t.Fatal(err)
				}
				defer c.queue.ShutDown()
				if err := factory.Certificates().V1().CertificateSigningRequests().Informer().GetStore().Add(csr); err != nil {
					t.Fatal(err)
				}
				if err := c.sync(context.Background(), csr.Name); err != nil {
					t.Fatal(err)
				}
				if got := len(approvals(client)) == 1; got != set.approve {
					t.Errorf("approved %v, want %v", got, set.approve)
				}
			})
		}
	}
}
