package serviceaccount

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/asn1"
	"encoding/base64"
	"math/big"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

// TestLocalSignerMatchesJOSE: the signer writes the header go-jose writes for the same key and
// options, byte for byte, and go-jose verifies what it signs, for every accepted algorithm; so
// tokens look as before the signer stopped going through go-jose.
func TestLocalSignerMatchesJOSE(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ec := func(c elliptic.Curve) crypto.Signer {
		k, err := ecdsa.GenerateKey(c, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	for _, tc := range []struct {
		alg jose.SignatureAlgorithm
		key crypto.Signer
	}{
		{jose.RS256, rsaKey},
		{jose.ES256, ec(elliptic.P256())},
		{jose.ES384, ec(elliptic.P384())},
		{jose.ES512, ec(elliptic.P521())},
	} {
		t.Run(string(tc.alg), func(t *testing.T) {
			keys, err := NewKeys(tc.key)
			if err != nil {
				t.Fatal(err)
			}
			if got := keys.signingKey().Algorithm; got != tc.alg {
				t.Fatalf("algorithm %s, want %s", got, tc.alg)
			}
			signer, err := keys.Signer()
			if err != nil {
				t.Fatal(err)
			}
			ref, err := jose.NewSigner(jose.SigningKey{Algorithm: tc.alg, Key: jose.JSONWebKey{Key: tc.key, KeyID: keys.signingKey().ID}},
				(&jose.SignerOptions{}).WithType("JWT"))
			if err != nil {
				t.Fatal(err)
			}
			refJWS, err := ref.Sign([]byte(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			refRaw, err := refJWS.CompactSerialize()
			if err != nil {
				t.Fatal(err)
			}
			// Enough signatures that an r or s with leading zero bytes is likely among them on
			// the small curves; the padding itself is pinned by TestECDSARaw.
			for i := range 32 {
				payload := []byte(`{"iss":"https://idplane.test","n":` + string(rune('0'+i%10)) + `}`)
				raw, err := signer.Sign(context.Background(), payload)
				if err != nil {
					t.Fatal(err)
				}
				header, _, _ := strings.Cut(raw, ".")
				refHeader, _, _ := strings.Cut(refRaw, ".")
				if header != refHeader {
					t.Fatalf("header %s, go-jose writes %s", decodeSegment(t, header), decodeSegment(t, refHeader))
				}
				jws, err := jose.ParseSignedCompact(raw, []jose.SignatureAlgorithm{tc.alg})
				if err != nil {
					t.Fatal(err)
				}
				got, err := jws.Verify(tc.key.Public())
				if err != nil {
					t.Fatalf("go-jose does not verify the token: %v", err)
				}
				if !bytes.Equal(got, payload) {
					t.Fatalf("payload %s, want %s", got, payload)
				}
			}
		})
	}
}

func decodeSegment(t *testing.T, s string) string {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestECDSARaw: r and s are right-aligned at the curve's width whatever their DER length, and a
// signature that is not exactly two positive integers fitting that width is refused.
func TestECDSARaw(t *testing.T) {
	der := func(v any) []byte {
		b, err := asn1.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	type sig struct{ R, S *big.Int }
	full := new(big.Int).SetBytes(bytes.Repeat([]byte{0xff}, 32)) // DER adds a leading zero byte
	tooLong := new(big.Int).Lsh(big.NewInt(1), 256)
	for _, tc := range []struct {
		name string
		der  []byte
		want []byte // nil: refused
	}{
		{"short values are left-padded", der(sig{big.NewInt(1), big.NewInt(0x0203)}),
			append(append(make([]byte, 31), 1), append(make([]byte, 30), 2, 3)...)},
		{"full-width values lose DER's sign byte", der(sig{full, full}), bytes.Repeat([]byte{0xff}, 64)},
		{"value wider than the curve", der(sig{tooLong, big.NewInt(1)}), nil},
		{"zero", der(sig{big.NewInt(0), big.NewInt(1)}), nil},
		{"negative", der(sig{big.NewInt(-1), big.NewInt(1)}), nil},
		{"trailing bytes", append(der(sig{big.NewInt(1), big.NewInt(1)}), 0), nil},
		{"not DER", []byte{1, 2, 3}, nil},
		{"one integer", der(struct{ R *big.Int }{big.NewInt(1)}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ecdsaRaw(tc.der, 32)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("accepted as %x", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("got %x, want %x", got, tc.want)
			}
		})
	}
}

// TestSignerPrecomputesRSA: a key built without its precomputed values gets them once, when the
// signer is built, rather than deriving them for every signature.
func TestSignerPrecomputesRSA(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	bare := &rsa.PrivateKey{PublicKey: k.PublicKey, D: k.D, Primes: k.Primes}
	keys, err := NewKeys(bare)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keys.Signer(); err != nil {
		t.Fatal(err)
	}
	if bare.Precomputed.Dp == nil || bare.Precomputed.Qinv == nil {
		t.Fatal("the signer did not precompute the key's CRT values")
	}
}
