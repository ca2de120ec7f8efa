package tokens

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeServer issues tokens like the API server: "tok-N", valid for the requested lifetime or for
// lifetime when set, unless fail is set.
type fakeServer struct {
	clk *testingclock.FakeClock

	mu       sync.Mutex
	calls    []call
	lifetime time.Duration
	fail     error
	respond  func(*authenticationv1.TokenRequest) *authenticationv1.TokenRequest
}

type call struct {
	namespace, serviceAccount string
	req                       *authenticationv1.TokenRequest
}

func (s *fakeServer) CreateToken(ctx context.Context, namespace, sa string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, call{namespace, sa, req.DeepCopy()})
	if s.fail != nil {
		return nil, s.fail
	}
	out := req.DeepCopy()
	if s.respond != nil {
		return s.respond(out), nil
	}
	life := time.Duration(*req.Spec.ExpirationSeconds) * time.Second
	if s.lifetime != 0 {
		life = s.lifetime
	}
	out.Status = authenticationv1.TokenRequestStatus{
		Token:               fmt.Sprintf("tok-%d", len(s.calls)),
		ExpirationTimestamp: metav1.NewTime(s.clk.Now().Add(life)),
	}
	return out, nil
}

func (s *fakeServer) numCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

func (s *fakeServer) setFail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

func setup() (*Manager, *fakeServer, *testingclock.FakeClock) {
	clk := testingclock.NewFakeClock(start)
	srv := &fakeServer{clk: clk}
	return New(srv, clk), srv, clk
}

func testPod(uid string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-" + uid, UID: types.UID(uid)},
		Spec:       corev1.PodSpec{ServiceAccountName: "app"},
	}
}

func source(audience string, exp int64) *corev1.ServiceAccountTokenProjection {
	s := &corev1.ServiceAccountTokenProjection{Audience: audience, Path: "token"}
	if exp != 0 {
		s.ExpirationSeconds = ptr.To(exp)
	}
	return s
}

// expect calls Token and checks the token it returns (none: want an error containing errWant)
// and the number of requests made so far.
func expect(t *testing.T, m *Manager, srv *fakeServer, pod *corev1.Pod, src *corev1.ServiceAccountTokenProjection, want string, errWant string, calls int) {
	t.Helper()
	got, err := m.Token(context.Background(), pod, src)
	switch {
	case errWant != "":
		if err == nil || !strings.Contains(err.Error(), errWant) {
			t.Fatalf("Token: %q, %v; want an error containing %q", got, err, errWant)
		}
	case err != nil:
		t.Fatalf("Token: %v", err)
	case string(got) != want:
		t.Fatalf("Token = %q, want %q", got, want)
	}
	if n := srv.numCalls(); n != calls {
		t.Fatalf("%d requests to the server, want %d", n, calls)
	}
}

