package podcertsigning

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/idplane/idplane/internal/certificates"
	"github.com/idplane/idplane/internal/certificates/podcert"
	"github.com/idplane/idplane/internal/pki"
)

func loadCA(t *testing.T, name string) *certificates.CA {
	t.Helper()
	files := pki.Files{Dir: t.TempDir()}
	if _, err := pki.EnsureSignerCA(files, name, time.Now()); err != nil {
		t.Fatal(err)
	}
	ca, err := certificates.LoadCA(files.SignerCACert(name), files.SignerCAKey(name))
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func stub(t *testing.T, ed bool) []byte {
	t.Helper()
	var key any
	var err error
	if ed {
		_, key, err = ed25519.GenerateKey(rand.Reader)
	} else {
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func pcr(t *testing.T, name, signer string, ed bool) *certificatesv1.PodCertificateRequest {
	return &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName: signer, PodName: "p", PodUID: "pod-uid", ServiceAccountName: "sa", ServiceAccountUID: "sa-uid",
			NodeName: "n", NodeUID: "node-uid", MaxExpirationSeconds: ptr.To[int32](3600), StubPKCS10Request: stub(t, ed),
		},
	}
}

// newController runs the controller's informer over objs; edit, when given, changes the signers
// before the controller is built.
func newController(t *testing.T, edit func(map[string]Signer), objs ...*certificatesv1.PodCertificateRequest) (*Controller, *fake.Clientset, *clocktesting.FakeClock, map[string]*certificates.CA) {
	t.Helper()
	// The identity every request of pcr names, live.
	client := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "pod-uid"}, Spec: corev1.PodSpec{ServiceAccountName: "sa", NodeName: "n"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa", UID: "sa-uid"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "node-uid"}},
	)
	for _, o := range objs {
		if _, err := client.CertificatesV1().PodCertificateRequests(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	cas := map[string]*certificates.CA{podcert.SPIFFESignerName: loadCA(t, "spiffe"), podcert.ClientPodSignerName: loadCA(t, "kube-apiserver-client-pod")}
	policies := podcert.Policies()
	signers := map[string]Signer{}
	for name, ca := range cas {
		signers[name] = Signer{Policy: policies[name], CA: ca}
	}
	if edit != nil {
		edit(signers)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, factory.Certificates().V1().PodCertificateRequests(), Config{
		Signers: signers, Params: podcert.Params{TrustDomain: "cluster.local", Duration: 24 * time.Hour}, Clock: clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		t.Fatal("informer did not sync")
	}
	return c, client, clk, cas
}

// TestSync: each request of the controller's signers gets its one terminal condition and, when
// issued, the status fields together and matching the leaf; others are left alone.
func TestSync(t *testing.T) {
	issuedBefore := pcr(t, "done", podcert.SPIFFESignerName, false)
	issuedBefore.Status.Conditions = []metav1.Condition{{Type: "Denied", Status: metav1.ConditionTrue, Reason: "Earlier"}}
	// Requests naming an identity that is not the live one: a creator other than a node is not
	// checked by NodeRestriction, so the signer checks before it certifies.
	stale := func(name string, edit func(*certificatesv1.PodCertificateRequestSpec)) *certificatesv1.PodCertificateRequest {
		r := pcr(t, name, podcert.SPIFFESignerName, false)
		edit(&r.Spec)
		return r
	}
	c, client, clk, cas := newController(t, nil,
		pcr(t, "spiffe", podcert.SPIFFESignerName, false),
		pcr(t, "spiffe-ed", podcert.SPIFFESignerName, true),
		pcr(t, "client", podcert.ClientPodSignerName, true),
		pcr(t, "other", "example.com/signer", false),
		issuedBefore,
		stale("no-pod", func(s *certificatesv1.PodCertificateRequestSpec) { s.PodName = "gone" }),
		stale("pod-replaced", func(s *certificatesv1.PodCertificateRequestSpec) { s.PodUID = "old-pod-uid" }),
		stale("other-sa", func(s *certificatesv1.PodCertificateRequestSpec) { s.ServiceAccountName = "admin" }),
		stale("sa-replaced", func(s *certificatesv1.PodCertificateRequestSpec) { s.ServiceAccountUID = "old-sa-uid" }),
		stale("other-node", func(s *certificatesv1.PodCertificateRequestSpec) { s.NodeName = "m" }),
		stale("node-replaced", func(s *certificatesv1.PodCertificateRequestSpec) { s.NodeUID = "old-node-uid" }),
	)
	ctx := context.Background()
	for _, tc := range []struct{ name, condition, reason string }{
		{"spiffe", "Issued", "Issued"},
		{"spiffe-ed", "Denied", "UnsupportedKeyType"},
		{"client", "Issued", "Issued"},
		{"other", "", ""},
		{"done", "Denied", "Earlier"},
		{"no-pod", "Denied", ReasonIdentityNotLive},
		{"pod-replaced", "Denied", ReasonIdentityNotLive},
		{"other-sa", "Denied", ReasonIdentityNotLive},
		{"sa-replaced", "Denied", ReasonIdentityNotLive},
		{"other-node", "Denied", ReasonIdentityNotLive},
		{"node-replaced", "Denied", ReasonIdentityNotLive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := c.sync(ctx, "ns/"+tc.name); err != nil {
				t.Fatal(err)
			}
			got, err := client.CertificatesV1().PodCertificateRequests("ns").Get(ctx, tc.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			conds := got.Status.Conditions
			if tc.condition == "" {
				if len(conds) != 0 || got.Status.CertificateChain != "" {
					t.Fatalf("another signer's request was answered: %+v", got.Status)
				}
				return
			}
			if len(conds) != 1 || conds[0].Type != tc.condition || conds[0].Reason != tc.reason || conds[0].Status != metav1.ConditionTrue {
				t.Fatalf("conditions %+v, want one %s/%s", conds, tc.condition, tc.reason)
			}
			if tc.condition != "Issued" {
				if got.Status.CertificateChain != "" || got.Status.NotBefore != nil {
					t.Fatal("a refused request carries a certificate")
				}
				return
			}
			block, _ := pem.Decode([]byte(got.Status.CertificateChain))
			leaf, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Status.NotBefore.Time.Equal(leaf.NotBefore) || !got.Status.NotAfter.Time.Equal(leaf.NotAfter) {
				t.Errorf("status times are not the leaf's")
			}
			if leaf.NotAfter.Sub(leaf.NotBefore) != time.Hour || !got.Status.BeginRefreshAt.Time.Equal(leaf.NotBefore.Add(30*time.Minute)) {
				t.Errorf("lifetime %v, refresh %v", leaf.NotAfter.Sub(leaf.NotBefore), got.Status.BeginRefreshAt)
			}
			if d := clk.Now().Sub(leaf.NotBefore); d != time.Minute {
				t.Errorf("notBefore %v before the clock, want 1m", d)
			}
			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM(cas[got.Spec.SignerName].CertPEM())
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, CurrentTime: clk.Now()}); err != nil {
				t.Errorf("leaf does not verify against its signer's CA: %v", err)
			}
		})
	}
}

// TestRun: a request created while the controller runs is answered; synchronised on the watch
// of the request, not on time.
func TestRun(t *testing.T) {
	c, client, _, _ := newController(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := client.CertificatesV1().PodCertificateRequests("ns").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	go c.Run(ctx, 1)
	if _, err := client.CertificatesV1().PodCertificateRequests("ns").Create(ctx, pcr(t, "new", podcert.ClientPodSignerName, false), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-w.ResultChan():
			if p, ok := ev.Object.(*certificatesv1.PodCertificateRequest); ok && ev.Type == watch.Modified && p.Status.CertificateChain != "" {
				return
			}
		case <-timeout:
			t.Fatal("the request was not issued")
		}
	}
}

// brokenCA cannot sign, as a CA whose files are halfway through a rotation.
type brokenCA struct{}

func (brokenCA) SignLeaf(*x509.Certificate, crypto.PublicKey) (*x509.Certificate, error) {
	return nil, errors.New("loading signing CA: the key does not match the certificate")
}

// TestSyncWhileTheCACannotSign: nothing is recorded and the sync fails, so the queue asks again.
func TestSyncWhileTheCACannotSign(t *testing.T) {
	c, client, _, _ := newController(t, func(signers map[string]Signer) {
		s := signers[podcert.SPIFFESignerName]
		s.CA = brokenCA{}
		signers[podcert.SPIFFESignerName] = s
	}, pcr(t, "waiting", podcert.SPIFFESignerName, false))
	ctx := context.Background()
	if err := c.sync(ctx, "ns/waiting"); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("sync: %v, want the CA's error", err)
	}
	got, err := client.CertificatesV1().PodCertificateRequests("ns").Get(ctx, "waiting", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Conditions) != 0 || got.Status.CertificateChain != "" {
		t.Fatalf("the request was answered while the CA could not sign: %+v", got.Status)
	}
}
