package podcerts

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"
)

func TestMain(m *testing.M) {
	// client-go's fake clientset cannot stream a watch's initial list.
	os.Setenv("KUBE_FEATURE_WatchListClient", "false")
	os.Exit(m.Run())
}

const signer = "example.com/signer"

var t0 = time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC)

func testPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "pod-uid"},
		Spec:       corev1.PodSpec{NodeName: "n1", ServiceAccountName: "sa"},
	}
}

func source(keyType string) *corev1.PodCertificateProjection {
	max := int32(7200)
	return &corev1.PodCertificateProjection{
		SignerName: signer, KeyType: keyType, MaxExpirationSeconds: &max,
		UserAnnotations:      map[string]string{"example.com/team": "blue"},
		CredentialBundlePath: "bundle.pem",
	}
}

// harness runs a Manager over a fake clientset that names created requests and counts them.
type harness struct {
	t       *testing.T
	client  *fake.Clientset
	clock   *testingclock.FakeClock
	dir     string
	m       *Manager
	changes chan string
	mu      sync.Mutex
	creates int
	seq     int
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{
		t:     t,
		clock: testingclock.NewFakeClock(t0),
		dir:   filepath.Join(t.TempDir(), "podcerts"),
		client: fake.NewClientset(
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa", UID: "sa-uid"}},
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}},
		),
		changes: make(chan string, 100),
	}
	h.client.PrependReactor("create", "podcertificaterequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*certificatesv1.PodCertificateRequest)
		h.mu.Lock()
		defer h.mu.Unlock()
		h.creates++
		h.seq++
		if r.Name == "" {
			r.Name = r.GenerateName + string(rune('a'+h.seq))
		}
		r.CreationTimestamp = metav1.NewTime(h.clock.Now())
		return false, nil, nil
	})
	h.start()
	return h
}

// start runs a manager (again, as after a restart) on the harness's state directory.
func (h *harness) start() {
	h.t.Helper()
	m, err := New(Config{
		NodeName: "n1", StateDir: h.dir, Client: h.client, Clock: h.clock,
		OnChange: func(ns, pod string) { h.changes <- ns + "/" + pod },
		Jitter:   func(max time.Duration) time.Duration { return max / 2 },
	})
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	h.t.Cleanup(func() { cancel(); <-done; m.Close() })
	h.m = m
}

func (h *harness) createCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.creates
}

