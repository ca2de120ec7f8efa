package authn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/user"
	clocktesting "k8s.io/utils/clock/testing"
)

// countingVerifier stands for the x509 authenticator: it answers with the certificate's subject
// and counts how often it was asked.
type countingVerifier struct {
	calls int
	err   error
}

func (v *countingVerifier) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	v.calls++
	if v.err != nil {
		return nil, false, v.err
	}
	leaf := req.TLS.PeerCertificates[0]
	return &authenticator.Response{User: &user.DefaultInfo{Name: leaf.Subject.CommonName, Groups: []string{"devs"}}}, true, nil
}

// staticCA is a client CA bundle that can be swapped.
type staticCA struct{ bundle []byte }

func (s *staticCA) Name() string                              { return "test-ca" }
func (s *staticCA) CurrentCABundleContent() []byte            { return s.bundle }
func (s *staticCA) VerifyOptions() (x509.VerifyOptions, bool) { return x509.VerifyOptions{}, true }
func (s *staticCA) AddListener(interface{ Enqueue() })        {}

func certRequest(raw string, notAfter time.Time) *http.Request {
	c := &x509.Certificate{Raw: []byte(raw), NotAfter: notAfter}
	c.Subject.CommonName = raw
	return &http.Request{TLS: &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c}}}
}

func TestVerifiedCerts(t *testing.T) {
	now := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now)
	verifier := &countingVerifier{}
	ca := &staticCA{bundle: []byte("ca-1")}
	cached := newVerifiedCerts(verifier, ca, clk)
	// The group adder rewrites the responses it gets, as the server's chain does.
	auth := group.NewAuthenticatedGroupAdder(cached)

	steps := []struct {
		name      string
		req       *http.Request
		before    func()
		wantCalls int
		wantErr   bool
	}{
		{"first request verifies", certRequest("alice", now.Add(time.Hour)), nil, 1, false},
		{"same chain again is remembered", certRequest("alice", now.Add(time.Hour)), nil, 1, false},
		{"another certificate verifies", certRequest("bob", now.Add(time.Hour)), nil, 2, false},
		{"a new client CA verifies again", certRequest("alice", now.Add(time.Hour)), func() { ca.bundle = []byte("ca-2") }, 3, false},
		{"past the cache's lifetime verifies again", certRequest("alice", now.Add(time.Hour)), func() { clk.Step(verifiedCertTTL + time.Second) }, 4, false},
		{"a certificate about to expire is remembered only until then", certRequest("carol", clk.Now().Add(time.Second)), nil, 5, false},
		{"and verified again after", certRequest("carol", clk.Now().Add(time.Second)), func() { clk.Step(2 * time.Second) }, 6, false},
		{"a refusal is not remembered", certRequest("mallory", now.Add(time.Hour)), func() { verifier.err = errors.New("bad chain") }, 7, true},
		{"and asked again", certRequest("mallory", now.Add(time.Hour)), nil, 8, true},
	}
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		resp, ok, err := auth.AuthenticateRequest(s.req)
		if verifier.calls != s.wantCalls {
			t.Errorf("%s: verifier asked %d times, want %d", s.name, verifier.calls, s.wantCalls)
		}
		if s.wantErr {
			if err == nil || ok {
				t.Errorf("%s: %v, %v; want a refusal", s.name, ok, err)
			}
			continue
		}
		if err != nil || !ok {
			t.Fatalf("%s: %v, %v", s.name, ok, err)
		}
		want := s.req.TLS.PeerCertificates[0].Subject.CommonName
		if resp.User.GetName() != want || len(resp.User.GetGroups()) != 2 || resp.User.GetGroups()[1] != user.AllAuthenticated {
			t.Errorf("%s: user %s in %v, want %s in [devs system:authenticated]", s.name, resp.User.GetName(), resp.User.GetGroups(), want)
		}
	}
}

// lockedVerifier is countingVerifier for concurrent callers.
type lockedVerifier struct {
	mu sync.Mutex
	countingVerifier
}

func (v *lockedVerifier) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.countingVerifier.AuthenticateRequest(req)
}

// Many clients at once: each gets its own user, whatever another caller does to its copy, and a
// chain is verified at most once per concurrent burst plus once per miss after it.
func TestVerifiedCertsConcurrent(t *testing.T) {
	now := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	verifier := &lockedVerifier{}
	cached := newVerifiedCerts(verifier, &staticCA{bundle: []byte("ca-1")}, clocktesting.NewFakeClock(now))
	names := []string{"node-a", "node-b", "node-c", "node-d"}
	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for i := range 400 {
		wg.Go(func() {
			name := names[i%len(names)]
			resp, ok, err := cached.AuthenticateRequest(certRequest(name, now.Add(time.Hour)))
			if err != nil || !ok || resp.User.GetName() != name {
				errs <- fmt.Errorf("%s: got %v, %v, %v", name, resp, ok, err)
				return
			}
			// The chain's later authenticators rewrite what they get.
			resp.User.(*user.DefaultInfo).Groups = append(resp.User.GetGroups(), "extra-"+name)
			if g := resp.User.GetGroups(); len(g) != 2 || g[0] != "devs" {
				errs <- fmt.Errorf("%s: groups %v: another caller's change leaked in", name, g)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Once every chain is cached, nothing is verified again.
	calls := verifier.calls
	for _, name := range names {
		if _, _, err := cached.AuthenticateRequest(certRequest(name, now.Add(time.Hour))); err != nil {
			t.Fatal(err)
		}
	}
	if verifier.calls != calls || calls > 400 {
		t.Errorf("verifier asked %d times for 400 requests, then %d more for cached chains", calls, verifier.calls-calls)
	}
}

// Expired entries do not pile up: every sweepEvery stored chains, the expired ones go.
func TestVerifiedCertsSweepsExpired(t *testing.T) {
	now := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now)
	cached := newVerifiedCerts(&countingVerifier{}, &staticCA{bundle: []byte("ca-1")}, clk)
	for i := range sweepEvery - 1 {
		if _, _, err := cached.AuthenticateRequest(certRequest(fmt.Sprintf("old-%d", i), now.Add(time.Hour))); err != nil {
			t.Fatal(err)
		}
	}
	clk.Step(verifiedCertTTL + time.Second)
	if _, _, err := cached.AuthenticateRequest(certRequest("new", clk.Now().Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	left := 0
	cached.entries.Range(func(k, e any) bool { left++; return true })
	if left != 1 {
		t.Errorf("%d entries after the sweep, want only the new one", left)
	}
}
