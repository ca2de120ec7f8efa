package certificates

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"testing"

	"github.com/idplane/idplane/internal/testing/testkeys"
)

// TestParseRequestSteps: every way a spec.request fails names its step, which each caller words
// for its users.
func TestParseRequestSteps(t *testing.T) {
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "c"}}, testkeys.Key(t, testkeys.ECDSAP256))
	if err != nil {
		t.Fatal(err)
	}
	encode := func(typ string, b []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}) }
	tampered := append([]byte(nil), der...)
	tampered[len(tampered)-1] ^= 0xff // the last byte is the signature's

	cases := []struct {
		name string
		data []byte
		step RequestStep
		ok   bool
	}{
		{"valid", encode("CERTIFICATE REQUEST", der), 0, true},
		{"empty", nil, RequestNotPEM, false},
		{"DER without PEM", der, RequestNotPEM, false},
		{"another block type", encode("CERTIFICATE", der), RequestNotPEM, false},
		{"not a request", encode("CERTIFICATE REQUEST", []byte("garbage")), RequestUnparsable, false},
		{"signature does not verify", encode("CERTIFICATE REQUEST", tampered), RequestBadSignature, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			csr, err := ParseRequest(tc.data)
			if tc.ok {
				if err != nil || csr.Subject.CommonName != "c" {
					t.Fatalf("ParseRequest = %v, %v; want the request", csr, err)
				}
				return
			}
			var bad *RequestError
			if !errors.As(err, &bad) || bad.Step != tc.step {
				t.Fatalf("ParseRequest error %v, want step %d", err, tc.step)
			}
			if (bad.Err == nil) != (tc.step == RequestNotPEM) {
				t.Errorf("step %d carries library error %v", bad.Step, bad.Err)
			}
		})
	}
}
