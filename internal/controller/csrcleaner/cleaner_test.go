package csrcleaner

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	testclock "k8s.io/utils/clock/testing"
)

var now = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func certValidUntil(t *testing.T, end time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"}, NotBefore: end.Add(-time.Hour), NotAfter: end}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func csr(name string, created time.Time, cert []byte, conds ...certificatesv1.CertificateSigningRequestCondition) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1", CreationTimestamp: metav1.NewTime(created)},
		Status:     certificatesv1.CertificateSigningRequestStatus{Certificate: cert, Conditions: conds},
	}
}

func cond(t certificatesv1.RequestConditionType, at time.Time) certificatesv1.CertificateSigningRequestCondition {
	return certificatesv1.CertificateSigningRequestCondition{Type: t, Status: corev1.ConditionTrue, LastUpdateTime: metav1.NewTime(at)}
}

func TestDue(t *testing.T) {
	cases := []struct {
		name string
		csr  *certificatesv1.CertificateSigningRequest
		due  bool
	}{
		{"pending for an hour", csr("a", now.Add(-time.Hour), nil), false},
		{"pending for a day and more", csr("a", now.Add(-25*time.Hour), nil), true},
		{"approved a minute ago", csr("a", now.Add(-2*time.Hour), nil, cond(certificatesv1.CertificateApproved, now.Add(-time.Minute))), false},
		{"approved and issued two hours ago", csr("a", now.Add(-3*time.Hour), certValidUntil(t, now.Add(time.Hour)), cond(certificatesv1.CertificateApproved, now.Add(-2*time.Hour))), true},
		{"denied two hours ago", csr("a", now.Add(-3*time.Hour), nil, cond(certificatesv1.CertificateDenied, now.Add(-2*time.Hour))), true},
		{"failed two hours ago", csr("a", now.Add(-3*time.Hour), nil, cond(certificatesv1.CertificateApproved, now.Add(-2*time.Hour)), cond(certificatesv1.CertificateFailed, now.Add(-2*time.Hour))), true},
		{"failed without a time, created long ago", csr("a", now.Add(-3*time.Hour), nil, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue}), true},
		{"certificate expired", csr("a", now.Add(-10*time.Minute), certValidUntil(t, now.Add(-time.Minute)), cond(certificatesv1.CertificateApproved, now.Add(-10*time.Minute))), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := due(tc.csr, now) != ""; got != tc.due {
				t.Errorf("due = %q, want due %v", due(tc.csr, now), tc.due)
			}
		})
	}
}

func TestSweep(t *testing.T) {
	old := csr("old", now.Add(-48*time.Hour), nil)
	fresh := csr("fresh", now.Add(-time.Minute), nil)
	client := fake.NewClientset(old, fresh)
	factory := informers.NewSharedInformerFactory(client, 0)
	c := New(client, factory.Certificates().V1().CertificateSigningRequests(), testclock.NewFakePassiveClock(now))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.Synced) {
		t.Fatal("cache did not sync")
	}
	if err := c.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CertificatesV1().CertificateSigningRequests().Get(ctx, "old", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the day-old pending CSR: %v, want it deleted", err)
	}
	if _, err := client.CertificatesV1().CertificateSigningRequests().Get(ctx, "fresh", metav1.GetOptions{}); err != nil {
		t.Errorf("the fresh CSR: %v, want it kept", err)
	}
}
