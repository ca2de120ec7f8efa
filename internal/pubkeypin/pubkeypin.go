// Package pubkeypin is kubeadm's CA pin format, "sha256:" and the hex SHA-256 of a certificate's
// DER SubjectPublicKeyInfo, with which a joining node checks the CA it was handed by a server it
// could not yet verify (idplane agent --discovery-token-ca-cert-hash).
package pubkeypin

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"strings"
)

// Prefix is the only hash format kubeadm, and so idplane, knows.
const Prefix = "sha256:"

// Hash is the pin of a certificate's public key.
func Hash(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return Prefix + hex.EncodeToString(sum[:])
}

// Set is a set of pins, any of which may match.
type Set struct {
	sums map[string]bool
}

// Parse reads pins in kubeadm's format; the hex may be of either case. An empty list is an error:
// a set that pins nothing would accept every CA.
func Parse(pins []string) (*Set, error) {
	if len(pins) == 0 {
		return nil, fmt.Errorf("no CA certificate hash given")
	}
	s := &Set{sums: map[string]bool{}}
	for _, p := range pins {
		format, value, ok := strings.Cut(p, ":")
		if !ok {
			return nil, fmt.Errorf("CA certificate hash %q has no format: it must be %s followed by 64 hex digits", p, Prefix)
		}
		if !strings.EqualFold(format, "sha256") {
			return nil, fmt.Errorf("CA certificate hash %q: unknown hash format %q, only %q is known", p, format, strings.TrimSuffix(Prefix, ":"))
		}
		raw, err := hex.DecodeString(value)
		if err != nil || len(raw) != sha256.Size {
			return nil, fmt.Errorf("CA certificate hash %q: the value must be %d hex digits", p, 2*sha256.Size)
		}
		s.sums[hex.EncodeToString(raw)] = true
	}
	return s, nil
}

// Matches tells whether any of certs has a pinned public key.
func (s *Set) Matches(certs []*x509.Certificate) bool {
	for _, c := range certs {
		if s.sums[strings.TrimPrefix(Hash(c), Prefix)] {
			return true
		}
	}
	return false
}
