// Package jwttest runs a service-account token issuer for tests of JWT authentication: an
// idplane issuer (the real signing and discovery code) whose documents are served over TLS, as
// another cluster's would be, and whose clock the test sets.
package jwttest

import (
	"context"
	"crypto"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/idplane/idplane/internal/serviceaccount"
)

// Issuer is a running issuer: Name is its "iss", URL where its documents are served (the same
// unless started with StartNamed). Clock is the issuer's: tokens are issued at its time.
type Issuer struct {
	Name  string
	URL   string
	CAPEM string
	Clock *clocktesting.FakePassiveClock

	issuer *serviceaccount.Issuer
	server *httptest.Server
	// keysDown makes the key set answer 503, as an issuer in trouble would.
	keysDown atomic.Bool
}

// Start serves an issuer signing with key at https://127.0.0.1:port until the test ends.
func Start(t testing.TB, key crypto.Signer) *Issuer {
	t.Helper()
	return StartNamed(t, key, "")
}

// StartNamed is Start for an issuer named name (its "iss") whose documents are served elsewhere,
// at URL, as a cluster's own issuer is when its relying parties reach it by another address;
// an empty name is URL.
func StartNamed(t testing.TB, key crypto.Signer, name string) *Issuer {
	t.Helper()
	keys, err := serviceaccount.NewKeys(key)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	srv := httptest.NewUnstartedServer(mux)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	if name == "" {
		name = srv.URL
	}
	discovery, err := serviceaccount.NewDiscovery(name, srv.URL+"/openid/v1/jwks", keys)
	if err != nil {
		t.Fatal(err)
	}
	clock := clocktesting.NewFakePassiveClock(time.Now())
	signer, err := keys.Signer()
	if err != nil {
		t.Fatal(err)
	}
	issuer := serviceaccount.NewIssuer(name, signer, clock)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	i := &Issuer{Name: name, URL: srv.URL, CAPEM: string(ca), Clock: clock, issuer: issuer, server: srv}
	mux.Handle("/.well-known/openid-configuration", discovery.ConfigurationHandler())
	jwks := discovery.JWKSHandler()
	mux.HandleFunc("/openid/v1/jwks", func(w http.ResponseWriter, r *http.Request) {
		if i.keysDown.Load() {
			http.Error(w, "key set unavailable", http.StatusServiceUnavailable)
			return
		}
		jwks.ServeHTTP(w, r)
	})
	return i
}

// KeysDown makes the key set answer 503 (down) or serve again; discovery keeps answering.
func (i *Issuer) KeysDown(down bool) { i.keysDown.Store(down) }

// Stop stops serving discovery and keys; tokens already verified stay verifiable with the keys
// a relying party has cached.
func (i *Issuer) Stop() { i.server.Close() }

// PodToken issues a token of service account namespace/name bound to pod podName, for audience,
// valid for lifetime from the issuer's clock.
func (i *Issuer) PodToken(t testing.TB, namespace, name, podName, audience string, lifetime time.Duration) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-sa-" + name)}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: podName, UID: types.UID("uid-pod-" + podName)}}
	tok, err := i.issuer.Issue(context.Background(), serviceaccount.TokenRequest{
		Binding:   serviceaccount.Binding{ServiceAccount: sa, Pod: pod},
		Audiences: []string{audience},
		Lifetime:  lifetime,
	})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Raw
}
