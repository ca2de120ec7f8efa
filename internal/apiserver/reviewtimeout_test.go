package apiserver

import (
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/idplane/idplane/internal/serviceaccount/externalsigner/signertest"
)

// TestTokenRequestTimesOut: a TokenRequest still ends at the request deadline when the signer it
// waits for does not answer. The external signer is held (its lock taken, so Sign blocks); with a
// 3 s request timeout the request gets 504, on the review handler and on the library's handler
// alike, and the next one is answered once the signer is back.
func TestTokenRequestTimesOut(t *testing.T) {
	for _, path := range []struct {
		name    string
		generic bool
	}{{"review handler", false}, {"library handler", true}} {
		t.Run(path.name, func(t *testing.T) {
			signer, socket := signertest.Start(t)
			s := startTestServer(t, t.TempDir(), func(o *Options) {
				o.genericReviews = path.generic
				o.ServiceAccounts.SigningEndpoint = socket
				o.RequestTimeout = 3 * time.Second
			})
			ensureServiceAccount(t, s.client, "default", "held")
			if _, err := requestToken(s.client, "default", "held", authenticationv1.TokenRequestSpec{}); err != nil {
				t.Fatal(err)
			}

			signer.Lock()
			start := time.Now()
			_, err := requestToken(s.client, "default", "held", authenticationv1.TokenRequestSpec{})
			elapsed := time.Since(start)
			signer.Unlock()
			if !apierrors.IsTimeout(err) {
				t.Fatalf("token request with the signer held: err = %v, want 504 Timeout", err)
			}
			if elapsed > 10*time.Second {
				t.Errorf("token request with the signer held answered after %v; the request timeout is 3s", elapsed)
			}
			if _, err := requestToken(s.client, "default", "held", authenticationv1.TokenRequestSpec{}); err != nil {
				t.Fatalf("token request once the signer is back: %v", err)
			}
		})
	}
}
