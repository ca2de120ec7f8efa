package pods

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// certHarness runs managers, one after another, over one root and one fake clientset that
// names the requests made and counts them.
type certHarness struct {
	t      *testing.T
	client *fake.Clientset
	root   string
	events *record.FakeRecorder
	stop   func()

	mu      sync.Mutex
	creates int
}

func newCertHarness(t *testing.T, objects ...runtime.Object) *certHarness {
	objects = append(objects,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", UID: "sa-uid"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}})
	h := &certHarness{t: t, client: fake.NewClientset(objects...), root: t.TempDir(), events: record.NewFakeRecorder(100)}
	h.client.PrependReactor("create", "podcertificaterequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*certificatesv1.PodCertificateRequest)
		h.mu.Lock()
		defer h.mu.Unlock()
		h.creates++
		r.Name = r.GenerateName + strings.Repeat("x", h.creates)
		r.CreationTimestamp = metav1.Now()
		return false, nil, nil
	})
	h.start()
	t.Cleanup(func() { h.stop() })
	return h
}

func (h *certHarness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	m := New(Config{NodeName: "n1", RootDir: h.root, Client: h.client, Recorder: h.events, Clock: clock.RealClock{}, Workers: 1})
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := m.Run(ctx); err != nil {
			h.t.Errorf("Run: %v", err)
		}
	}()
	h.stop = func() { cancel(); <-done }
}

func (h *certHarness) condition(p *corev1.Pod) *corev1.PodCondition {
	return (&harness{client: h.client}).condition(h.t, p)
}

func (h *certHarness) createCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.creates
}

// pending returns the requests not yet answered, waiting until there are n.
func (h *certHarness) pending(n int) []certificatesv1.PodCertificateRequest {
	h.t.Helper()
	var out []certificatesv1.PodCertificateRequest
	eventually(h.t, "the agent's requests", func() bool {
		l, err := h.client.CertificatesV1().PodCertificateRequests("ns").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		out = out[:0]
		for _, r := range l.Items {
			if len(r.Status.Conditions) == 0 {
				out = append(out, r)
			}
		}
		return len(out) == n
	})
	return out
}

func (h *certHarness) answer(r certificatesv1.PodCertificateRequest, st certificatesv1.PodCertificateRequestStatus) {
	h.t.Helper()
	r.Status = st
	if _, err := h.client.CertificatesV1().PodCertificateRequests("ns").UpdateStatus(context.Background(), &r, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// issue signs r for the key its stub request carries, for two hours from now.
func (h *certHarness) issue(r certificatesv1.PodCertificateRequest) {
	h.t.Helper()
	csr, err := x509.ParseCertificateRequest(r.Spec.StubPKCS10Request)
	if err != nil {
		h.t.Fatal(err)
	}
	nb := time.Now().Truncate(time.Second).Add(-time.Minute)
	h.answer(r, certificatesv1.PodCertificateRequestStatus{
		Conditions: []metav1.Condition{{Type: certificatesv1.PodCertificateRequestConditionTypeIssued, Status: metav1.ConditionTrue,
			Reason: "Issued", LastTransitionTime: metav1.NewTime(nb)}},
		CertificateChain: issueCert(h.t, csr.PublicKey, nb, 2*time.Hour),
		NotBefore:        &metav1.Time{Time: nb},
		NotAfter:         &metav1.Time{Time: nb.Add(2 * time.Hour)},
		BeginRefreshAt:   &metav1.Time{Time: nb.Add(time.Hour)},
	})
}

var podCertCA = struct {
	sync.Once
	key  crypto.Signer
	cert *x509.Certificate
}{}

func issueCert(t *testing.T, pub crypto.PublicKey, notBefore time.Time, lifetime time.Duration) string {
	t.Helper()
	podCertCA.Do(func() {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true, BasicConstraintsValid: true,
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(100 * time.Hour), KeyUsage: x509.KeyUsageCertSign}
		der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
		podCertCA.key = key
		podCertCA.cert, _ = x509.ParseCertificate(der)
	})
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), NotBefore: notBefore, NotAfter: notBefore.Add(lifetime),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, podCertCA.cert, pub, podCertCA.key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func certVolume() corev1.Volume {
	return corev1.Volume{Name: "certs", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{PodCertificate: &corev1.PodCertificateProjection{SignerName: "example.com/spiffe", KeyType: "ECDSAP256", CredentialBundlePath: "spiffe/bundle.pem"}},
		{PodCertificate: &corev1.PodCertificateProjection{SignerName: "example.com/client", KeyType: "ED25519", KeyPath: "client/key.pem", CertificateChainPath: "client/chain.pem"}},
	}}}}
}

// leafMatchesKey checks that a PEM key file and the first certificate of a PEM chain go together.
func leafMatchesKey(t *testing.T, keyPEM, chainPEM []byte) {
	t.Helper()
	kb, _ := pem.Decode(keyPEM)
	if kb == nil || kb.Type != "PRIVATE KEY" {
		t.Fatalf("no PKCS#8 key in %q", keyPEM)
	}
	key, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := pem.Decode(chainPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		t.Fatalf("no certificate in %q", chainPEM)
	}
	leaf, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !key.(crypto.Signer).Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(leaf.PublicKey) {
		t.Fatal("the leaf is not for the key written beside it")
	}
}

