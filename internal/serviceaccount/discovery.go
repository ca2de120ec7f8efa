package serviceaccount

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	jose "github.com/go-jose/go-jose/v4"
)

// The paths of OIDC discovery for the service-account issuer.
const (
	OpenIDConfigurationPath = "/.well-known/openid-configuration"
	JWKSPath                = "/openid/v1/jwks"
)

// Discovery serves the documents a relying party needs to verify service-account tokens with
// nothing but the issuer URL: the OpenID provider configuration and the key set.
type Discovery struct {
	config, jwks []byte
}

// NewDiscovery builds the documents for issuer, whose key set is published at jwksURI. The key set
// holds every accepted public key, so tokens signed before a key rotation keep verifying.
func NewDiscovery(issuer, jwksURI string, keys *Keys) (*Discovery, error) {
	if err := checkHTTPSURL(issuer); err != nil {
		return nil, fmt.Errorf("service-account issuer %q cannot be discovered: %w", issuer, err)
	}
	if err := checkHTTPSURL(jwksURI); err != nil {
		return nil, fmt.Errorf("service-account JWKS URI %q: %w", jwksURI, err)
	}
	var set jose.JSONWebKeySet
	var algs []string
	for _, k := range keys.Public {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.Key, KeyID: k.ID, Algorithm: string(k.Algorithm), Use: "sig"})
		if !slices.Contains(algs, string(k.Algorithm)) {
			algs = append(algs, string(k.Algorithm))
		}
	}
	jwks, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("encoding the service-account key set: %w", err)
	}
	config, err := json.Marshal(struct {
		Issuer        string   `json:"issuer"`
		JWKSURI       string   `json:"jwks_uri"`
		ResponseTypes []string `json:"response_types_supported"`
		SubjectTypes  []string `json:"subject_types_supported"`
		SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
	}{issuer, jwksURI, []string{"id_token"}, []string{"public"}, algs})
	if err != nil {
		return nil, fmt.Errorf("encoding the OpenID configuration: %w", err)
	}
	return &Discovery{config: config, jwks: jwks}, nil
}

func checkHTTPSURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return err
	case u.Scheme != "https":
		return fmt.Errorf("the URL must use https")
	case u.Host == "":
		return fmt.Errorf("the URL has no host")
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("the URL must have no query or fragment")
	}
	return nil
}

// ConfigurationHandler serves the OpenID provider configuration.
func (d *Discovery) ConfigurationHandler() http.Handler {
	return document(d.config, "application/json")
}

// JWKSHandler serves the key set.
func (d *Discovery) JWKSHandler() http.Handler { return document(d.jwks, "application/jwk-set+json") }

func document(body []byte, contentType string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", contentType)
		// Relying parties may cache the documents; a key rotation restarts the server anyway.
		w.Header().Set("Cache-Control", "public, max-age=3600")
		w.Write(body)
	})
}
