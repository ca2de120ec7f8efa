package serviceaccount

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestDiscovery(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := NewKeys(ecKey(t), rsaKey.Public())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, issuer, jwksURI, wantErr string
	}{
		{name: "issuer and its own key set", issuer: "https://idplane.test", jwksURI: "https://idplane.test/openid/v1/jwks"},
		{name: "key set published elsewhere", issuer: "https://idplane.test", jwksURI: "https://keys.example.com/jwks"},
		{name: "plain http issuer", issuer: "http://idplane.test", jwksURI: "https://idplane.test/openid/v1/jwks", wantErr: "https"},
		{name: "issuer with a query", issuer: "https://idplane.test?x=1", jwksURI: "https://idplane.test/openid/v1/jwks", wantErr: "query"},
		{name: "key set without a host", issuer: "https://idplane.test", jwksURI: "https:///jwks", wantErr: "no host"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NewDiscovery(tc.issuer, tc.jwksURI, keys)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var config struct {
				Issuer      string   `json:"issuer"`
				JWKSURI     string   `json:"jwks_uri"`
				SigningAlgs []string `json:"id_token_signing_alg_values_supported"`
			}
			get(t, d.ConfigurationHandler(), &config)
			if config.Issuer != tc.issuer || config.JWKSURI != tc.jwksURI || strings.Join(config.SigningAlgs, ",") != "ES256,RS256" {
				t.Errorf("configuration = %+v", config)
			}
			var set struct {
				Keys []struct{ Kid, Alg, Use string }
			}
			get(t, d.JWKSHandler(), &set)
			if len(set.Keys) != 2 || set.Keys[0].Kid != keys.Public[0].ID || set.Keys[1].Alg != "RS256" || set.Keys[0].Use != "sig" {
				t.Errorf("key set = %+v", set)
			}
		})
	}
}

func get(t *testing.T, h http.Handler, into any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET = %d", rec.Code)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), into); err != nil {
		t.Fatal(err)
	}
	post := httptest.NewRecorder()
	h.ServeHTTP(post, httptest.NewRequest(http.MethodPost, "/", nil))
	if post.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST = %d, want 405", post.Code)
	}
}

// changingKeys is a key source whose keys change, as an external signer's do.
type changingKeys struct {
	keys     []PublicKey
	freshFor time.Duration
}

func (c *changingKeys) Lookup(_ context.Context, kid string) (PublicKey, bool) {
	for _, k := range c.keys {
		if k.ID == kid {
			return k, true
		}
	}
	return PublicKey{}, false
}
func (c *changingKeys) Accepted() []PublicKey   { return c.keys }
func (c *changingKeys) FreshFor() time.Duration { return c.freshFor }

// TestDiscoveryFollowsTheKeys checks that the documents show the keys as they are at each
// request, without those excluded from discovery, cacheable until the keys may change.
func TestDiscoveryFollowsTheKeys(t *testing.T) {
	legacy, err := NewPublicKey("legacy", ecKey(t).Public())
	if err != nil {
		t.Fatal(err)
	}
	legacy.ExcludeFromDiscovery = true
	current, err := NewPublicKey("current", ecKey(t).Public())
	if err != nil {
		t.Fatal(err)
	}
	keys := &changingKeys{keys: []PublicKey{legacy}, freshFor: 90 * time.Second}
	d, err := NewDiscovery("https://idplane.test", "https://idplane.test/openid/v1/jwks", keys)
	if err != nil {
		t.Fatal(err)
	}
	kids := func() string {
		var set struct{ Keys []struct{ Kid string } }
		get(t, d.JWKSHandler(), &set)
		var ids []string
		for _, k := range set.Keys {
			ids = append(ids, k.Kid)
		}
		return strings.Join(ids, ",")
	}
	if got := kids(); got != "" {
		t.Fatalf("published %q; a key excluded from discovery must not be", got)
	}
	keys.keys = append(keys.keys, current)
	if got := kids(); got != "current" {
		t.Fatalf("published %q, want the key added since", got)
	}
	rec := httptest.NewRecorder()
	d.JWKSHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if got := rec.Header().Get("Cache-Control"); got != "public, max-age=90" {
		t.Fatalf("Cache-Control %q, want max-age of the keys' freshness", got)
	}
}
