package certificates

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/idplane/idplane/internal/pki"
)

// caFiles are a CA's certificate and key as files, and their content.
type caFiles struct {
	certFile, keyFile string
	certPEM, keyPEM   []byte
}

func newCAFiles(t *testing.T, name string) caFiles {
	t.Helper()
	certFile, keyFile := writeCA(t, t.TempDir(), name, time.Now())
	return caFiles{certFile: certFile, keyFile: keyFile, certPEM: mustRead(t, certFile), keyPEM: mustRead(t, keyFile)}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// replace writes data over path the way an operator's tool does: in place, or through a rename.
func replace(t *testing.T, path string, data []byte, rename bool) {
	t.Helper()
	write := os.WriteFile
	if rename {
		write = pki.WriteFile
	}
	if err := write(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// signParams is the signing of a kubelet serving request.
func signParams(t *testing.T) SignParams {
	t.Helper()
	req := &Request{CSR: makeRequest(t, reqOpts{cn: "system:node:n1", dns: []string{"n1.example.com"}}), Usages: usages(certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth)}
	return SignParams{Request: req, MaxDuration: time.Hour, Now: time.Now()}
}

// issuer signs a kubelet serving request with ca and returns the certificate's issuer.
func issuer(t *testing.T, ca *CA) string {
	t.Helper()
	certPEM, err := ca.Sign(signParams(t))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert.Issuer.CommonName
}

// TestCAReload: while Run runs, replacing the CA files, in place or by rename, takes effect
// without a restart: the new CA signs and is the one published.
func TestCAReload(t *testing.T) {
	for _, rename := range []bool{false, true} {
		t.Run(map[bool]string{false: "in place", true: "by rename"}[rename], func(t *testing.T) {
			old, next := newCAFiles(t, "ca1"), newCAFiles(t, "ca2")
			ca, err := LoadCA(old.certFile, old.keyFile)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			stopped := make(chan struct{})
			go func() {
				defer close(stopped)
				ca.Run(ctx)
			}()
			t.Cleanup(func() {
				cancel()
				<-stopped
			})
			if got := issuer(t, ca); got != "ca1" {
				t.Fatalf("issued by %q, want ca1", got)
			}

			replace(t, old.keyFile, next.keyPEM, rename)
			replace(t, old.certFile, next.certPEM, rename)
			err = wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				return string(ca.CertPEM()) == string(next.certPEM), nil
			})
			if err != nil {
				t.Fatalf("the new CA was not loaded: %v", err)
			}
			if got := issuer(t, ca); got != "ca2" {
				t.Errorf("after the CA files changed, issued by %q, want ca2", got)
			}
		})
	}
}

// TestCARefusesReplacedPair: files that no longer hold a usable pair are refused, by the library
// (whose watch logs the refusal and tries again) or by idplane's own parser after it, and
// nothing is signed until they hold one: not with the pair loaded before, which the operator
// replaced. The published CA stays the one last loaded. A good pair after them signs. RunOnce
// is one pass of the watch.
func TestCARefusesReplacedPair(t *testing.T) {
	other := newCAFiles(t, "other")
	cases := []struct {
		name   string
		change func(t *testing.T, f caFiles)
		// libraryTakes: the library takes the files, and only idplane's parser refuses them.
		libraryTakes bool
	}{
		{"only the certificate replaced, mid-rotation", func(t *testing.T, f caFiles) { replace(t, f.certFile, other.certPEM, true) }, false},
		{"only the key replaced, mid-rotation", func(t *testing.T, f caFiles) { replace(t, f.keyFile, other.keyPEM, true) }, false},
		{"certificate not PEM", func(t *testing.T, f caFiles) { replace(t, f.certFile, []byte("not a certificate"), false) }, false},
		{"key emptied", func(t *testing.T, f caFiles) { replace(t, f.keyFile, nil, false) }, false},
		{"key file removed", func(t *testing.T, f caFiles) {
			if err := os.Remove(f.keyFile); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"a corrupt certificate after the CA's", func(t *testing.T, f caFiles) {
			corrupt := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("corrupt")})
			replace(t, f.certFile, append(append([]byte(nil), f.certPEM...), corrupt...), true)
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newCAFiles(t, "ca1")
			ca, err := LoadCA(f.certFile, f.keyFile)
			if err != nil {
				t.Fatal(err)
			}
			tc.change(t, f)
			if err := ca.files.RunOnce(context.Background()); (err == nil) != tc.libraryTakes {
				t.Fatalf("the library's load: %v, want it to take the files %t", err, tc.libraryTakes)
			}
			if string(ca.CertPEM()) != string(f.certPEM) {
				t.Error("the published CA changed")
			}
			for range 2 {
				if cert, err := ca.Sign(signParams(t)); err == nil {
					t.Fatalf("signed with files that hold no usable pair: %s", cert)
				}
			}

			replace(t, f.certFile, other.certPEM, true)
			replace(t, f.keyFile, other.keyPEM, true)
			if got := issuer(t, ca); got != "other" {
				t.Errorf("issued by %q after a good pair, want other", got)
			}
		})
	}
}

// TestCASignsWithoutRereading: while the files do not change, signing reads neither them nor
// the library's content again.
func TestCASignsWithoutRereading(t *testing.T) {
	f := newCAFiles(t, "ca1")
	ca, err := LoadCA(f.certFile, f.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	loaded := ca.ca.Load()
	for range 3 {
		if got := issuer(t, ca); got != "ca1" {
			t.Fatalf("issued by %q, want ca1", got)
		}
	}
	if ca.ca.Load() != loaded {
		t.Error("signing replaced the loaded CA though the files did not change")
	}
}

// TestLoadCAErrors: a pair that cannot be used fails the start, saying which file and why.
func TestLoadCAErrors(t *testing.T) {
	good, other := newCAFiles(t, "ca1"), newCAFiles(t, "other")
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cases := []struct {
		name              string
		certFile, keyFile string
		want              string
		wantErr           error
	}{
		{"no certificate file", filepath.Join(dir, "missing.crt"), good.keyFile, "reading signing CA: stat", os.ErrNotExist},
		{"no key file", good.certFile, filepath.Join(dir, "missing.key"), "reading signing CA: stat", os.ErrNotExist},
		{"key of another CA", good.certFile, other.keyFile, "CA certificate and key do not match", nil},
		{"certificate not PEM", write("garbled.crt", []byte("garbled")), good.keyFile, "parsing CA certificate", nil},
		{"key not PEM", good.certFile, write("garbled.key", []byte("garbled")), "parsing CA key", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadCA(tc.certFile, tc.keyFile)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadCA = %v, want an error containing %q", err, tc.want)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("LoadCA = %v, want it to wrap %v", err, tc.wantErr)
			}
		})
	}
}
