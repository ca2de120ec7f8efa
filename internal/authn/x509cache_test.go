package authn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
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
