package podcert

import (
	"crypto/x509"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/spiffe/go-spiffe/v2/bundle/spiffebundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
)

// TestGoSPIFFEJudges: the ecosystem's own library reads what the SPIFFE signer issues as a valid
// X509-SVID with the pod's service account's SPIFFE ID, and the bundle endpoint's output as a
// bundle of the trust domain that verifies it.
func TestGoSPIFFEJudges(t *testing.T) {
	ca := testCA(t, "spiffe")
	td := spiffeid.RequireTrustDomainFromString("cluster.local")

	srv := httptest.NewServer(BundleHandler(ca))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("bundle endpoint: %d %q %v", resp.StatusCode, resp.Header.Get("Content-Type"), err)
	}
	bundle, err := spiffebundle.Parse(td, body)
	if err != nil {
		t.Fatalf("go-spiffe refuses the bundle: %v\n%s", err, body)
	}
	caCert := parseCert(t, ca.CertPEM())
	if auth := bundle.X509Authorities(); len(auth) != 1 || !auth[0].Equal(caCert) {
		t.Fatalf("bundle authorities %d, want the signer's CA", len(auth))
	}
	if seq, ok := bundle.SequenceNumber(); !ok || seq != uint64(caCert.NotBefore.Unix()) {
		t.Errorf("sequence %d (set %v), want the CA's notBefore %d", seq, ok, caCert.NotBefore.Unix())
	}
	if hint, ok := bundle.RefreshHint(); !ok || hint != BundleRefreshHint {
		t.Errorf("refresh hint %v (set %v), want %v", hint, ok, BundleRefreshHint)
	}

	for _, kt := range []KeyType{ECDSAP256, ECDSAP384, RSA3072} {
		t.Run(string(kt), func(t *testing.T) {
			key := keyOf(t, kt)
			pcr := newPCR(t, SPIFFESignerName, kt)
			out := Policies()[SPIFFESignerName].Decide(params, ca, pcr, time.Now())
			if out.Condition != "Issued" {
				t.Fatalf("not issued: %+v", out)
			}
			keyDER, err := x509.MarshalPKCS8PrivateKey(key)
			if err != nil {
				t.Fatal(err)
			}
			svid, err := x509svid.Parse([]byte(out.CertificateChain), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
			if err != nil {
				t.Fatalf("go-spiffe refuses the SVID: %v", err)
			}
			if got := svid.ID.String(); got != "spiffe://cluster.local/ns/team-a/sa/web" {
				t.Errorf("SPIFFE ID %q", got)
			}
			id, _, err := x509svid.Verify(svid.Certificates, bundle)
			if err != nil || id != svid.ID {
				t.Errorf("go-spiffe does not verify the SVID with the served bundle: %v %v", id, err)
			}
		})
	}

	// A client-pod certificate is no SVID: go-spiffe must not read it as one.
	out := Policies()[ClientPodSignerName].Decide(params, ca, newPCR(t, ClientPodSignerName, ECDSAP256), time.Now())
	leaf := leafOf(t, out)
	if _, _, err := x509svid.Verify([]*x509.Certificate{leaf}, bundle); err == nil {
		t.Error("go-spiffe takes a client-pod certificate as an SVID")
	}
}

func parseCert(t *testing.T, pemBytes []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(pemBytes)
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
