package serviceaccount

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	apiserviceaccount "k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/utils/clock"
)

// Signer turns a token's claims (the JWT payload, JSON) into a signed compact JWT: with a local
// key, or by asking an external signer.
type Signer interface {
	Sign(ctx context.Context, payload []byte) (string, error)
}

// localSigner signs with the private key of the files.
type localSigner struct{ signer jose.Signer }

func (s localSigner) Sign(_ context.Context, payload []byte) (string, error) {
	jws, err := s.signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}

// Signer returns the Signer of the signing key.
func (k *Keys) Signer() (Signer, error) {
	pk := k.signingKey()
	signer, err := jose.NewSigner(
		jose.SigningKey{Algorithm: pk.Algorithm, Key: jose.JSONWebKey{Key: k.Signing, KeyID: pk.ID}},
		(&jose.SignerOptions{}).WithType("JWT"),
	)
	if err != nil {
		return nil, fmt.Errorf("building the service-account token signer: %w", err)
	}
	return localSigner{signer}, nil
}

// Issuer signs service-account tokens with a Signer, in the name of one issuer.
type Issuer struct {
	name   string
	signer Signer
	clock  clock.PassiveClock
}

// NewIssuer returns an issuer named name (the "iss" claim) signing with signer.
func NewIssuer(name string, signer Signer, clk clock.PassiveClock) *Issuer {
	return &Issuer{name: name, signer: signer, clock: clk}
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
func (i *Issuer) Issue(ctx context.Context, r TokenRequest) (Token, error) {
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
	raw, err := i.sign(ctx, struct {
		jwt.Claims
		privateClaims
	}{public, private})
	if err != nil {
		return Token{}, fmt.Errorf("signing token for service account %s/%s: %w", sa.Namespace, sa.Name, err)
	}
	signingDuration.Observe(i.clock.Since(start).Seconds())
	return Token{Raw: raw, Expires: exp, ID: id}, nil
}

// IssueLegacy signs a token that never expires, for a kubernetes.io/service-account-token secret;
// it authenticates only while that secret holds it.
func (i *Issuer) IssueLegacy(ctx context.Context, sa *corev1.ServiceAccount, secret *corev1.Secret) (string, error) {
	public := jwt.Claims{Issuer: LegacyIssuer, Subject: apiserviceaccount.MakeUsername(sa.Namespace, sa.Name)}
	private := legacyClaims{
		Namespace:          sa.Namespace,
		SecretName:         secret.Name,
		ServiceAccountName: sa.Name,
		ServiceAccountUID:  string(sa.UID),
	}
	raw, err := i.sign(ctx, struct {
		jwt.Claims
		legacyClaims
	}{public, private})
	if err != nil {
		return "", fmt.Errorf("signing legacy token for service account %s/%s: %w", sa.Namespace, sa.Name, err)
	}
	return raw, nil
}

// sign encodes claims, one struct of the registered and private claims, as the payload.
func (i *Issuer) sign(ctx context.Context, claims any) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("encoding claims: %w", err)
	}
	return i.signer.Sign(ctx, payload)
}
