package serviceaccount

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
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

// localSigner signs with the private key of the files. Every token it signs has the same
// protected header, so the header is encoded once; a token costs one hash, one signature and the
// base64 of the payload and the signature.
type localSigner struct {
	key crypto.Signer
	// header is the encoded protected header and its trailing dot, which the signing input and
	// the token both start with.
	header []byte
	hash   crypto.Hash
	// ecSize, for an ECDSA key, is the size in bytes of each of r and s, which JWS (RFC 7518,
	// section 3.4) concatenates at fixed width instead of the DER the key returns.
	ecSize int
}

func (s localSigner) Sign(_ context.Context, payload []byte) (string, error) {
	enc := base64.RawURLEncoding
	// The token is the signing input and ".<signature>"; the signature of the largest key
	// (RSA 4096 or P-521) fits in 512 bytes.
	buf := make([]byte, 0, len(s.header)+enc.EncodedLen(len(payload))+1+enc.EncodedLen(512))
	buf = append(buf, s.header...)
	buf = enc.AppendEncode(buf, payload)
	h := s.hash.New()
	h.Write(buf)
	sig, err := s.key.Sign(rand.Reader, h.Sum(nil), s.hash)
	if err != nil {
		return "", err
	}
	if s.ecSize > 0 {
		if sig, err = ecdsaRaw(sig, s.ecSize); err != nil {
			return "", err
		}
	}
	buf = append(buf, '.')
	return string(enc.AppendEncode(buf, sig)), nil
}

// ecdsaRaw turns an ASN.1 ECDSA signature into r and s, each left-padded to size bytes.
func ecdsaRaw(der []byte, size int) ([]byte, error) {
	var sig struct{ R, S *big.Int }
	rest, err := asn1.Unmarshal(der, &sig)
	if err != nil || len(rest) > 0 || sig.R.Sign() <= 0 || sig.S.Sign() <= 0 ||
		sig.R.BitLen() > 8*size || sig.S.BitLen() > 8*size {
		return nil, errors.New("malformed ECDSA signature")
	}
	out := make([]byte, 2*size)
	sig.R.FillBytes(out[:size])
	sig.S.FillBytes(out[size:])
	return out, nil
}

// jwsHeader is the protected header of every token; its fields are in the order go-jose and
// Kubernetes write them (sorted), so tokens look as they always have.
type jwsHeader struct {
	Algorithm jose.SignatureAlgorithm `json:"alg"`
	KeyID     string                  `json:"kid"`
	Type      string                  `json:"typ"`
}

// Signer returns the Signer of the signing key.
func (k *Keys) Signer() (Signer, error) {
	pk := k.signingKey()
	s := localSigner{key: k.Signing}
	switch pk.Algorithm {
	case jose.RS256:
		s.hash = crypto.SHA256
		if rk, ok := k.Signing.(*rsa.PrivateKey); ok {
			// A key without its precomputed values (CRT and the checked key) would derive
			// them again for every signature; keys parsed from PEM have them already, a key
			// built in code may not.
			rk.Precompute()
		}
	case jose.ES256:
		s.hash, s.ecSize = crypto.SHA256, 32
	case jose.ES384:
		s.hash, s.ecSize = crypto.SHA384, 48
	case jose.ES512:
		s.hash, s.ecSize = crypto.SHA512, 66
	default:
		return nil, fmt.Errorf("building the service-account token signer: algorithm %s is not supported", pk.Algorithm)
	}
	header, err := json.Marshal(jwsHeader{Algorithm: pk.Algorithm, KeyID: pk.ID, Type: "JWT"})
	if err != nil {
		return nil, fmt.Errorf("building the service-account token signer: %w", err)
	}
	s.header = append(base64.RawURLEncoding.AppendEncode(nil, header), '.')
	return s, nil
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
	Raw string
	// Issued is the token's "iat" (and "nbf"), Expires its "exp".
	Issued, Expires time.Time
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
	return Token{Raw: raw, Issued: now, Expires: exp, ID: id}, nil
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
