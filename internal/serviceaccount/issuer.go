package serviceaccount

import (
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	apiserviceaccount "k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/utils/clock"
)

// Issuer signs service-account tokens with the signing key, in the name of one issuer.
type Issuer struct {
	name   string
	signer jose.Signer
	clock  clock.PassiveClock
}

// NewIssuer returns an issuer named name (the "iss" claim) signing with keys.Signing.
func NewIssuer(name string, keys *Keys, clk clock.PassiveClock) (*Issuer, error) {
	k := keys.signingKey()
	signer, err := jose.NewSigner(
		jose.SigningKey{Algorithm: k.Algorithm, Key: jose.JSONWebKey{Key: keys.Signing, KeyID: k.ID}},
		(&jose.SignerOptions{}).WithType("JWT"),
	)
	if err != nil {
		return nil, fmt.Errorf("building the service-account token signer: %w", err)
	}
	return &Issuer{name: name, signer: signer, clock: clk}, nil
}

// Name is the issuer's "iss".
func (i *Issuer) Name() string { return i.name }

// TokenRequest is what one bound token is issued for.
type TokenRequest struct {
	Binding   Binding
	Audiences []string
	Lifetime  time.Duration
	// WarnAfter, when positive, marks a token issued for longer than asked: this long after issue,
	// using the token is counted as stale, so that clients that never refresh can be found.
	WarnAfter time.Duration
}

// Token is a signed token and what a caller reports about it.
type Token struct {
	Raw     string
	Expires time.Time
	// ID is the "jti", which the authenticator reports as the credential ID.
	ID string
}

// Issue signs a bound token.
func (i *Issuer) Issue(r TokenRequest) (Token, error) {
	start := i.clock.Now()
	now := start.Truncate(time.Second)
	sa := r.Binding.ServiceAccount
	id := string(uuid.NewUUID())
	exp := now.Add(r.Lifetime)
	public := jwt.Claims{
		Issuer:    i.name,
		Subject:   apiserviceaccount.MakeUsername(sa.Namespace, sa.Name),
		Audience:  jwt.Audience(r.Audiences),
		Expiry:    jwt.NewNumericDate(exp),
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		ID:        id,
	}
	private := privateClaims{Kubernetes: r.Binding.claims()}
	if r.WarnAfter > 0 {
		private.Kubernetes.WarnAfter = jwt.NewNumericDate(now.Add(r.WarnAfter))
	}
	raw, err := jwt.Signed(i.signer).Claims(public).Claims(private).Serialize()
	if err != nil {
		return Token{}, fmt.Errorf("signing token for service account %s/%s: %w", sa.Namespace, sa.Name, err)
	}
	signingDuration.Observe(i.clock.Since(start).Seconds())
	return Token{Raw: raw, Expires: exp, ID: id}, nil
}

// IssueLegacy signs a token that never expires, for a kubernetes.io/service-account-token secret;
// it authenticates only while that secret holds it.
func (i *Issuer) IssueLegacy(sa *corev1.ServiceAccount, secret *corev1.Secret) (string, error) {
	public := jwt.Claims{Issuer: LegacyIssuer, Subject: apiserviceaccount.MakeUsername(sa.Namespace, sa.Name)}
	private := legacyClaims{
		Namespace:          sa.Namespace,
		SecretName:         secret.Name,
		ServiceAccountName: sa.Name,
		ServiceAccountUID:  string(sa.UID),
	}
	raw, err := jwt.Signed(i.signer).Claims(public).Claims(private).Serialize()
	if err != nil {
		return "", fmt.Errorf("signing legacy token for service account %s/%s: %w", sa.Namespace, sa.Name, err)
	}
	return raw, nil
}
