package serviceaccount

import (
	"context"
	"testing"
	"time"

	"k8s.io/component-base/metrics/testutil"
)

// TestStaleTokens counts a token used past its warnafter as stale, and before it as valid.
func TestStaleTokens(t *testing.T) {
	RegisterMetrics()
	f := newFixture(t, ecKey(t))
	tok, err := f.issuer.Issue(context.Background(), TokenRequest{
		Binding: Binding{ServiceAccount: testSA}, Audiences: []string{testIssuer},
		Lifetime: 24 * time.Hour, WarnAfter: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	a := f.authenticator(liveObjects())
	cases := []struct {
		name             string
		at               time.Time
		wantValid, stale float64
	}{
		{"within the requested hour", testNow.Add(30 * time.Minute), 1, 0},
		{"past warnafter", testNow.Add(2 * time.Hour), 0, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			valid0, _ := testutil.GetCounterMetricValue(validTokens)
			stale0, _ := testutil.GetCounterMetricValue(staleTokens)
			f.clock.SetTime(tc.at)
			if _, ok, err := a.AuthenticateToken(context.Background(), tok.Raw); !ok || err != nil {
				t.Fatalf("AuthenticateToken = %v, %v", ok, err)
			}
			valid1, _ := testutil.GetCounterMetricValue(validTokens)
			stale1, _ := testutil.GetCounterMetricValue(staleTokens)
			if valid1-valid0 != tc.wantValid || stale1-stale0 != tc.stale {
				t.Errorf("valid +%v, stale +%v; want +%v, +%v", valid1-valid0, stale1-stale0, tc.wantValid, tc.stale)
			}
		})
	}
}