func TestRequest(t *testing.T) {
	for _, tc := range []struct {
		name      string
		src       *corev1.ServiceAccountTokenProjection
		audiences []string
		exp       int64
	}{
		{"defaults: no audience, one hour", source("", 0), nil, 3600},
		{"audience and expiration passed through", source("vault", 7200), []string{"vault"}, 7200},
		{"shortest lifetime", source("ca.istio.io", 600), []string{"ca.istio.io"}, 600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, srv, _ := setup()
			pod := testPod("uid-1")
			expect(t, m, srv, pod, tc.src, "tok-1", "", 1)
			want := call{namespace: "ns", serviceAccount: "app", req: &authenticationv1.TokenRequest{
				Spec: authenticationv1.TokenRequestSpec{
					Audiences:         tc.audiences,
					ExpirationSeconds: ptr.To(tc.exp),
					BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "web-uid-1", UID: "uid-1"},
				},
			}}
			if diff := cmp.Diff(want, srv.calls[0], cmp.AllowUnexported(call{})); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRefreshAt80Percent(t *testing.T) {
	m, srv, clk := setup()
	pod, src := testPod("uid-1"), source("", 3600)
	expect(t, m, srv, pod, src, "tok-1", "", 1)
	if got, want := m.NextRefresh("uid-1"), start.Add(48*time.Minute); !got.Equal(want) {
		t.Errorf("NextRefresh = %v, want %v", got, want)
	}
	clk.SetTime(start.Add(48*time.Minute - time.Second))
	expect(t, m, srv, pod, src, "tok-1", "", 1)
	clk.SetTime(start.Add(48 * time.Minute))
	expect(t, m, srv, pod, src, "tok-2", "", 2)
	expect(t, m, srv, pod, src, "tok-2", "", 2)
	if got, want := m.NextRefresh("uid-1"), start.Add(96*time.Minute); !got.Equal(want) {
		t.Errorf("NextRefresh after refresh = %v, want %v", got, want)
	}
}

// TestIssuedLifetime: the server may shorten or lengthen the lifetime asked for; refresh follows
// what it issued.
func TestIssuedLifetime(t *testing.T) {
	for _, tc := range []struct {
		name      string
		lifetime  time.Duration
		refreshAt time.Duration
	}{
		{"shortened to 10 minutes", 10 * time.Minute, 8 * time.Minute},
		{"lengthened to 2 hours", 2 * time.Hour, 96 * time.Minute},
		{"a year: refreshed after 24 hours", 365 * 24 * time.Hour, 24 * time.Hour},
		{"just under the 24-hour rule", 30 * time.Hour, 24 * time.Hour},
		{"just over", 29 * time.Hour, 23*time.Hour + 12*time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, srv, clk := setup()
			srv.lifetime = tc.lifetime
			pod, src := testPod("uid-1"), source("", 3607)
			expect(t, m, srv, pod, src, "tok-1", "", 1)
			if got, want := m.NextRefresh("uid-1"), start.Add(tc.refreshAt); !got.Equal(want) {
				t.Errorf("NextRefresh = %v, want %v", got, want)
			}
			clk.SetTime(start.Add(tc.refreshAt - time.Nanosecond))
			expect(t, m, srv, pod, src, "tok-1", "", 1)
			clk.SetTime(start.Add(tc.refreshAt))
			expect(t, m, srv, pod, src, "tok-2", "", 2)
		})
	}
}

// TestLifetimeFromRequestTime: a token's age counts from when it was asked for, on the agent's
// clock, not from the server's idea of its issue time.
func TestLifetimeFromRequestTime(t *testing.T) {
	m, srv, clk := setup()
	srv.respond = func(tr *authenticationv1.TokenRequest) *authenticationv1.TokenRequest {
		tr.Status = authenticationv1.TokenRequestStatus{Token: "skewed", ExpirationTimestamp: metav1.NewTime(clk.Now().Add(-10*time.Minute + time.Hour))}
		return tr
	}
	expect(t, m, srv, testPod("uid-1"), source("", 3600), "skewed", "", 1)
	if got, want := m.NextRefresh("uid-1"), start.Add(40*time.Minute); !got.Equal(want) {
		t.Errorf("NextRefresh = %v, want %v (80 %% of the 50 minutes left)", got, want)
	}
}

func TestFailedRefreshKeepsTokenAndBacksOff(t *testing.T) {
	m, srv, clk := setup()
	srv.lifetime = 365 * 24 * time.Hour // refreshed at 24 h, so the backoff reaches its cap
	pod, src := testPod("uid-1"), source("", 3607)
	expect(t, m, srv, pod, src, "tok-1", "", 1)

	now := start.Add(24 * time.Hour)
	clk.SetTime(now)
	srv.setFail(errors.New("connection refused"))
	expect(t, m, srv, pod, src, "tok-1", "", 2)
	calls := 2
	for _, wait := range []time.Duration{1, 2, 4, 8, 16, 32, 64, 120, 120} {
		wait *= time.Second
		if got, want := m.NextRefresh("uid-1"), now.Add(wait); !got.Equal(want) {
			t.Fatalf("after %d requests NextRefresh = %v, want %v", calls, got, want)
		}
		clk.SetTime(now.Add(wait - time.Nanosecond))
		expect(t, m, srv, pod, src, "tok-1", "", calls) // old token, no request before the backoff ends
		now = now.Add(wait)
		clk.SetTime(now)
		calls++
		expect(t, m, srv, pod, src, "tok-1", "", calls)
	}

	srv.setFail(nil)
	clk.SetTime(now.Add(maxBackoff))
	calls++
	expect(t, m, srv, pod, src, fmt.Sprintf("tok-%d", calls), "", calls)
	if got, want := m.NextRefresh("uid-1"), now.Add(maxBackoff+24*time.Hour); !got.Equal(want) {
		t.Errorf("NextRefresh after recovery = %v, want %v", got, want)
	}

	// A later failure starts again from the first wait.
	now = now.Add(maxBackoff + 24*time.Hour)
	clk.SetTime(now)
	srv.setFail(errors.New("again"))
	expect(t, m, srv, pod, src, fmt.Sprintf("tok-%d", calls), "", calls+1)
	if got, want := m.NextRefresh("uid-1"), now.Add(initialBackoff); !got.Equal(want) {
		t.Errorf("NextRefresh after a new failure = %v, want %v", got, want)
	}
}

func TestExpiredTokenReturnsError(t *testing.T) {
	m, srv, clk := setup()
	pod, src := testPod("uid-1"), source("", 600)
	expect(t, m, srv, pod, src, "tok-1", "", 1)
	expiry := start.Add(10 * time.Minute)
	srv.setFail(errors.New("forbidden"))

	// Refresh is due at 8 minutes; fail until the token is gone. The backoff never waits past
	// the expiry, so a last attempt is made right at it.
	clk.SetTime(start.Add(8 * time.Minute))
	calls := 1
	for m.NextRefresh("uid-1").Before(expiry) {
		clk.SetTime(m.NextRefresh("uid-1"))
		calls++
		expect(t, m, srv, pod, src, "tok-1", "", calls)
	}
	if got := m.NextRefresh("uid-1"); !got.Equal(expiry) {
		t.Fatalf("NextRefresh = %v, want the expiry %v", got, expiry)
	}
	clk.SetTime(expiry)
	calls++
	expect(t, m, srv, pod, src, "", "forbidden", calls)
	// Within the backoff: the error again, without a request.
	expect(t, m, srv, pod, src, "", "forbidden", calls)
	got, err := m.Token(context.Background(), pod, src)
	if got != nil || !strings.Contains(err.Error(), "service account ns/app of pod web-uid-1") {
		t.Errorf("Token = %q, %v; want no token and an error naming the account and pod", got, err)
	}
}

func TestFirstRequestFails(t *testing.T) {
	m, srv, clk := setup()
	pod, src := testPod("uid-1"), source("", 0)
	srv.setFail(errors.New("service account not found"))
	expect(t, m, srv, pod, src, "", "service account not found", 1)
	expect(t, m, srv, pod, src, "", "service account not found", 1)
	if got, want := m.NextRefresh("uid-1"), start.Add(time.Second); !got.Equal(want) {
		t.Errorf("NextRefresh = %v, want %v", got, want)
	}
	srv.setFail(nil)
	clk.SetTime(start.Add(time.Second))
	expect(t, m, srv, pod, src, "tok-2", "", 2)
}

func TestUnusableResponses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  func(now time.Time) authenticationv1.TokenRequestStatus
		wantErr string
	}{
		{"no token", func(now time.Time) authenticationv1.TokenRequestStatus {
			return authenticationv1.TokenRequestStatus{ExpirationTimestamp: metav1.NewTime(now.Add(time.Hour))}
		}, "returned no token"},
		{"no expiration", func(time.Time) authenticationv1.TokenRequestStatus {
			return authenticationv1.TokenRequestStatus{Token: "t"}
		}, "not after the request"},
		{"already expired", func(now time.Time) authenticationv1.TokenRequestStatus {
			return authenticationv1.TokenRequestStatus{Token: "t", ExpirationTimestamp: metav1.NewTime(now)}
		}, "not after the request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, srv, clk := setup()
			srv.respond = func(tr *authenticationv1.TokenRequest) *authenticationv1.TokenRequest {
				tr.Status = tc.status(clk.Now())
				return tr
			}
			expect(t, m, srv, testPod("uid-1"), source("", 0), "", tc.wantErr, 1)
			if got := m.NextRefresh("uid-1"); !got.Equal(start.Add(initialBackoff)) {
				t.Errorf("NextRefresh = %v, want a backoff", got)
			}
		})
	}
}

