package podcerts

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzAcceptChain feeds arbitrary issued chains and times to the agent's check. Whatever the
// signer (or whoever can write /status) sends, the check does not crash, and a chain it accepts
// is clean PEM of certificates only, within the size bound, whose leaf is for the agent's key.
func FuzzAcceptChain(f *testing.F) {
	keyPEM, _, err := newKey("ECDSAP256")
	if err != nil {
		f.Fatal(err)
	}
	pub, err := publicKey(keyPEM)
	if err != nil {
		f.Fatal(err)
	}
	good := certFor(f, pub, t0, 2*time.Hour)
	f.Add(good, int64(0), int64(7200), int64(3600), int64(60))
	f.Add(good+string(keyPEM), int64(0), int64(7200), int64(3600), int64(60))
	f.Add("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", int64(0), int64(1), int64(0), int64(0))
	f.Fuzz(func(t *testing.T, chain string, nb, na, refresh, now int64) {
		st := issuedStatus(chain, t0.Add(time.Duration(nb)*time.Second), 0)
		st.NotAfter = &metav1.Time{Time: t0.Add(time.Duration(na) * time.Second)}
		st.BeginRefreshAt = &metav1.Time{Time: t0.Add(time.Duration(refresh) * time.Second)}
		got, err := acceptChain(&st, keyPEM, t0.Add(time.Duration(now)*time.Second))
		if err != nil {
			return
		}
		if len(got.chain) > 2*maxChainBytes {
			t.Fatalf("accepted a %d-byte chain", len(got.chain))
		}
		rest := got.chain
		first := true
		for len(rest) > 0 {
			var b *pem.Block
			b, rest = pem.Decode(rest)
			if b == nil || b.Type != "CERTIFICATE" || len(b.Headers) != 0 {
				t.Fatalf("accepted chain is not clean certificate PEM: %q", got.chain)
			}
			if first {
				leaf, err := x509.ParseCertificate(b.Bytes)
				if err != nil || !leaf.PublicKey.(interface{ Equal(crypto.PublicKey) bool }).Equal(pub) {
					t.Fatalf("accepted a leaf not for the key: %v", err)
				}
				first = false
			}
		}
	})
}
