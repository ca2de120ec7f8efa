package externalsigner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/idplane/idplane/internal/serviceaccount/externalsigner/signertest"
)

// serveSigner serves a test signer on a fresh short socket path.
func serveSigner(t *testing.T) (*signertest.Signer, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "sig")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s, err := signertest.New()
	if err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "signer.sock")
	if err := s.Serve(socket); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s, socket
}

func startClient(t *testing.T, socket string, clk *clocktesting.FakeClock) *Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := Start(ctx, Config{Socket: socket, Clock: clk, CallTimeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return c
}

func fetchCalls(s *signertest.Signer) int {
	s.Lock()
	defer s.Unlock()
	return s.FetchCalls
}

// verify checks that token is signed by the published key it names and carries payload.
func verify(t *testing.T, c *Client, token string, payload []byte) string {
	t.Helper()
	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	kid := jws.Signatures[0].Header.KeyID
	key, ok := c.Lookup(context.Background(), kid)
	if !ok {
		t.Fatalf("token names key %q, which is not published", kid)
	}
	got, err := jws.Verify(key.Key)
	if err != nil || string(got) != string(payload) {
		t.Fatalf("verifying: %q, %v", got, err)
	}
	return kid
}

func counter(t *testing.T, vec *metrics.CounterVec, code string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(vec.WithLabelValues(code))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestSignAndKeys(t *testing.T) {
	signer, socket := serveSigner(t)
	signed, fetched := counter(t, signTotal, "OK"), counter(t, fetchKeysTotal, "OK")
	clk := clocktesting.NewFakeClock(time.Now())
	c := startClient(t, socket, clk)
	if got := c.MaxTokenExpiration(); got != 24*time.Hour {
		t.Errorf("MaxTokenExpiration = %v, want 24h", got)
	}
	if got := c.FreshFor(); got != time.Minute {
		t.Errorf("FreshFor = %v, want the signer's one-minute hint", got)
	}
	payload := []byte(`{"iss":"https://idplane.test","sub":"system:serviceaccount:ns:sa"}`)
	tok, err := c.Sign(context.Background(), payload)
	if err != nil {
		t.Fatal(err)
	}
	first := verify(t, c, tok, payload)
	if counter(t, signTotal, "OK") != signed+1 || counter(t, fetchKeysTotal, "OK") != fetched+1 {
		t.Error("the first fetch and signature are not counted")
	}

	// A rotation in the signer: a token naming the new key makes the client fetch it at once
	// (once a second at most), not at the next hint.
	clk.Step(2 * time.Second)
	second, err := signer.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	tok, err = c.Sign(context.Background(), payload)
	if err != nil {
		t.Fatalf("signing with a key fetched on demand: %v", err)
	}
	if got := verify(t, c, tok, payload); got != second {
		t.Fatalf("signed by %s, want the new key %s", got, second)
	}
	// Tokens naming made-up key IDs, several at once within a second of the last fetch: they
	// wait for the second to pass, and the client fetches at most once a second for them.
	calls, base := fetchCalls(signer), clk.Waiters()
	results := make(chan bool)
	for range 5 {
		go func() {
			_, ok := c.Lookup(context.Background(), "made-up")
			results <- ok
		}()
	}
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return clk.Waiters() > base, nil
	}); err != nil {
		t.Fatal("no lookup waits for the second to pass")
	}
	if got := fetchCalls(signer); got != calls {
		t.Fatalf("unknown key IDs made %d fetches within a second of the last", got-calls)
	}
	seconds := 0
	for answered := 0; answered < 5; {
		select {
		case ok := <-results:
			if ok {
				t.Fatal("a made-up key ID was found")
			}
			answered++
		case <-time.After(10 * time.Millisecond):
			if clk.Waiters() > base {
				clk.Step(time.Second)
				seconds++
			}
		}
	}
	if got := fetchCalls(signer) - calls; got < 1 || got > seconds {
		t.Fatalf("5 lookups of an unknown key over %d seconds made %d fetches, want 1 to %d", seconds, got, seconds)
	}
	calls = fetchCalls(signer)

	// The refresh hint: the client fetches again when it is due and learns the old key is gone.
	signer.Drop(first)
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return clk.HasWaiters(), nil
	}); err != nil {
		t.Fatal("the client set no refresh timer")
	}
	clk.Step(time.Minute)
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return fetchCalls(signer) > calls, nil
	}); err != nil {
		t.Fatal("the client did not fetch keys at the hint")
	}
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return len(c.Accepted()) == 1, nil
	}); err != nil {
		t.Fatalf("after the refresh the client still accepts %d keys", len(c.Accepted()))
	}

	// A failing fetch keeps the keys already fetched.
	signer.Lock()
	signer.FetchError = status.Error(codes.Unavailable, "key store down")
	signer.Unlock()
	unavailable := counter(t, fetchKeysTotal, "Unavailable")
	clk.Step(2 * time.Second)
	if _, ok := c.Lookup(context.Background(), "another-made-up"); ok {
		t.Fatal("a made-up key ID was found")
	}
	if _, ok := c.Lookup(context.Background(), second); !ok {
		t.Fatal("a failed fetch lost the keys fetched before")
	}
	if counter(t, fetchKeysTotal, "Unavailable") != unavailable+1 {
		t.Error("the failed fetch is not counted by its code")
	}
}