func TestCanceledRequestDoesNotBackOff(t *testing.T) {
	m, srv, _ := setup()
	pod, src := testPod("uid-1"), source("", 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	srv.setFail(context.Canceled)
	if _, err := m.Token(ctx, pod, src); !errors.Is(err, context.Canceled) {
		t.Fatalf("Token: %v, want context.Canceled", err)
	}
	if got := m.NextRefresh("uid-1"); !got.IsZero() {
		t.Errorf("NextRefresh = %v, want none", got)
	}
	srv.setFail(nil)
	expect(t, m, srv, pod, src, "tok-2", "", 2)
}

func TestCacheKey(t *testing.T) {
	m, srv, _ := setup()
	a, b := testPod("uid-a"), testPod("uid-b")
	expect(t, m, srv, a, source("", 0), "tok-1", "", 1)
	expect(t, m, srv, a, source("", 3600), "tok-1", "", 1) // the default spelled out: same request
	expect(t, m, srv, a, source("vault", 0), "tok-2", "", 2)
	expect(t, m, srv, a, source("vault", 7200), "tok-3", "", 3)
	expect(t, m, srv, b, source("", 0), "tok-4", "", 4)
	other := a.DeepCopy()
	other.Spec.ServiceAccountName = "other"
	expect(t, m, srv, other, source("", 0), "tok-5", "", 5)
	expect(t, m, srv, a, source("vault", 0), "tok-2", "", 5)
	expect(t, m, srv, b, source("", 0), "tok-4", "", 5)
}

func TestNextRefreshEarliestOfPod(t *testing.T) {
	m, srv, _ := setup()
	if got := m.NextRefresh("uid-1"); !got.IsZero() {
		t.Errorf("NextRefresh of an unknown pod = %v, want zero", got)
	}
	pod := testPod("uid-1")
	expect(t, m, srv, pod, source("a", 7200), "tok-1", "", 1)
	expect(t, m, srv, pod, source("b", 600), "tok-2", "", 2)
	expect(t, m, srv, pod, source("c", 3600), "tok-3", "", 3)
	expect(t, m, srv, testPod("uid-2"), source("", 60), "tok-4", "", 4)
	if got, want := m.NextRefresh("uid-1"), start.Add(8*time.Minute); !got.Equal(want) {
		t.Errorf("NextRefresh = %v, want %v", got, want)
	}
}

func TestForget(t *testing.T) {
	m, srv, _ := setup()
	a, b := testPod("uid-a"), testPod("uid-b")
	expect(t, m, srv, a, source("", 0), "tok-1", "", 1)
	expect(t, m, srv, a, source("vault", 0), "tok-2", "", 2)
	expect(t, m, srv, b, source("", 0), "tok-3", "", 3)
	m.Forget("uid-a")
	if got := m.NextRefresh("uid-a"); !got.IsZero() {
		t.Errorf("NextRefresh of a forgotten pod = %v, want zero", got)
	}
	if got := m.NextRefresh("uid-b"); got.IsZero() {
		t.Errorf("Forget of one pod dropped another's token")
	}
	expect(t, m, srv, b, source("", 0), "tok-3", "", 3)
	expect(t, m, srv, a, source("", 0), "tok-4", "", 4)
}

func TestRefused(t *testing.T) {
	m, srv, _ := setup()
	noSA := testPod("uid-1")
	noSA.Spec.ServiceAccountName = ""
	noUID := testPod("")
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		src     *corev1.ServiceAccountTokenProjection
		wantErr string
	}{
		{"no pod", nil, source("", 0), "pod and source are required"},
		{"no source", testPod("uid-1"), nil, "pod and source are required"},
		{"no service account", noSA, source("", 0), "names no service account"},
		{"no UID", noUID, source("", 0), "no namespace, name or UID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := m.Token(context.Background(), tc.pod, tc.src); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Token: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
	if n := srv.numCalls(); n != 0 {
		t.Errorf("%d requests for refused input", n)
	}
}

// blockingServer holds the requests for pods named in slow until released.
type blockingServer struct {
	fakeServer
	slow    string
	entered chan struct{}
	release chan struct{}
}

func (s *blockingServer) CreateToken(ctx context.Context, ns, sa string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	if req.Spec.BoundObjectRef.Name == s.slow {
		s.entered <- struct{}{}
		<-s.release
	}
	return s.fakeServer.CreateToken(ctx, ns, sa, req)
}

func newBlocking(slow string) (*Manager, *blockingServer) {
	clk := testingclock.NewFakeClock(start)
	srv := &blockingServer{fakeServer: fakeServer{clk: clk}, slow: slow, entered: make(chan struct{}, 100), release: make(chan struct{})}
	return New(srv, clk), srv
}

// TestConcurrentCallersShareOneRequest: callers racing on one token make one request.
func TestConcurrentCallersShareOneRequest(t *testing.T) {
	m, srv := newBlocking("web-uid-1")
	pod, src := testPod("uid-1"), source("", 0)
	const n = 20
	var wg sync.WaitGroup
	results := make(chan string, n)
	for range n {
		wg.Go(func() {
			tok, err := m.Token(context.Background(), pod, src)
			if err != nil {
				t.Errorf("Token: %v", err)
			}
			results <- string(tok)
		})
	}
	<-srv.entered
	close(srv.release)
	wg.Wait()
	close(results)
	for tok := range results {
		if tok != "tok-1" {
			t.Errorf("a caller got %q, want tok-1", tok)
		}
	}
	if c := srv.numCalls(); c != 1 {
		t.Errorf("%d requests, want 1", c)
	}
}

// TestOtherTokensNotBlocked: a request in flight for one token holds up neither another pod's
// token, nor another token of the same pod, nor NextRefresh and Forget.
func TestOtherTokensNotBlocked(t *testing.T) {
	m, srv := newBlocking("web-slow")
	slow := testPod("slow")
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := m.Token(context.Background(), slow, source("", 0)); err != nil {
			t.Errorf("slow Token: %v", err)
		}
	}()
	<-srv.entered
	if _, err := m.Token(context.Background(), testPod("fast"), source("", 0)); err != nil {
		t.Fatalf("Token of another pod: %v", err)
	}
	m.NextRefresh("slow")
	m.Forget("fast")
	close(srv.release)
	<-done
	if c := srv.numCalls(); c != 2 {
		t.Errorf("%d requests, want 2", c)
	}
}
