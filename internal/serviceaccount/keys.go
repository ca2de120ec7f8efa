// Package serviceaccount issues and verifies service-account JWTs: the signing key and the public
// keys still accepted, the claims of bound and legacy tokens, the issuer, the verifier that backs
// the token authenticator, and the OIDC discovery documents that let others verify the tokens.
package serviceaccount

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"k8s.io/client-go/util/keyutil"
)

// Keys are the key that signs new tokens and every public key whose tokens are still accepted.
type Keys struct {
	Signing crypto.Signer
	// Public holds the signing key's public half first, then the extra keys, each once.
	Public []PublicKey
}

// PublicKey is an accepted verification key with the key ID and algorithm tokens name it by.
type PublicKey struct {
	ID        string
	Algorithm jose.SignatureAlgorithm
	Key       crypto.PublicKey
	// ExcludeFromDiscovery keeps the key out of the published key set: an external signer's key
	// that still verifies older tokens (legacy ones, say) but signs nothing new.
	ExcludeFromDiscovery bool
}

// PublicKeys are the keys tokens are verified with: local files read once, or an external
// signer's set, refreshed.
type PublicKeys interface {
	// Lookup returns the accepted key named kid. A source that can learn of new keys asks for
	// them before it answers that a key is unknown.
	Lookup(ctx context.Context, kid string) (PublicKey, bool)
	// Accepted returns every accepted key.
	Accepted() []PublicKey
	// FreshFor is how long a relying party may cache the published key set.
	FreshFor() time.Duration
}

var _ PublicKeys = (*Keys)(nil)

// Lookup finds a key of the files.
func (k *Keys) Lookup(_ context.Context, kid string) (PublicKey, bool) {
	if p := k.find(kid); p != nil {
		return *p, true
	}
	return PublicKey{}, false
}

// Accepted returns the keys of the files, the signing key's first.
func (k *Keys) Accepted() []PublicKey { return k.Public }

// FreshFor is an hour: the files change only with a restart.
func (k *Keys) FreshFor() time.Duration { return time.Hour }

// NewKeys pairs a signing key with the extra public keys accepted for rotation. Duplicates of a
// key are dropped so that the JWKS lists each key once.
func NewKeys(signing crypto.Signer, extra ...crypto.PublicKey) (*Keys, error) {
	k := &Keys{Signing: signing}
	for _, pub := range append([]crypto.PublicKey{signing.Public()}, extra...) {
		pk, err := newPublicKey(pub)
		if err != nil {
			return nil, err
		}
		if k.find(pk.ID) == nil {
			k.Public = append(k.Public, pk)
		}
	}
	return k, nil
}

// LoadKeys reads the signing key (PEM private key) and the extra verification keys (PEM files of
// public keys, private keys or certificates; a file may hold several).
func LoadKeys(signingKeyFile string, publicKeyFiles []string) (*Keys, error) {
	signing, err := keyutil.PrivateKeyFromFile(signingKeyFile)
	if err != nil {
		return nil, fmt.Errorf("reading service-account signing key %s: %w", signingKeyFile, err)
	}
	signer, ok := signing.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("service-account signing key %s cannot sign", signingKeyFile)
	}
	var extra []crypto.PublicKey
	for _, f := range publicKeyFiles {
		keys, err := keyutil.PublicKeysFromFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading service-account key file %s: %w", f, err)
		}
		for _, key := range keys {
			extra = append(extra, key)
		}
	}
	return NewKeys(signer, extra...)
}

func (k *Keys) find(id string) *PublicKey {
	for i := range k.Public {
		if k.Public[i].ID == id {
			return &k.Public[i]
		}
	}
	return nil
}

// signingKey is the signing key's own entry of Public.
func (k *Keys) signingKey() PublicKey { return k.Public[0] }

// NewPublicKey checks a public key the way local keys are checked (type, size, curve) and gives
// it its algorithm, under the ID its source names it by.
func NewPublicKey(id string, pub crypto.PublicKey) (PublicKey, error) {
	alg, err := algorithmFor(pub)
	if err != nil {
		return PublicKey{}, err
	}
	return PublicKey{ID: id, Algorithm: alg, Key: pub}, nil
}

// IsAcceptedAlgorithm says whether tokens may be signed with alg.
func IsAcceptedAlgorithm(alg string) bool {
	for _, a := range acceptedAlgorithms {
		if string(a) == alg {
			return true
		}
	}
	return false
}

// newPublicKey names a key by the SHA-256 of its DER form, as Kubernetes does, so that a key keeps
// its ID across restarts and replicas, and picks the algorithm its type signs with.
func newPublicKey(pub crypto.PublicKey) (PublicKey, error) {
	alg, err := algorithmFor(pub)
	if err != nil {
		return PublicKey{}, err
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return PublicKey{}, fmt.Errorf("encoding service-account public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return PublicKey{ID: base64.RawURLEncoding.EncodeToString(sum[:]), Algorithm: alg, Key: pub}, nil
}

// minRSABits refuses RSA keys too short to trust with cluster credentials.
const minRSABits = 2048

func algorithmFor(pub crypto.PublicKey) (jose.SignatureAlgorithm, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if k.N.BitLen() < minRSABits {
			return "", fmt.Errorf("RSA service-account key of %d bits: at least %d are needed", k.N.BitLen(), minRSABits)
		}
		return jose.RS256, nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return jose.ES256, nil
		case elliptic.P384():
			return jose.ES384, nil
		case elliptic.P521():
			return jose.ES512, nil
		}
		return "", fmt.Errorf("ECDSA service-account key on unsupported curve %s", k.Curve.Params().Name)
	}
	return "", fmt.Errorf("service-account key of type %T is not supported: use an RSA or ECDSA key", pub)
}

// acceptedAlgorithms are the only ones a token may name; "none" and the HMAC family are never
// among them, so a public key can never be used as an HMAC secret.
var acceptedAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.ES384, jose.ES512}
