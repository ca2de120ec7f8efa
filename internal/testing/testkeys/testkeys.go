// Package testkeys gives tests one private key of each type the certificate signers take, made
// once per test binary: RSA keys are slow to make, and tables run per key type.
package testkeys

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"sync"
	"testing"
)

// The key types, by the names tests show. RSA is 2048 bits.
const (
	RSA       = "RSA"
	RSA3072   = "RSA 3072"
	RSA4096   = "RSA 4096"
	ECDSAP224 = "ECDSA P-224"
	ECDSAP256 = "ECDSA P-256"
	ECDSAP384 = "ECDSA P-384"
	ECDSAP521 = "ECDSA P-521"
	Ed25519   = "Ed25519"
)

// Types are the key types every signer takes, in the order tables run them.
func Types() []string { return []string{RSA, ECDSAP256, Ed25519} }

var made = struct {
	sync.Mutex
	keys map[string]crypto.Signer
}{keys: map[string]crypto.Signer{}}

// Key is the test binary's key of the named type.
func Key(t testing.TB, name string) crypto.Signer {
	t.Helper()
	made.Lock()
	defer made.Unlock()
	if k, ok := made.keys[name]; ok {
		return k
	}
	var key crypto.Signer
	var err error
	switch name {
	case RSA, RSA3072, RSA4096:
		key, err = rsa.GenerateKey(rand.Reader, map[string]int{RSA: 2048, RSA3072: 3072, RSA4096: 4096}[name])
	case ECDSAP224, ECDSAP256, ECDSAP384, ECDSAP521:
		curve := map[string]elliptic.Curve{ECDSAP224: elliptic.P224(), ECDSAP256: elliptic.P256(), ECDSAP384: elliptic.P384(), ECDSAP521: elliptic.P521()}[name]
		key, err = ecdsa.GenerateKey(curve, rand.Reader)
	case Ed25519:
		_, key, err = ed25519.GenerateKey(rand.Reader)
	default:
		t.Fatalf("unknown key type %q", name)
	}
	if err != nil {
		t.Fatalf("making a %s key: %v", name, err)
	}
	made.keys[name] = key
	return key
}