func (h *harness) requests() []certificatesv1.PodCertificateRequest {
	h.t.Helper()
	l, err := h.client.CertificatesV1().PodCertificateRequests("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return l.Items
}

// answer writes a request's status as a signer would and waits until the manager's watch saw it.
func (h *harness) answer(name string, st certificatesv1.PodCertificateRequestStatus) {
	h.t.Helper()
	r, err := h.client.CertificatesV1().PodCertificateRequests("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	r.Status = st
	if _, err := h.client.CertificatesV1().PodCertificateRequests("ns").UpdateStatus(context.Background(), r, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	// The fake keeps no resourceVersion: the status itself says the watch delivered it.
	h.await(func() bool {
		seen, err := h.m.lister.PodCertificateRequests("ns").Get(name)
		return err == nil && len(seen.Status.Conditions) == len(st.Conditions) && seen.Status.CertificateChain == st.CertificateChain
	})
}

// await reads the manager's change notices until cond holds.
func (h *harness) await(cond func() bool) {
	h.t.Helper()
	for !cond() {
		select {
		case <-h.changes:
		case <-time.After(10 * time.Second):
			h.t.Fatal("the condition did not come to hold")
		}
	}
}

var testCA = struct {
	sync.Once
	key  crypto.Signer
	cert *x509.Certificate
}{}

// certFor is a PEM certificate for pub from notBefore for lifetime, signed by the test CA.
func certFor(t testing.TB, pub crypto.PublicKey, notBefore time.Time, lifetime time.Duration) string {
	t.Helper()
	testCA.Do(func() {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true, BasicConstraintsValid: true,
			NotBefore: t0.Add(-time.Hour), NotAfter: t0.Add(1000 * time.Hour), KeyUsage: x509.KeyUsageCertSign}
		der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
		testCA.key = key
		testCA.cert, _ = x509.ParseCertificate(der)
	})
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), NotBefore: notBefore, NotAfter: notBefore.Add(lifetime),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, testCA.cert, pub, testCA.key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// issuedStatus is an Issued status with chain, valid from notBefore for lifetime, refreshing at
// half-life.
func issuedStatus(chain string, notBefore time.Time, lifetime time.Duration) certificatesv1.PodCertificateRequestStatus {
	return certificatesv1.PodCertificateRequestStatus{
		Conditions: []metav1.Condition{{Type: certificatesv1.PodCertificateRequestConditionTypeIssued, Status: metav1.ConditionTrue,
			Reason: "Issued", LastTransitionTime: metav1.NewTime(notBefore)}},
		CertificateChain: chain,
		NotBefore:        &metav1.Time{Time: notBefore},
		NotAfter:         &metav1.Time{Time: notBefore.Add(lifetime)},
		BeginRefreshAt:   &metav1.Time{Time: notBefore.Add(lifetime / 2)},
	}
}

// issue signs request r for the key its stub request carries.
func (h *harness) issue(r *certificatesv1.PodCertificateRequest, lifetime time.Duration) {
	h.t.Helper()
	csr, err := x509.ParseCertificateRequest(r.Spec.StubPKCS10Request)
	if err != nil {
		h.t.Fatal(err)
	}
	nb := h.clock.Now().Truncate(time.Second)
	h.answer(r.Name, issuedStatus(certFor(h.t, csr.PublicKey, nb, lifetime), nb, lifetime))
}

// only is the one request awaiting an answer.
func (h *harness) only(t *testing.T) *certificatesv1.PodCertificateRequest {
	t.Helper()
	rs := h.requests()
	var pending []certificatesv1.PodCertificateRequest
	for _, r := range rs {
		if len(r.Status.Conditions) == 0 {
			pending = append(pending, r)
		}
	}
	if len(pending) != 1 {
		t.Fatalf("%d requests awaiting an answer, want 1", len(pending))
	}
	return &pending[0]
}

func mustPending(t *testing.T, err error) {
	t.Helper()
	if err == nil || IsRefused(err) {
		t.Fatalf("want a not-yet-issued error, got %v", err)
	}
}

func TestIssuedForEveryKeyType(t *testing.T) {
	for _, tc := range []struct {
		keyType string
		check   func(crypto.PublicKey) bool
	}{
		{"RSA3072", func(k crypto.PublicKey) bool { r, ok := k.(*rsa.PublicKey); return ok && r.N.BitLen() == 3072 }},
		{"RSA4096", func(k crypto.PublicKey) bool { r, ok := k.(*rsa.PublicKey); return ok && r.N.BitLen() == 4096 }},
		{"ECDSAP256", func(k crypto.PublicKey) bool { e, ok := k.(*ecdsa.PublicKey); return ok && e.Curve == elliptic.P256() }},
		{"ECDSAP384", func(k crypto.PublicKey) bool { e, ok := k.(*ecdsa.PublicKey); return ok && e.Curve == elliptic.P384() }},
		{"ECDSAP521", func(k crypto.PublicKey) bool { e, ok := k.(*ecdsa.PublicKey); return ok && e.Curve == elliptic.P521() }},
		{"ED25519", func(k crypto.PublicKey) bool { _, ok := k.(ed25519.PublicKey); return ok }},
	} {
		t.Run(tc.keyType, func(t *testing.T) {
			h := newHarness(t)
			pod, src := testPod(), source(tc.keyType)
			_, _, err := h.m.Credentials(context.Background(), pod, "v", 0, src)
			mustPending(t, err)
			r := h.only(t)
			want := certificatesv1.PodCertificateRequestSpec{
				SignerName: signer, PodName: "p", PodUID: "pod-uid", ServiceAccountName: "sa", ServiceAccountUID: "sa-uid",
				NodeName: "n1", NodeUID: "node-uid", MaxExpirationSeconds: src.MaxExpirationSeconds,
				StubPKCS10Request: r.Spec.StubPKCS10Request, UnverifiedUserAnnotations: map[string]string{"example.com/team": "blue"},
			}
			if diff := specDiff(r.Spec, want); diff != "" {
				t.Fatalf("request spec: %s", diff)
			}
			if len(r.OwnerReferences) != 1 || r.OwnerReferences[0].UID != "pod-uid" {
				t.Errorf("owner references %+v, want the pod", r.OwnerReferences)
			}
			csr, err := x509.ParseCertificateRequest(r.Spec.StubPKCS10Request)
			if err != nil {
				t.Fatal(err)
			}
			if err := csr.CheckSignature(); err != nil {
				t.Fatalf("stub request signature: %v", err)
			}
			if !tc.check(csr.PublicKey) {
				t.Fatalf("stub request carries a %T key, not a %s one", csr.PublicKey, tc.keyType)
			}
			// Asked again before the signer answered: no second request.
			_, _, err = h.m.Credentials(context.Background(), pod, "v", 0, src)
			mustPending(t, err)
			h.issue(r, 2*time.Hour)
			key, chain, err := h.m.Credentials(context.Background(), pod, "v", 0, src)
			if err != nil {
				t.Fatal(err)
			}
			pub, err := publicKey(key)
			if err != nil {
				t.Fatal(err)
			}
			block, _ := pem.Decode(chain)
			leaf, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if !pub.(interface{ Equal(crypto.PublicKey) bool }).Equal(leaf.PublicKey) {
				t.Fatal("the key returned is not the leaf's")
			}
			if n := h.createCount(); n != 1 {
				t.Fatalf("%d requests made, want 1", n)
			}
			if got := h.m.NextRefresh(pod.UID); !got.Equal(t0.Add(time.Hour + maxJitter/2)) {
				t.Errorf("NextRefresh %v, want beginRefreshAt plus the jitter", got)
			}
		})
	}
}

func specDiff(got, want certificatesv1.PodCertificateRequestSpec) string {
	var d []string
	if got.SignerName != want.SignerName || got.PodName != want.PodName || got.PodUID != want.PodUID ||
		got.ServiceAccountName != want.ServiceAccountName || got.ServiceAccountUID != want.ServiceAccountUID ||
		got.NodeName != want.NodeName || got.NodeUID != want.NodeUID {
		d = append(d, "names or UIDs differ")
	}
	if got.MaxExpirationSeconds == nil || *got.MaxExpirationSeconds != *want.MaxExpirationSeconds {
		d = append(d, "maxExpirationSeconds differs")
	}
	if len(got.UnverifiedUserAnnotations) != len(want.UnverifiedUserAnnotations) || got.UnverifiedUserAnnotations["example.com/team"] != "blue" {
		d = append(d, "annotations differ")
	}
	return strings.Join(d, "; ")
}

func TestDeniedAndFailedAreFinal(t *testing.T) {
	for _, cond := range []string{certificatesv1.PodCertificateRequestConditionTypeDenied, certificatesv1.PodCertificateRequestConditionTypeFailed} {
		t.Run(cond, func(t *testing.T) {
			h := newHarness(t)
			pod, src := testPod(), source("ECDSAP256")
			_, _, err := h.m.Credentials(context.Background(), pod, "v", 0, src)
			mustPending(t, err)
			r := h.only(t)
			h.answer(r.Name, certificatesv1.PodCertificateRequestStatus{Conditions: []metav1.Condition{{
				Type: cond, Status: metav1.ConditionTrue, Reason: "UnsupportedKeyType", Message: "use ECDSAP384", LastTransitionTime: metav1.NewTime(t0),
			}}})
			for range 2 {
				_, _, err = h.m.Credentials(context.Background(), pod, "v", 0, src)
				if !IsRefused(err) || !strings.Contains(err.Error(), "use ECDSAP384") || !strings.Contains(err.Error(), "UnsupportedKeyType") {
					t.Fatalf("got %v, want the signer's refusal with its reason and message", err)
				}
			}
			if n := h.createCount(); n != 1 {
				t.Fatalf("%d requests made after a final answer, want 1", n)
			}
			// Nor after a restart.
			h.start()
			_, _, err = h.m.Credentials(context.Background(), pod, "v", 0, src)
			if !IsRefused(err) || !strings.Contains(err.Error(), "use ECDSAP384") || h.createCount() != 1 {
				t.Fatalf("after a restart: %v, %d requests; want the kept refusal and no request", err, h.createCount())
			}
		})
	}
}

func TestUnsupportedKeyTypeIsRefusedWithoutARequest(t *testing.T) {
	h := newHarness(t)
	_, _, err := h.m.Credentials(context.Background(), testPod(), "v", 0, source("RSA2048"))
	if !IsRefused(err) || !strings.Contains(err.Error(), "ECDSAP256") {
		t.Fatalf("got %v, want a refusal naming the supported types", err)
	}
	if n := h.createCount(); n != 0 {
		t.Fatalf("%d requests made, want 0", n)
	}
}

func TestAChainForAnotherKeyIsRefused(t *testing.T) {
	h := newHarness(t)
	pod, src := testPod(), source("ECDSAP256")
	_, _, err := h.m.Credentials(context.Background(), pod, "v", 0, src)
	mustPending(t, err)
	r := h.only(t)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	h.answer(r.Name, issuedStatus(certFor(t, other.Public(), t0, 2*time.Hour), t0, 2*time.Hour))
	_, _, err = h.m.Credentials(context.Background(), pod, "v", 0, src)
	if !IsRefused(err) || !strings.Contains(err.Error(), "not for the key") {
		t.Fatalf("got %v, want the chain refused", err)
	}
}

func TestRefreshUsesANewKeyAndKeepsTheOldUntilIssued(t *testing.T) {
	h := newHarness(t)
	ctx, pod, src := context.Background(), testPod(), source("ED25519")
	_, _, err := h.m.Credentials(ctx, pod, "v", 0, src)
	mustPending(t, err)
	h.issue(h.only(t), 2*time.Hour)
	key1, chain1, err := h.m.Credentials(ctx, pod, "v", 0, src)
	if err != nil {
		t.Fatal(err)
	}
	// At beginRefreshAt, before the jitter has passed: nothing is asked.
	h.clock.SetTime(t0.Add(time.Hour))
	if _, _, err := h.m.Credentials(ctx, pod, "v", 0, src); err != nil || h.createCount() != 1 {
		t.Fatalf("before the jittered refresh time: err %v, %d requests", err, h.createCount())
	}
	h.clock.SetTime(t0.Add(time.Hour + maxJitter/2))
	key, chain, err := h.m.Credentials(ctx, pod, "v", 0, src)
	if err != nil || string(key) != string(key1) || string(chain) != string(chain1) {
		t.Fatalf("while refreshing: err %v, want the current credentials", err)
	}
	if n := h.createCount(); n != 2 {
		t.Fatalf("%d requests, want a refresh request", n)
	}
	h.issue(h.only(t), 2*time.Hour)
	key2, chain2, err := h.m.Credentials(ctx, pod, "v", 0, src)
	if err != nil {
		t.Fatal(err)
	}
	if string(key2) == string(key1) || string(chain2) == string(chain1) {
		t.Fatal("the refreshed credentials reuse the old key or chain")
	}
}

func TestARestartedAgentRequestsNothingForValidCertificates(t *testing.T) {
	h := newHarness(t)
	ctx, pod, src := context.Background(), testPod(), source("ECDSAP384")
	_, _, err := h.m.Credentials(ctx, pod, "v", 0, src)
	mustPending(t, err)
	h.issue(h.only(t), 2*time.Hour)
	key1, chain1, err := h.m.Credentials(ctx, pod, "v", 0, src)
	if err != nil {
		t.Fatal(err)
	}
	// A second source, pending when the agent stops.
	_, _, err = h.m.Credentials(ctx, pod, "v", 1, src)
	mustPending(t, err)
	pending := h.only(t)

	h.start()
	key, chain, err := h.m.Credentials(ctx, pod, "v", 0, src)
	if err != nil || string(key) != string(key1) || string(chain) != string(chain1) {
		t.Fatalf("after a restart: err %v, want the kept credentials", err)
	}
	_, _, err = h.m.Credentials(ctx, pod, "v", 1, src)
	mustPending(t, err)
	if n := h.createCount(); n != 2 {
		t.Fatalf("%d requests after a restart, want the 2 made before it", n)
	}
	// The pending request's answer is taken with the key kept for it.
	h.issue(pending, 2*time.Hour)
	if _, _, err := h.m.Credentials(ctx, pod, "v", 1, src); err != nil {
		t.Fatalf("the request made before the restart: %v", err)
	}
	// A source asking for something else is not answered by what was kept.
	other := source("ECDSAP256")
	_, _, err = h.m.Credentials(ctx, pod, "v", 0, other)
	mustPending(t, err)
	h.start()
	_, _, err = h.m.Credentials(ctx, pod, "v", 1, other)
	mustPending(t, err)
	if n := h.createCount(); n != 4 {
		t.Fatalf("%d requests, want one for each source asking for another key", n)
	}
}

func TestAbandonedRequestIsMadeAgain(t *testing.T) {
	h := newHarness(t)
	ctx, pod, src := context.Background(), testPod(), source("ECDSAP256")
	_, _, err := h.m.Credentials(ctx, pod, "v", 0, src)
	mustPending(t, err)
	r := h.only(t)
	if err := h.client.CertificatesV1().PodCertificateRequests("ns").Delete(ctx, r.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.await(func() bool {
		_, err := h.m.lister.PodCertificateRequests("ns").Get(r.Name)
		return err != nil
	})
	_, _, err = h.m.Credentials(ctx, pod, "v", 0, src)
	mustPending(t, err)
	if n := h.createCount(); n != 1 {
		t.Fatalf("%d requests while a missing one may be the watch lagging, want 1", n)
	}
	if got := h.m.NextRefresh(pod.UID); !got.Equal(t0.Add(abandonAfter)) {
		t.Fatalf("NextRefresh %v, want when the request is taken as gone", got)
	}
	h.clock.SetTime(t0.Add(abandonAfter))
	_, _, err = h.m.Credentials(ctx, pod, "v", 0, src)
	mustPending(t, err)
	if n := h.createCount(); n != 2 {
		t.Fatalf("%d requests, want a new one", n)
	}
}

func TestFailedCreateBacksOff(t *testing.T) {
	h := newHarness(t)
	ctx, pod, src := context.Background(), testPod(), source("ECDSAP256")
	failures := 0
	h.client.PrependReactor("create", "podcertificaterequests", func(k8stesting.Action) (bool, runtime.Object, error) {
		failures++
		return true, nil, errors.New("refused for the test")
	})
	_, _, err := h.m.Credentials(ctx, pod, "v", 0, src)
	mustPending(t, err)
	_, _, err = h.m.Credentials(ctx, pod, "v", 0, src)
	mustPending(t, err)
	if n := failures; n != 1 {
		t.Fatalf("%d creates inside the backoff, want 1", n)
	}
	if got := h.m.NextRefresh(pod.UID); !got.Equal(t0.Add(initialBackoff)) {
		t.Fatalf("NextRefresh %v, want the end of the backoff", got)
	}
}

func TestStateIsOwnerOnlyAndStaysInItsDirectory(t *testing.T) {
	h := newHarness(t)
	ctx, pod, src := context.Background(), testPod(), source("ECDSAP256")
	_, _, err := h.m.Credentials(ctx, pod, "v", 0, src)
	mustPending(t, err)
	fi, err := os.Stat(h.dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("state directory: %v, mode %v, want 0700", err, fi.Mode().Perm())
	}
	files, _ := filepath.Glob(filepath.Join(h.dir, "pod-uid", "*"))
	if len(files) != 1 {
		t.Fatalf("state files %v, want one", files)
	}
	if fi, _ := os.Stat(files[0]); fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file mode %v, want 0600", fi.Mode().Perm())
	}
	// A link planted as another pod's directory does not take a write outside.
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(h.dir, "pod-2")); err != nil {
		t.Fatal(err)
	}
	p2 := testPod()
	p2.Name, p2.UID = "p2", "pod-2"
	_, _, err = h.m.Credentials(ctx, p2, "v", 0, src)
	mustPending(t, err)
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("state written outside the state directory: %v", entries)
	}
	// A pod UID that would name a path outside is refused.
	if _, err := podDir("../x"); err == nil {
		t.Fatal("a UID naming a path outside was taken")
	}
	// Prune drops pods that went; the live pod's state stays.
	if err := h.m.Prune(map[types.UID]bool{"pod-uid": true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(h.dir, "pod-2")); !os.IsNotExist(err) {
		t.Fatalf("the gone pod's entry stays: %v", err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Fatalf("Prune removed what the planted link named: %v", err)
	}
	if err := h.m.Forget(pod.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "pod-uid")); !os.IsNotExist(err) {
		t.Fatalf("Forget left the pod's state: %v", err)
	}
}

func TestNoWatchUntilASourceIsAskedFor(t *testing.T) {
	h := newHarness(t)
	watched := func() bool {
		for _, a := range h.client.Actions() {
			if a.GetResource().Resource == "podcertificaterequests" && (a.GetVerb() == "list" || a.GetVerb() == "watch") {
				return true
			}
		}
		return false
	}
	if watched() {
		t.Fatal("requests listed before any pod asked for a certificate")
	}
	_, _, err := h.m.Credentials(context.Background(), testPod(), "v", 0, source("ED25519"))
	mustPending(t, err)
	if !cache.WaitForCacheSync(t.Context().Done(), h.m.HasSynced) || !watched() {
		t.Fatal("the watch did not start with the first source")
	}
}

// The node's and service accounts' UIDs are read once; a refused create reads them again, so a
// service account recreated under its name is named by its new UID.
func TestUIDsReadOnceAndAgainAfterARefusal(t *testing.T) {
	h := newHarness(t)
	ctx, src := context.Background(), source("ED25519")
	reads := func() int {
		n := 0
		for _, a := range h.client.Actions() {
			if a.GetVerb() == "get" && (a.GetResource().Resource == "serviceaccounts" || a.GetResource().Resource == "nodes") {
				n++
			}
		}
		return n
	}
	for i := range 3 {
		p := testPod()
		p.Name, p.UID = fmt.Sprintf("p%d", i), types.UID(fmt.Sprintf("uid-%d", i))
		_, _, err := h.m.Credentials(ctx, p, "v", 0, src)
		mustPending(t, err)
	}
	if n := reads(); n != 2 {
		t.Fatalf("%d reads of the node and service account for 3 requests, want 2", n)
	}
	// The service account is recreated; the server refuses the stale UID once.
	if err := h.client.CoreV1().ServiceAccounts("ns").Delete(ctx, "sa", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.CoreV1().ServiceAccounts("ns").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa", UID: "sa-uid-2"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.client.PrependReactor("create", "podcertificaterequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.CreateAction).GetObject().(*certificatesv1.PodCertificateRequest).Spec.ServiceAccountUID != "sa-uid-2" {
			return true, nil, errors.New("forbidden: stale service account UID")
		}
		return false, nil, nil
	})
	p := testPod()
	p.Name, p.UID = "p9", "uid-9"
	_, _, err := h.m.Credentials(ctx, p, "v", 0, src)
	mustPending(t, err)
	h.clock.Step(initialBackoff)
	_, _, err = h.m.Credentials(ctx, p, "v", 0, src)
	mustPending(t, err)
	found := false
	for _, r := range h.requests() {
		found = found || (r.Spec.PodName == "p9" && r.Spec.ServiceAccountUID == "sa-uid-2")
	}
	if !found {
		t.Fatal("no request names the recreated service account's UID")
	}
}
