package podcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAcceptChain(t *testing.T) {
	keyPEM, _, err := newKey("ECDSAP256")
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := publicKey(keyPEM)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	good := certFor(t, pub, t0, 2*time.Hour)
	for _, tc := range []struct {
		name   string
		status func() (chain string, nb, na, refresh time.Time)
		now    time.Time
		want   string // "" accepted
	}{
		{"good", func() (string, time.Time, time.Time, time.Time) {
			return "junk before\n" + good, t0, t0.Add(2 * time.Hour), t0.Add(time.Hour)
		}, t0, ""},
		{"another key's leaf", func() (string, time.Time, time.Time, time.Time) {
			return certFor(t, other.Public(), t0, 2*time.Hour), t0, t0.Add(2 * time.Hour), t0.Add(time.Hour)
		}, t0, "not for the key"},
		{"a private key in the chain", func() (string, time.Time, time.Time, time.Time) {
			return good + string(keyPEM), t0, t0.Add(2 * time.Hour), t0.Add(time.Hour)
		}, t0, `"PRIVATE KEY" PEM block`},
		{"huge", func() (string, time.Time, time.Time, time.Time) {
			return strings.Repeat(good, maxChainBytes/len(good)+1), t0, t0.Add(2 * time.Hour), t0.Add(time.Hour)
		}, t0, "more than"},
		{"empty", func() (string, time.Time, time.Time, time.Time) {
			return "", t0, t0.Add(2 * time.Hour), t0.Add(time.Hour)
		}, t0, "no certificate"},
		{"expired", func() (string, time.Time, time.Time, time.Time) {
			return good, t0, t0.Add(2 * time.Hour), t0.Add(time.Hour)
		}, t0.Add(3 * time.Hour), "expired"},
		{"times not the leaf's", func() (string, time.Time, time.Time, time.Time) {
			return good, t0, t0.Add(3 * time.Hour), t0.Add(time.Hour)
		}, t0, "not the leaf"},
		{"refresh outside validity", func() (string, time.Time, time.Time, time.Time) {
			return good, t0, t0.Add(2 * time.Hour), t0.Add(5 * time.Hour)
		}, t0, "beginRefreshAt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chain, nb, na, refresh := tc.status()
			st := issuedStatus(chain, nb, 0)
			st.NotAfter, st.BeginRefreshAt = &metav1.Time{Time: na}, &metav1.Time{Time: refresh}
			got, err := acceptChain(&st, keyPEM, tc.now)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "" && string(got.chain) != good:
				t.Fatalf("chain not cleaned to its certificate:\n%s", got.chain)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}
