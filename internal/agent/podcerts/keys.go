package podcerts

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// keyTypes are the key types a podCertificate source may ask for, as the API names them, and how
// each is made.
var keyTypes = map[string]func() (crypto.Signer, error){
	"RSA3072":   func() (crypto.Signer, error) { return rsa.GenerateKey(rand.Reader, 3072) },
	"RSA4096":   func() (crypto.Signer, error) { return rsa.GenerateKey(rand.Reader, 4096) },
	"ECDSAP256": func() (crypto.Signer, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) },
	"ECDSAP384": func() (crypto.Signer, error) { return ecdsa.GenerateKey(elliptic.P384(), rand.Reader) },
	"ECDSAP521": func() (crypto.Signer, error) { return ecdsa.GenerateKey(elliptic.P521(), rand.Reader) },
	"ED25519": func() (crypto.Signer, error) {
		_, k, err := ed25519.GenerateKey(rand.Reader)
		return k, err
	},
}

// supportedKeyTypes lists keyTypes for messages.
func supportedKeyTypes() string {
	return strings.Join(slices.Sorted(maps.Keys(keyTypes)), ", ")
}

// newKey makes a key of the named type and the stub PKCS#10 request that carries its public key
// to the signer: an empty request whose signature proves the node holds the key. The key comes
// back PKCS#8 PEM, the form written to the pod.
func newKey(keyType string) (keyPEM, stub []byte, err error) {
	gen, ok := keyTypes[keyType]
	if !ok {
		return nil, nil, fmt.Errorf("key type %q is not supported; supported types: %s", keyType, supportedKeyTypes())
	}
	key, err := gen()
	if err != nil {
		return nil, nil, fmt.Errorf("generating a %s key: %w", keyType, err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the %s key: %w", keyType, err)
	}
	stub, err = x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		return nil, nil, fmt.Errorf("making the stub PKCS#10 request: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), stub, nil
}

// publicKey reads the public half of a PKCS#8 PEM key the manager made.
func publicKey(keyPEM []byte) (crypto.PublicKey, error) {
	block, _ := pem.Decode(keyPEM)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("not a PKCS#8 PEM private key")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing the private key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("a private key of type %T cannot sign", key)
	}
	return signer.Public(), nil
}
