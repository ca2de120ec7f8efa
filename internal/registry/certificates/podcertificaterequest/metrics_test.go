package podcertificaterequest

import (
	"context"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/testutil"
	testclock "k8s.io/utils/clock/testing"
)

func withCondition(r *certificatesv1.PodCertificateRequest, typ string) *certificatesv1.PodCertificateRequest {
	r = r.DeepCopy()
	r.Status.Conditions = append(r.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionTrue})
	return r
}

// TestCountAnswers: the first terminal condition is counted once the update succeeds, by signer
// (built-in ones by name) and condition; issues observe the time since creation; a failed update,
// a status already answered and a pending one count nothing.
func TestCountAnswers(t *testing.T) {
	RegisterMetrics()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	count := countAnswers(testclock.NewFakePassiveClock(now))
	pending := &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Second))},
		Spec:       certificatesv1.PodCertificateRequestSpec{SignerName: "idplane.io/spiffe"},
	}
	cases := []struct {
		name       string
		obj, old   *certificatesv1.PodCertificateRequest
		success    bool
		condition  string
		wantAdded  float64
		wantIssued uint64
	}{
		{"issued", withCondition(pending, "Issued"), pending, true, "Issued", 1, 1},
		{"denied", withCondition(pending, "Denied"), pending, true, "Denied", 1, 0},
		{"failed", withCondition(pending, "Failed"), pending, true, "Failed", 1, 0},
		{"update failed", withCondition(pending, "Issued"), pending, false, "Issued", 0, 0},
		{"already answered", withCondition(pending, "Issued"), withCondition(pending, "Issued"), true, "Issued", 0, 0},
		{"still pending", pending, pending, true, "Issued", 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			counter := answered.WithLabelValues("idplane.io/spiffe", tc.condition)
			before, _ := testutil.GetCounterMetricValue(counter)
			issuedBefore, _ := testutil.GetHistogramMetricCount(issuance.WithLabelValues("idplane.io/spiffe"))
			finish, err := count(context.Background(), tc.obj, tc.old, nil)
			if err != nil {
				t.Fatal(err)
			}
			finish(context.Background(), tc.success)
			after, _ := testutil.GetCounterMetricValue(counter)
			issuedAfter, _ := testutil.GetHistogramMetricCount(issuance.WithLabelValues("idplane.io/spiffe"))
			if after-before != tc.wantAdded || issuedAfter-issuedBefore != tc.wantIssued {
				t.Errorf("answered +%v, issuance observations +%v; want +%v, +%v", after-before, issuedAfter-issuedBefore, tc.wantAdded, tc.wantIssued)
			}
		})
	}
	if got := signerLabel("evil.example/" + "x"); got != "other" {
		t.Errorf("an arbitrary signer labelled %q", got)
	}
}
