package tokencleaner

import (
	"context"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	testclock "k8s.io/utils/clock/testing"
)

// singleUse is token abcdef's secret, bound to n1 and single-use, created an hour before now.
func singleUse() *corev1.Secret {
	s := secret("bootstrap-token-abcdef", "kube-system", bootstrapType, at(24*time.Hour))
	s.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour))
	s.Data["idplane.io.node-name"] = []byte("n1")
	s.Data["idplane.io.single-use"] = []byte("true")
	return s
}

// tokenCSR is a kubelet client CSR token id (its secret as secret() makes it) made half an hour
// before now, approved at approvedAt and issued.
func tokenCSR(name, id string, approvedAt time.Time) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-30 * time.Minute))},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName, Username: "system:bootstrap:" + id,
			Extra: map[string]certificatesv1.ExtraValue{"idplane.io/bootstrap-token-secret-uid": {"uid-bootstrap-token-" + id}},
		},
		Status: certificatesv1.CertificateSigningRequestStatus{
			Conditions: []certificatesv1.CertificateSigningRequestCondition{{
				Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, LastUpdateTime: metav1.NewTime(approvedAt),
			}},
			Certificate: []byte("issued"),
		},
	}
}

func TestSingleUse(t *testing.T) {
	edit := func(csr *certificatesv1.CertificateSigningRequest, f func(*certificatesv1.CertificateSigningRequest)) *certificatesv1.CertificateSigningRequest {
		f(csr)
		return csr
	}
	longAgo := now.Add(-2 * singleUseGrace)
	cases := []struct {
		name    string
		secret  *corev1.Secret
		csrs    []runtime.Object
		deleted bool
	}{
		{"issued past the grace", singleUse(), []runtime.Object{tokenCSR("c", "abcdef", longAgo)}, true},
		{"the earliest of two counts", singleUse(), []runtime.Object{tokenCSR("c1", "abcdef", now), tokenCSR("c2", "abcdef", longAgo)}, true},
		{"issued within the grace", singleUse(), []runtime.Object{tokenCSR("c", "abcdef", now)}, false},
		{"approved, not issued", singleUse(), []runtime.Object{edit(tokenCSR("c", "abcdef", longAgo), func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Certificate = nil
		})}, false},
		{"another token's certificate", singleUse(), []runtime.Object{tokenCSR("c", "zzzzzz", longAgo)}, false},
		{"another signer's certificate", singleUse(), []runtime.Object{edit(tokenCSR("c", "abcdef", longAgo), func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.SignerName = certificatesv1.KubeAPIServerClientSignerName
		})}, false},
		{"made by an earlier token of the same id", singleUse(), []runtime.Object{edit(tokenCSR("c", "abcdef", longAgo), func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Extra["idplane.io/bootstrap-token-secret-uid"] = certificatesv1.ExtraValue{"uid-of-an-earlier-secret"}
		})}, false},
		{"made by a user of the name from another authenticator", singleUse(), []runtime.Object{edit(tokenCSR("c", "abcdef", longAgo), func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Extra = nil
		})}, false},
		{"not single-use", func() *corev1.Secret {
			s := singleUse()
			delete(s.Data, "idplane.io.single-use")
			return s
		}(), []runtime.Object{tokenCSR("c", "abcdef", longAgo)}, false},
		{"no certificate yet", singleUse(), nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, client := newCleaner(t, testclock.NewFakeClock(now), append([]runtime.Object{tc.secret}, tc.csrs...)...)
			if err := c.sync(context.Background(), tc.secret.Name); err != nil {
				t.Fatal(err)
			}
			ds := deletes(client)
			if got := len(ds) > 0; got != tc.deleted {
				t.Fatalf("deleted %v, want %v", got, tc.deleted)
			}
			if tc.deleted {
				if p := ds[0].DeleteOptions.Preconditions; ds[0].Name != tc.secret.Name || p == nil || p.UID == nil || *p.UID != tc.secret.UID {
					t.Errorf("deleted %s with preconditions %+v, want %s with UID %s", ds[0].Name, p, tc.secret.Name, tc.secret.UID)
				}
			}
		})
	}
}

// Through the informers: a certificate issued with a single-use token gets the token deleted
// once the grace has passed; an unbound token with a certificate stays. (That nothing goes
// within the grace is TestSingleUse's.)
func TestSingleUseRun(t *testing.T) {
	clk := testclock.NewFakeClock(now)
	// Neither expires: only being used up can delete one.
	token := singleUse()
	delete(token.Data, "expiration")
	other := secret("bootstrap-token-uuuuuu", "kube-system", bootstrapType, "")
	pendingCSR := tokenCSR("join", "abcdef", now)
	pendingCSR.Status = certificatesv1.CertificateSigningRequestStatus{}
	client := fake.NewClientset(token, other, pendingCSR, tokenCSR("other-join", "uuuuuu", now.Add(-time.Hour)))
	ctx := runCleaner(t, client, clk)

	// The signer issues the certificate: the cleaner hears of it and waits out the grace, which
	// the clock passes (again and again: when the cleaner gets to it is not known here).
	if _, err := client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, tokenCSR("join", "abcdef", now), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		clk.Step(singleUseGrace)
		return len(deletes(client)) > 0, nil
	}); err != nil {
		t.Fatal("the used token was not deleted")
	}
	if ds := deletes(client); len(ds) != 1 || ds[0].Name != token.Name {
		t.Errorf("deletes %+v, want %s alone", ds, token.Name)
	}
}
