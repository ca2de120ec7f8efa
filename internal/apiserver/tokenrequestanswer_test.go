package apiserver

import (
	"context"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTokenRequestAnswer, on both paths a TokenRequest can take (idplane's review handler and the
// library's generic create handler):
//   - the answer carries metadata.creationTimestamp, as upstream's does: the time the token was
//     issued (its "iat"), whatever the client sent;
//   - dryRun is what upstream makes of it: upstream's TokenRequest storage reads no create options,
//     so a dry-run request is admitted as one (admission sees dryRun) and still gets a token that
//     authenticates. Nothing is stored either way.
func TestTokenRequestAnswer(t *testing.T) {
	for _, path := range []struct {
		name    string
		generic bool
	}{{"review handler", false}, {"library handler", true}} {
		t.Run(path.name, func(t *testing.T) {
			s := startTestServer(t, t.TempDir(), func(o *Options) { o.genericReviews = path.generic })
			ensureServiceAccount(t, s.client, "default", "answer")
			accounts := s.client.CoreV1().ServiceAccounts("default")
			sent := metav1.NewTime(time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC))
			for _, tc := range []struct {
				name    string
				options metav1.CreateOptions
			}{
				{"plain", metav1.CreateOptions{}},
				{"dry run", metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					before := time.Now().Truncate(time.Second)
					tr, err := accounts.CreateToken(context.Background(), "answer", &authenticationv1.TokenRequest{
						ObjectMeta: metav1.ObjectMeta{CreationTimestamp: sent},
					}, tc.options)
					if err != nil {
						t.Fatal(err)
					}
					iat := time.Unix(int64(claimsOf(t, tr.Status.Token)["iat"].(float64)), 0)
					created := tr.CreationTimestamp.Time
					if !created.Equal(iat) || created.Before(before) || created.After(time.Now()) {
						t.Errorf("creationTimestamp = %v, want the token's iat %v (sent %v)", tr.CreationTimestamp, iat, sent)
					}
					if !created.Before(tr.Status.ExpirationTimestamp.Time) {
						t.Errorf("creationTimestamp %v is not before expirationTimestamp %v", created, tr.Status.ExpirationTimestamp)
					}
					if st := review(t, s.client, tr.Status.Token); !st.Authenticated || st.User.Username != "system:serviceaccount:default:answer" {
						t.Errorf("review of the token = %+v, want it authenticated as the account", st)
					}
				})
			}
		})
	}
}
