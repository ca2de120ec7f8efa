package tokens

import (
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"
)

// jwt is an unsigned token carrying claims, enough for Adopt, which reads but does not verify.
func jwt(t *testing.T, claims map[string]any) []byte {
	t.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return []byte(enc([]byte(`{"alg":"ES256"}`)) + "." + enc(payload) + "." + enc([]byte("sig")))
}

func boundClaims(uid string, issued time.Time, life time.Duration, aud any) map[string]any {
	return map[string]any{
		"iat": issued.Unix(), "exp": issued.Add(life).Unix(), "aud": aud,
		"kubernetes.io": map[string]any{
			"namespace":      "ns",
			"serviceaccount": map[string]any{"name": "app"},
			"pod":            map[string]any{"name": "web-" + uid, "uid": uid},
		},
	}
}

func TestAdopt(t *testing.T) {
	hour := time.Hour
	tests := []struct {
		name   string
		claims map[string]any
		raw    string
		source string
		want   bool
	}{
		{name: "fresh token of the pod", claims: boundClaims("u1", start.Add(-10*time.Minute), hour, []string{"https://api"}), want: true},
		{name: "audience asked and named", claims: boundClaims("u1", start.Add(-time.Minute), hour, "vault"), source: "vault", want: true},
		{name: "audience asked, another named", claims: boundClaims("u1", start.Add(-time.Minute), hour, []string{"api"}), source: "vault"},
		{name: "due for refresh (over 80 %)", claims: boundClaims("u1", start.Add(-49*time.Minute), hour, "api")},
		{name: "expired", claims: boundClaims("u1", start.Add(-2*hour), hour, "api")},
		{name: "long token past 24 h", claims: boundClaims("u1", start.Add(-25*hour), 365*24*hour, "api")},
		{name: "another pod's token", claims: boundClaims("u2", start.Add(-time.Minute), hour, "api")},
		{name: "another service account", claims: func() map[string]any {
			c := boundClaims("u1", start.Add(-time.Minute), hour, "api")
			c["kubernetes.io"].(map[string]any)["serviceaccount"] = map[string]any{"name": "other"}
			return c
		}()},
		{name: "not bound to a pod", claims: func() map[string]any {
			c := boundClaims("u1", start.Add(-time.Minute), hour, "api")
			delete(c["kubernetes.io"].(map[string]any), "pod")
			return c
		}()},
		{name: "not a JWT", raw: "garbage"},
		{name: "payload not JSON", raw: "a.bm90IGpzb24.c"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, srv, _ := setup()
			token := []byte(tc.raw)
			if tc.claims != nil {
				token = jwt(t, tc.claims)
			}
			src := source(tc.source, 0)
			pod := testPod("u1")
			if got := m.Adopt(pod, src, token); got != tc.want {
				t.Fatalf("Adopt = %v, want %v", got, tc.want)
			}
			got, err := m.Token(t.Context(), pod, src)
			if err != nil {
				t.Fatal(err)
			}
			if adopted := string(got) == string(token); adopted != tc.want || (srv.numCalls() == 0) != tc.want {
				t.Errorf("Token returned the adopted token: %v, requests: %d", adopted, srv.numCalls())
			}
		})
	}
}

func TestAdoptKeepsACachedToken(t *testing.T) {
	m, _, _ := setup()
	pod, src := testPod("u1"), source("", 0)
	cached, err := m.Token(t.Context(), pod, src)
	if err != nil {
		t.Fatal(err)
	}
	if m.Adopt(pod, src, jwt(t, boundClaims("u1", start, time.Hour, "api"))) {
		t.Fatal("a token from disk replaced a cached one")
	}
	if got, _ := m.Token(t.Context(), pod, src); string(got) != string(cached) {
		t.Errorf("Token = %q, want the cached %q", got, cached)
	}
}

func TestAdoptedTokenIsRefreshedOnTime(t *testing.T) {
	m, srv, clk := setup()
	pod, src := testPod("u1"), source("", 0)
	issued := start.Add(-30 * time.Minute)
	if !m.Adopt(pod, src, jwt(t, boundClaims("u1", issued, time.Hour, "api"))) {
		t.Fatal("not adopted")
	}
	if next := m.NextRefresh(pod.UID); !next.Equal(issued.Add(48 * time.Minute)) {
		t.Errorf("NextRefresh = %v, want 80 %% of the adopted token's life", next)
	}
	clk.SetTime(issued.Add(48 * time.Minute))
	if _, err := m.Token(t.Context(), pod, src); err != nil || srv.numCalls() != 1 {
		t.Errorf("after the refresh time: err %v, %d requests, want one", err, srv.numCalls())
	}
}
