package serviceaccount

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// The paths of OIDC discovery for the service-account issuer.
const (
	OpenIDConfigurationPath = "/.well-known/openid-configuration"
	JWKSPath                = "/openid/v1/jwks"
)

// Discovery serves the documents a relying party needs to verify service-account tokens with
// nothing but the issuer URL: the OpenID provider configuration and the key set. Both are built
// from the keys at each request, so a key an external signer adds or drops shows at once.
type Discovery struct {
	issuer, jwksURI string
	keys            PublicKeys
}

// NewDiscovery builds the documents for issuer, whose key set is published at jwksURI. The key set
// holds every accepted public key but those excluded from discovery, so tokens signed before a key
// rotation keep verifying.
func NewDiscovery(issuer, jwksURI string, keys PublicKeys) (*Discovery, error) {
	if err := checkHTTPSURL(issuer); err != nil {
		return nil, fmt.Errorf("service-account issuer %q cannot be discovered: %w", issuer, err)
	}
	if err := checkHTTPSURL(jwksURI); err != nil {
		return nil, fmt.Errorf("service-account JWKS URI %q: %w", jwksURI, err)
	}
	return &Discovery{issuer: issuer, jwksURI: jwksURI, keys: keys}, nil
}

// published returns the key set and the algorithms of its keys.
func (d *Discovery) published() (jose.JSONWebKeySet, []string) {
	var set jose.JSONWebKeySet
	algs := []string{}
	for _, k := range d.keys.Accepted() {
		if k.ExcludeFromDiscovery {
			continue
		}
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.Key, KeyID: k.ID, Algorithm: string(k.Algorithm), Use: "sig"})
		if !slices.Contains(algs, string(k.Algorithm)) {
			algs = append(algs, string(k.Algorithm))
		}
	}
	if set.Keys == nil {
		set.Keys = []jose.JSONWebKey{}
	}
	return set, algs
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
	return d.document("application/json", func() any {
		_, algs := d.published()
		return struct {
			Issuer        string   `json:"issuer"`
			JWKSURI       string   `json:"jwks_uri"`
			ResponseTypes []string `json:"response_types_supported"`
			SubjectTypes  []string `json:"subject_types_supported"`
			SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
		}{d.issuer, d.jwksURI, []string{"id_token"}, []string{"public"}, algs}
	})
}

// JWKSHandler serves the key set.
func (d *Discovery) JWKSHandler() http.Handler {
	return d.document("application/jwk-set+json", func() any {
		set, _ := d.published()
		return set
	})
}

func (d *Discovery) document(contentType string, body func() any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		data, err := json.Marshal(body())
		if err != nil {
			http.Error(w, "encoding the document failed", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", contentType)
		// Relying parties may cache the documents until the keys may next change.
		w.Header().Set("Cache-Control", fmt.Sprintf("public, max-age=%d", int(d.keys.FreshFor()/time.Second)))
		w.Write(data)
	})
}
