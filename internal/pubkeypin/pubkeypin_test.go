package pubkeypin

import (
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
)

// testCA's pin was computed apart from this package, as kubeadm's documentation does:
// openssl x509 -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -hex.
const (
	testCA = `-----BEGIN CERTIFICATE-----
MIIBfjCCASOgAwIBAgIUfUgab4ZmA7W3TVrZincjLDBkmm0wCgYIKoZIzj0EAwIw
EzERMA8GA1UEAwwIcGluLXRlc3QwIBcNMjYxMTI3MDAyMTQyWhgPMjEyNjExMDMw
MDIxNDJaMBMxETAPBgNVBAMMCHBpbi10ZXN0MFkwEwYHKoZIzj0CAQYIKoZIzj0D
AQcDQgAEQyS4UOhLtwqfEL7porHHAMcFvM8CFvgOcBBJqLbxtgG6xLZvfRzwYL4a
evAMRHvPLzpzEybzEWdLcv6cqvthtKNTMFEwHQYDVR0OBBYEFDsxDehDNFbXfvRt
Ybp4ke+SGr5qMB8GA1UdIwQYMBaAFDsxDehDNFbXfvRtYbp4ke+SGr5qMA8GA1Ud
EwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSQAwRgIhAM3kwVT+IkV/RjRwxTnBfB+d
qIpXw37rwQSol8+kahsDAiEAsxpZXfcNOnMHM+UNGJc0fy0KtDLdFEBUYfXXlY9W
uYQ=
-----END CERTIFICATE-----
`
	testPin = "sha256:3000d9dc31b8bc1cfe30e88a29c63569b9037e1bcedc76a077acf487334c6a66"
)

func parse(t *testing.T) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode([]byte(testCA))
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestHash(t *testing.T) {
	if got := Hash(parse(t)); got != testPin {
		t.Errorf("Hash = %s, want %s", got, testPin)
	}
}

func TestParseAndMatch(t *testing.T) {
	other := "sha256:" + strings.Repeat("ab", 32)
	cases := []struct {
		name    string
		pins    []string
		match   bool
		wantErr string
	}{
		{"the pin", []string{testPin}, true, ""},
		{"upper-case hex and format", []string{"SHA256:" + strings.ToUpper(strings.TrimPrefix(testPin, Prefix))}, true, ""},
		{"one of several", []string{other, testPin}, true, ""},
		{"another key", []string{other}, false, ""},
		{"none", nil, false, "no CA certificate hash"},
		{"no format", []string{strings.TrimPrefix(testPin, Prefix)}, false, "has no format"},
		{"other format", []string{"sha1:" + strings.Repeat("ab", 20)}, false, "unknown hash format"},
		{"short", []string{"sha256:abcd"}, false, "64 hex digits"},
		{"not hex", []string{"sha256:" + strings.Repeat("zz", 32)}, false, "64 hex digits"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse(tc.pins)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Matches([]*x509.Certificate{parse(t)}); got != tc.match {
				t.Errorf("Matches = %v, want %v", got, tc.match)
			}
		})
	}
}