func TestPodCertificatesWrittenOnceEverySourceIsIssued(t *testing.T) {
	p := pod("p", certVolume())
	h := newCertHarness(t, p)
	reqs := h.pending(2)
	for _, r := range reqs {
		if r.Spec.NodeName != "n1" || r.Spec.NodeUID != "node-uid" || r.Spec.ServiceAccountUID != "sa-uid" || r.Spec.PodUID != p.UID {
			t.Fatalf("request %s names %+v", r.Name, r.Spec)
		}
	}
	h.issue(reqs[0])
	// One source issued is not the pod's credentials.
	eventually(t, "the condition naming the source still waited for", func() bool {
		c := h.condition(p)
		return c != nil && c.Status == corev1.ConditionFalse && c.Reason == "VolumeNotReady" && strings.Contains(c.Message, "not issued yet")
	})
	h.issue(reqs[1])
	eventually(t, "CredentialsReady", func() bool {
		c := h.condition(p)
		return c != nil && c.Status == corev1.ConditionTrue
	})
	// True keeps nothing of the False before it.
	if c := h.condition(p); c.Reason != "" || c.Message != "" {
		t.Fatalf("CredentialsReady True with reason %q, message %q", c.Reason, c.Message)
	}
	dir := filepath.Join(h.root, "pods", string(p.UID), "volumes", "certs")
	bundle, err := os.ReadFile(filepath.Join(dir, "spiffe/bundle.pem"))
	if err != nil {
		t.Fatal(err)
	}
	key, _ := pem.Decode(bundle)
	leafMatchesKey(t, bundle, []byte(strings.TrimPrefix(string(bundle), string(pem.EncodeToMemory(key)))))
	keyFile, err := os.ReadFile(filepath.Join(dir, "client/key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	chainFile, err := os.ReadFile(filepath.Join(dir, "client/chain.pem"))
	if err != nil {
		t.Fatal(err)
	}
	leafMatchesKey(t, keyFile, chainFile)
	// The keys are kept owner-only, outside the pods' directories.
	fi, err := os.Stat(filepath.Join(h.root, podCertsDir))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("state directory: %v %v", err, fi.Mode())
	}

	// A restarted agent asks for nothing and keeps the files.
	h.stop()
	before, actionsBefore := h.createCount(), len(h.client.Actions())
	h.start()
	p2 := pod("q", certVolume())
	if _, err := h.client.CoreV1().Pods("ns").Create(context.Background(), p2, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// One worker takes pods in the order they came: the new pod's requests show that the
	// restarted agent has synced p.
	h.pending(2)
	if got := h.createCount(); got != before+2 {
		t.Fatalf("%d requests after the restart, want only the new pod's 2", got-before)
	}
	for _, a := range h.client.Actions()[actionsBefore:] {
		if pa, ok := a.(k8stesting.PatchAction); ok && pa.GetName() == p.Name {
			t.Errorf("the restarted agent patched pod %s, whose status had not changed: %s", p.Name, pa.GetPatch())
		}
	}
	after, err := os.ReadFile(filepath.Join(dir, "spiffe/bundle.pem"))
	if err != nil || string(after) != string(bundle) {
		t.Fatalf("the bundle changed across a restart: %v", err)
	}

	// A deleted pod's keys go with it.
	if err := h.client.CoreV1().Pods("ns").Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pod's kept keys removed", func() bool {
		_, err := os.Stat(filepath.Join(h.root, podCertsDir, string(p.UID)))
		return os.IsNotExist(err)
	})
}

func TestDeniedPodCertificateIsAFailedMount(t *testing.T) {
	p := pod("p", certVolume())
	h := newCertHarness(t, p)
	reqs := h.pending(2)
	h.issue(reqs[1])
	h.answer(reqs[0], certificatesv1.PodCertificateRequestStatus{Conditions: []metav1.Condition{{
		Type: certificatesv1.PodCertificateRequestConditionTypeDenied, Status: metav1.ConditionTrue,
		Reason: "UnsupportedKeyType", Message: "this signer issues ECDSAP384 keys", LastTransitionTime: metav1.Now(),
	}}})
	eventually(t, "the condition with the signer's message", func() bool {
		c := h.condition(p)
		return c != nil && c.Status == corev1.ConditionFalse && c.Reason == "FailedMount" && strings.Contains(c.Message, "this signer issues ECDSAP384 keys")
	})
	select {
	case e := <-h.events.Events:
		if !strings.Contains(e, "FailedMount") || !strings.Contains(e, "this signer issues ECDSAP384 keys") {
			t.Fatalf("event %q, want a FailedMount with the signer's message", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
	if _, err := os.Stat(filepath.Join(h.root, "pods", string(p.UID), "volumes", "certs", "client")); !os.IsNotExist(err) {
		t.Fatalf("part of a failed volume was written: %v", err)
	}
}
