package podcert

import (
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/go-jose/go-jose/v4"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
)

// BundlePath is where the API server serves the SPIFFE trust bundle of idplane.io/spiffe.
const BundlePath = "/spiffe/v1/bundle"

// BundleRefreshHint is the spiffe_refresh_hint served: how often a federating party should fetch
// the bundle again. The signer's CA files are read again when they change; five minutes lets a
// rotated CA reach federated parties well before certificates issued by it need it.
const BundleRefreshHint = 5 * time.Minute

// CertSource is what the bundle reads of the CA: its certificate as last loaded.
type CertSource interface {
	CertPEM() []byte
}

// bundleDoc is a SPIFFE bundle (SPIFFE Trust Domain and Bundle specification, 4): a JWK Set whose
// keys carry use "x509-svid" and the CA certificate in x5c, with a sequence number and a refresh
// hint in seconds.
type bundleDoc struct {
	Keys        []jose.JSONWebKey `json:"keys"`
	Sequence    uint64            `json:"spiffe_sequence"`
	RefreshHint int64             `json:"spiffe_refresh_hint"`
}

// Bundle encodes the CA certificates in caPEM as a SPIFFE bundle. Its sequence is the latest
// notBefore of the CAs in Unix seconds: every replica serves the same number for the same
// certificates without sharing a counter, and a new CA, made after the old, raises it.
func Bundle(caPEM []byte) ([]byte, error) {
	certs, err := certutil.ParseCertsPEM(caPEM)
	if err != nil {
		return nil, fmt.Errorf("reading the SPIFFE CA: %w", err)
	}
	doc := bundleDoc{Keys: []jose.JSONWebKey{}, RefreshHint: int64(BundleRefreshHint / time.Second)}
	for _, c := range certs {
		doc.Keys = append(doc.Keys, jose.JSONWebKey{Key: c.PublicKey, Certificates: []*x509.Certificate{c}, Use: "x509-svid"})
		if s := c.NotBefore.Unix(); s > 0 && uint64(s) > doc.Sequence {
			doc.Sequence = uint64(s)
		}
	}
	return json.Marshal(doc)
}

// BundleHandler serves the bundle of the CA as it is at each request.
func BundleHandler(ca CertSource) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		body, err := Bundle(ca.CertPEM())
		if err != nil {
			klog.ErrorS(err, "Serving the SPIFFE bundle")
			http.Error(w, "the SPIFFE bundle is not available", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", fmt.Sprintf("public, max-age=%d", int(BundleRefreshHint/time.Second)))
		w.Write(body)
	})
}