func TestDiscoveryExclusion(t *testing.T) {
	signer, socket := serveSigner(t)
	legacy := signer.CurrentKeyID()
	signer.Exclude(legacy)
	current, err := signer.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	c := startClient(t, socket, clocktesting.NewFakeClock(time.Now()))
	keys := c.Accepted()
	if len(keys) != 2 || keys[0].ID != legacy || !keys[0].ExcludeFromDiscovery || keys[1].ID != current || keys[1].ExcludeFromDiscovery {
		t.Fatalf("accepted keys %+v", keys)
	}
	if _, ok := c.Lookup(context.Background(), legacy); !ok {
		t.Fatal("a key excluded from discovery must still verify")
	}
}

// TestMisbehavingSigner checks that nothing a signer answers wrongly becomes a token.
func TestMisbehavingSigner(t *testing.T) {
	signer, socket := serveSigner(t)
	other, err := signer.Rotate() // published, never signing
	if err != nil {
		t.Fatal(err)
	}
	excluded, err := signer.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	signer.Exclude(excluded)
	c := startClient(t, socket, clocktesting.NewFakeClock(time.Now()))
	refused, failed := counter(t, signTotal, "unknown-non-grpc"), counter(t, signTotal, "Internal")
	defer func() {
		if counter(t, signTotal, "unknown-non-grpc") != refused+8 || counter(t, signTotal, "Internal") != failed+1 {
			t.Error("refused tokens and the signer's error are not counted by their codes")
		}
	}()
	for _, tc := range []struct {
		name   string
		mutate func(*signertest.Signer)
		want   string
	}{
		{"an unknown header field", func(s *signertest.Signer) {
			s.HeaderOverride = `{"alg":"ES256","kid":"` + other + `","typ":"JWT","jku":"https://evil.test"}`
		}, `unknown field "jku"`},
		{"not a JWT", func(s *signertest.Signer) { s.HeaderOverride = `{"alg":"ES256","kid":"` + other + `","typ":"JOSE"}` }, `typ is "JOSE"`},
		{"no key ID", func(s *signertest.Signer) { s.HeaderOverride = `{"alg":"ES256","typ":"JWT"}` }, "no kid"},
		{"HMAC", func(s *signertest.Signer) { s.HeaderOverride = `{"alg":"HS256","kid":"` + other + `","typ":"JWT"}` }, `alg "HS256"`},
		{"alg none", func(s *signertest.Signer) { s.HeaderOverride = `{"alg":"none","kid":"` + other + `","typ":"JWT"}` }, `alg "none"`},
		{"an unpublished key", func(s *signertest.Signer) { s.SignWithKeyID = "unpublished" }, `key "unpublished", which it does not publish`},
		{"a key excluded from discovery", func(s *signertest.Signer) { s.SignWithKeyID = excluded }, "excluded from OIDC discovery"},
		{"a signature by another key", func(s *signertest.Signer) { s.SignWithKeyID = other }, "does not verify"},
		{"an error", func(s *signertest.Signer) { s.SignError = status.Error(codes.Internal, "HSM on fire") }, "HSM on fire"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The signer signs with its current key, the excluded one, unless the case says otherwise.
			signer.Lock()
			tc.mutate(signer)
			signer.Unlock()
			defer func() {
				signer.Lock()
				signer.SignWithKeyID, signer.HeaderOverride, signer.SignError = "", "", nil
				signer.Unlock()
			}()
			_, err := c.Sign(context.Background(), []byte(`{"sub":"x"}`))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Sign error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestStartRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*signertest.Signer)
		want   string
	}{
		{"short maximum lifetime", func(s *signertest.Signer) { s.MaxTokenExpirationSeconds = 300 }, "max token life supported by the signer (300s) is less than acceptable (min 600s)"},
		{"no refresh hint", func(s *signertest.Signer) { s.RefreshHintSeconds = 0 }, "invalid refresh hint (0s)"},
		{"keys unavailable", func(s *signertest.Signer) { s.FetchError = status.Error(codes.Unavailable, "vault sealed") }, "vault sealed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			signer, socket := serveSigner(t)
			signer.Lock()
			tc.mutate(signer)
			signer.Unlock()
			_, err := Start(context.Background(), Config{Socket: socket, CallTimeout: 2 * time.Second})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start error %v, want %q", err, tc.want)
			}
		})
	}
	t.Run("no socket", func(t *testing.T) {
		_, err := Start(context.Background(), Config{Socket: filepath.Join(t.TempDir(), "absent.sock")})
		if err == nil || !strings.Contains(err.Error(), "no such file") {
			t.Fatalf("Start error %v, want no such file", err)
		}
	})
	t.Run("not a socket", func(t *testing.T) {
		signer, socket := serveSigner(t)
		signer.Stop()
		// A regular file where the socket should be.
		if err := os.WriteFile(socket, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Start(context.Background(), Config{Socket: socket, CallTimeout: 500 * time.Millisecond})
		if err == nil || !strings.Contains(err.Error(), "is not a socket") {
			t.Fatalf("Start error %v", err)
		}
	})
}

// TestHeaderShape pins the header the test signer produces to the protocol's: alg, kid, typ.
func TestHeaderShape(t *testing.T) {
	signer, socket := serveSigner(t)
	c := startClient(t, socket, clocktesting.NewFakeClock(time.Now()))
	tok, err := c.Sign(context.Background(), []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	h, err := parseHeader(strings.Split(tok, ".")[0])
	if err != nil {
		t.Fatal(err)
	}
	want := header{Algorithm: "ES256", KeyID: signer.CurrentKeyID(), Type: "JWT"}
	if h != want {
		got, _ := json.Marshal(h)
		t.Fatalf("header %s, want %+v", got, want)
	}
}
