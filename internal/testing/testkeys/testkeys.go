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

// The key types, by the names tests show.
const (
	RSA       = "RSA"
	ECDSAP256 = "ECDSA P-256"
	Ed25519   = "Ed25519"
)

// Types are every key type, in the order tables run them.
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
	case RSA:
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	case ECDSAP256:
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
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
