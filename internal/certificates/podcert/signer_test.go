package podcert

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/idplane/idplane/internal/certificates"
	"github.com/idplane/idplane/internal/pki"
)

// keys are made once per type: RSA 4096 takes a while.
var (
	keysMu sync.Mutex
	keys   = map[KeyType]crypto.Signer{}
)

func keyOf(t testing.TB, kt KeyType) crypto.Signer {
	t.Helper()
	keysMu.Lock()
	defer keysMu.Unlock()
	if k, ok := keys[kt]; ok {
		return k
	}
	var k crypto.Signer
	var err error
	switch kt {
	case RSA3072:
		k, err = rsa.GenerateKey(rand.Reader, 3072)
	case RSA4096:
		k, err = rsa.GenerateKey(rand.Reader, 4096)
	case ECDSAP256:
		k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case ECDSAP384:
		k, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case ECDSAP521:
		k, err = ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case ED25519:
		_, k, err = ed25519.GenerateKey(rand.Reader)
	case "RSA2048":
		k, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ECDSAP224":
		k, err = ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	}
	if err != nil || k == nil {
		t.Fatalf("generating a %s key: %v", kt, err)
	}
	keys[kt] = k
	return k
}

func stubRequest(t testing.TB, key crypto.Signer) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// testCA is a signer CA in a temporary data directory, created and loaded the way the server does.
func testCA(t testing.TB, signer string) *certificates.CA {
	t.Helper()
	files := pki.Files{Dir: t.TempDir()}
	if _, err := pki.EnsureSignerCA(files, signer, time.Now()); err != nil {
		t.Fatal(err)
	}
	ca, err := certificates.LoadCA(files.SignerCACert(signer), files.SignerCAKey(signer))
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func newPCR(t testing.TB, signer string, kt KeyType) *certificatesv1.PodCertificateRequest {
	t.Helper()
	return &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web-1-abcde"},
		Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName: signer,
			PodName:    "web-1", PodUID: "5f1c2a8e-6b1d-4c57-9d0a-8a1b2c3d4e5f",
			ServiceAccountName: "web", ServiceAccountUID: "0b8a0e52-0d8f-4d8e-a8a9-1a2b3c4d5e6f",
			NodeName: "node-1", NodeUID: "9e7d6c5b-4a39-4281-b1c0-d9e8f7a6b5c4",
			MaxExpirationSeconds: ptr.To[int32](86400),
			StubPKCS10Request:    stubRequest(t, keyOf(t, kt)),
		},
	}
}

var params = Params{TrustDomain: "cluster.local", Duration: 24 * time.Hour}

func leafOf(t *testing.T, out Outcome) *x509.Certificate {
	t.Helper()
	block, rest := pem.Decode([]byte(out.CertificateChain))
	if block == nil || len(strings.TrimSpace(string(rest))) != 0 {
		t.Fatalf("chain is not one PEM certificate: %q", out.CertificateChain)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// TestDecideRules: the signers' rules, one request per row.
func TestDecideRules(t *testing.T) {
	policies := Policies()
	cas := map[string]*certificates.CA{SPIFFESignerName: testCA(t, "spiffe"), ClientPodSignerName: testCA(t, "kube-apiserver-client-pod")}
	now := time.Now()
	for _, tc := range []struct {
		name       string
		signer     string
		key        KeyType
		modify     func(*certificatesv1.PodCertificateRequest)
		params     *Params
		condition  string
		reason     string
		inMessage  string
		lifetime   time.Duration
		keyUsage   x509.KeyUsage
		extUsages  []x509.ExtKeyUsage
		uris       []string
		commonName string
	}{
		{name: "spiffe P-256", signer: SPIFFESignerName, key: ECDSAP256, condition: "Issued", lifetime: 24 * time.Hour,
			keyUsage: x509.KeyUsageDigitalSignature, extUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			uris: []string{"spiffe://cluster.local/ns/team-a/sa/web"}},
		{name: "spiffe P-384", signer: SPIFFESignerName, key: ECDSAP384, condition: "Issued", lifetime: 24 * time.Hour,
			keyUsage: x509.KeyUsageDigitalSignature, extUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			uris: []string{"spiffe://cluster.local/ns/team-a/sa/web"}},
		{name: "spiffe RSA 3072 adds key encipherment", signer: SPIFFESignerName, key: RSA3072, condition: "Issued", lifetime: 24 * time.Hour,
			keyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, extUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			uris: []string{"spiffe://cluster.local/ns/team-a/sa/web"}},
		{name: "spiffe RSA 4096", signer: SPIFFESignerName, key: RSA4096, condition: "Issued", lifetime: 24 * time.Hour,
			keyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, extUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			uris: []string{"spiffe://cluster.local/ns/team-a/sa/web"}},
		{name: "spiffe other trust domain", signer: SPIFFESignerName, key: ECDSAP256, params: &Params{TrustDomain: "prod.example.org", Duration: 24 * time.Hour},
			condition: "Issued", lifetime: 24 * time.Hour, keyUsage: x509.KeyUsageDigitalSignature,
			extUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, uris: []string{"spiffe://prod.example.org/ns/team-a/sa/web"}},
		{name: "spiffe Ed25519 refused", signer: SPIFFESignerName, key: ED25519, condition: "Denied", reason: "UnsupportedKeyType", inMessage: "use ECDSAP256"},
		{name: "spiffe P-521 refused", signer: SPIFFESignerName, key: ECDSAP521, condition: "Denied", reason: "UnsupportedKeyType", inMessage: "ECDSAP521 keys: use ECDSAP256"},
		{name: "spiffe RSA 2048 refused", signer: SPIFFESignerName, key: "RSA2048", condition: "Denied", reason: "UnsupportedKeyType", inMessage: "*rsa.PublicKey keys: use ECDSAP256"},
		{name: "spiffe lifetime from maxExpirationSeconds", signer: SPIFFESignerName, key: ECDSAP256, condition: "Issued", lifetime: 2 * time.Hour,
			modify:   func(p *certificatesv1.PodCertificateRequest) { p.Spec.MaxExpirationSeconds = ptr.To[int32](7200) },
			keyUsage: x509.KeyUsageDigitalSignature, extUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			uris: []string{"spiffe://cluster.local/ns/team-a/sa/web"}},
		{name: "spiffe lifetime cut to the duration flag", signer: SPIFFESignerName, key: ECDSAP256, params: &Params{TrustDomain: "cluster.local", Duration: 3 * time.Hour},
			modify:    func(p *certificatesv1.PodCertificateRequest) { p.Spec.MaxExpirationSeconds = ptr.To[int32](7862400) },
			condition: "Issued", lifetime: 3 * time.Hour, keyUsage: x509.KeyUsageDigitalSignature,
			extUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, uris: []string{"spiffe://cluster.local/ns/team-a/sa/web"}},
		{name: "spiffe 91 days when both allow", signer: SPIFFESignerName, key: ECDSAP256, params: &Params{TrustDomain: "cluster.local", Duration: 91 * 24 * time.Hour},
			modify:    func(p *certificatesv1.PodCertificateRequest) { p.Spec.MaxExpirationSeconds = ptr.To[int32](7862400) },
			condition: "Issued", lifetime: 91 * 24 * time.Hour, keyUsage: x509.KeyUsageDigitalSignature,
			extUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, uris: []string{"spiffe://cluster.local/ns/team-a/sa/web"}},
		{name: "unknown annotation", signer: SPIFFESignerName, key: ECDSAP256, condition: "Denied", reason: "InvalidUnverifiedUserAnnotations", inMessage: `["example.com/dns-name"]`,
			modify: func(p *certificatesv1.PodCertificateRequest) {
				p.Spec.UnverifiedUserAnnotations = map[string]string{"example.com/dns-name": "web.example.com"}
			}},
		{name: "annotations checked before the key", signer: SPIFFESignerName, key: ED25519, condition: "Denied", reason: "InvalidUnverifiedUserAnnotations",
			modify: func(p *certificatesv1.PodCertificateRequest) {
				p.Spec.UnverifiedUserAnnotations = map[string]string{"a.io/b": ""}
			}},
		{name: "stub request with a bad signature", signer: SPIFFESignerName, key: ECDSAP256, condition: "Denied", reason: ReasonInvalidRequest,
			modify: func(p *certificatesv1.PodCertificateRequest) {
				p.Spec.StubPKCS10Request[len(p.Spec.StubPKCS10Request)-3] ^= 0xff
			}},
		{name: "stub request that is not DER", signer: ClientPodSignerName, key: ECDSAP256, condition: "Denied", reason: ReasonInvalidRequest,
			modify: func(p *certificatesv1.PodCertificateRequest) { p.Spec.StubPKCS10Request = []byte("hello") }},
		{name: "client-pod Ed25519", signer: ClientPodSignerName, key: ED25519, condition: "Issued", lifetime: 24 * time.Hour,
			keyUsage: x509.KeyUsageDigitalSignature, extUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			uris: []string{
				"urn:idplane:serviceaccount:team-a:web:0b8a0e52-0d8f-4d8e-a8a9-1a2b3c4d5e6f",
				"urn:idplane:pod:team-a:web-1:5f1c2a8e-6b1d-4c57-9d0a-8a1b2c3d4e5f",
				"urn:idplane:node:node-1:9e7d6c5b-4a39-4281-b1c0-d9e8f7a6b5c4",
			}, commonName: "system:serviceaccount:team-a:web"},
		{name: "client-pod P-521", signer: ClientPodSignerName, key: ECDSAP521, condition: "Issued", lifetime: 24 * time.Hour,
			keyUsage: x509.KeyUsageDigitalSignature, extUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, commonName: "system:serviceaccount:team-a:web"},
		{name: "client-pod RSA adds key encipherment", signer: ClientPodSignerName, key: RSA3072, condition: "Issued", lifetime: 24 * time.Hour,
			keyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, extUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, commonName: "system:serviceaccount:team-a:web"},
		{name: "client-pod never past 24h", signer: ClientPodSignerName, key: ECDSAP256, params: &Params{TrustDomain: "cluster.local", Duration: 48 * time.Hour},
			modify:    func(p *certificatesv1.PodCertificateRequest) { p.Spec.MaxExpirationSeconds = ptr.To[int32](7862400) },
			condition: "Issued", lifetime: 24 * time.Hour, keyUsage: x509.KeyUsageDigitalSignature, extUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			commonName: "system:serviceaccount:team-a:web"},
		{name: "client-pod P-224 refused", signer: ClientPodSignerName, key: "ECDSAP224", condition: "Denied", reason: "UnsupportedKeyType", inMessage: "use ECDSAP256"},
		{name: "client-pod UID with a colon", signer: ClientPodSignerName, key: ECDSAP256, condition: "Denied", reason: ReasonUnencodableIdentity, inMessage: "pod UID",
			modify: func(p *certificatesv1.PodCertificateRequest) { p.Spec.PodUID = "a:b" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pcr := newPCR(t, tc.signer, tc.key)
			if tc.modify != nil {
				tc.modify(pcr)
			}
			p := params
			if tc.params != nil {
				p = *tc.params
			}
			out := policies[tc.signer].Decide(p, cas[tc.signer], pcr, now)
			if out.Condition != tc.condition || (tc.reason != "" && out.Reason != tc.reason) || !strings.Contains(out.Message, tc.inMessage) {
				t.Fatalf("got %s/%s %q, want %s/%s containing %q", out.Condition, out.Reason, out.Message, tc.condition, tc.reason, tc.inMessage)
			}
			if out.Condition != "Issued" {
				if out.CertificateChain != "" {
					t.Fatal("a refusal carries a certificate")
				}
				return
			}
			leaf := leafOf(t, out)
			if leaf.IsCA || !leaf.BasicConstraintsValid {
				t.Error("leaf is a CA or has no basic constraints")
			}
			if got := leaf.NotAfter.Sub(leaf.NotBefore); got != tc.lifetime {
				t.Errorf("lifetime %v, want %v", got, tc.lifetime)
			}
			if !leaf.NotBefore.Equal(out.NotBefore) || !leaf.NotAfter.Equal(out.NotAfter) {
				t.Errorf("status times %v..%v are not the leaf's %v..%v", out.NotBefore, out.NotAfter, leaf.NotBefore, leaf.NotAfter)
			}
			if d := now.Sub(leaf.NotBefore); d < 0 || d > 2*time.Minute {
				t.Errorf("notBefore %v is %v before now", leaf.NotBefore, d)
			}
			if want := leaf.NotBefore.Add(tc.lifetime / 2); !out.BeginRefreshAt.Equal(want) {
				t.Errorf("beginRefreshAt %v, want half-life %v", out.BeginRefreshAt, want)
			}
			if leaf.KeyUsage != tc.keyUsage || !slices.Equal(leaf.ExtKeyUsage, tc.extUsages) {
				t.Errorf("usages %v %v, want %v %v", leaf.KeyUsage, leaf.ExtKeyUsage, tc.keyUsage, tc.extUsages)
			}
			if tc.uris != nil {
				var got []string
				for _, u := range leaf.URIs {
					got = append(got, u.String())
				}
				if !slices.Equal(got, tc.uris) {
					t.Errorf("URIs %q, want %q", got, tc.uris)
				}
			}
			if len(leaf.DNSNames)+len(leaf.IPAddresses)+len(leaf.EmailAddresses) > 0 {
				t.Error("leaf has names beside its URIs")
			}
			if leaf.Subject.CommonName != tc.commonName {
				t.Errorf("common name %q, want %q", leaf.Subject.CommonName, tc.commonName)
			}
			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM(cas[tc.signer].CertPEM())
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: tc.extUsages, CurrentTime: now}); err != nil {
				t.Errorf("leaf does not verify against its signer's CA: %v", err)
			}
			if tc.signer == ClientPodSignerName {
				id, err := ParseClientPodCertificate(leaf)
				want := PodIdentity{Namespace: "team-a", ServiceAccountName: "web", ServiceAccountUID: pcr.Spec.ServiceAccountUID,
					PodName: "web-1", PodUID: pcr.Spec.PodUID, NodeName: "node-1", NodeUID: pcr.Spec.NodeUID}
				if err != nil || id != want {
					t.Errorf("ParseClientPodCertificate = %+v, %v; want %+v", id, err, want)
				}
			}
		})
	}
}

// failingCA cannot sign, as a CA whose files do not load.
type failingCA struct{}

func (failingCA) SignLeaf(*x509.Certificate, crypto.PublicKey) (*x509.Certificate, error) {
	return nil, errors.New("loading signing CA: it does not load")
}

// shortCA signs, but its own certificate expires in ten minutes.
type shortCA struct{ ca *certificates.CA }

func (s shortCA) SignLeaf(tmpl *x509.Certificate, pub crypto.PublicKey) (*x509.Certificate, error) {
	t := *tmpl
	t.NotAfter = t.NotBefore.Add(10 * time.Minute)
	return s.ca.SignLeaf(&t, pub)
}

// TestDecideCANotSigning: a CA whose expiry would leave the certificate shorter than the API's
// hour fails the request rather than issuing what the API refuses; a CA that cannot sign at the
// moment leaves it to be asked again, with nothing issued or recorded.
func TestDecideCANotSigning(t *testing.T) {
	pol := Policies()[SPIFFESignerName]
	out := pol.Decide(params, shortCA{testCA(t, "spiffe")}, newPCR(t, SPIFFESignerName, ECDSAP256), time.Now())
	if out.Condition != "Failed" || out.Reason != "CAExpiring" || out.CertificateChain != "" || out.Retry {
		t.Errorf("CA expiring: got %+v, want Failed without a certificate", out)
	}
	out = pol.Decide(params, failingCA{}, newPCR(t, SPIFFESignerName, ECDSAP256), time.Now())
	if !out.Retry || out.Condition != "" || out.CertificateChain != "" || !strings.Contains(out.Message, "does not load") {
		t.Errorf("CA not loading: got %+v, want Retry without a condition", out)
	}
}

// TestParseClientPodCertificateRefuses: certificates that are not in the format are refused.
func TestParseClientPodCertificateRefuses(t *testing.T) {
	id := PodIdentity{Namespace: "ns", ServiceAccountName: "sa", ServiceAccountUID: "u1", PodName: "p", PodUID: "u2", NodeName: "n", NodeUID: "u3"}
	uris, err := id.ClientPodURIs()
	if err != nil {
		t.Fatal(err)
	}
	good := func() *x509.Certificate {
		c := &x509.Certificate{URIs: slices.Clone(uris)}
		c.Subject.CommonName = "system:serviceaccount:ns:sa"
		return c
	}
	if got, err := ParseClientPodCertificate(good()); err != nil || got != id {
		t.Fatalf("good certificate: %+v, %v", got, err)
	}
	other, _ := PodIdentity{Namespace: "other", ServiceAccountName: "sa", ServiceAccountUID: "u1", PodName: "p", PodUID: "u2", NodeName: "n", NodeUID: "u3"}.ClientPodURIs()
	spiffe, _ := SPIFFEID("cluster.local", "ns", "sa")
	for name, mutate := range map[string]func(c *x509.Certificate){
		"no URIs":            func(c *x509.Certificate) { c.URIs = nil },
		"DNS name too":       func(c *x509.Certificate) { c.DNSNames = []string{"x"} },
		"pod twice":          func(c *x509.Certificate) { c.URIs[0] = c.URIs[1] },
		"SPIFFE ID":          func(c *x509.Certificate) { c.URIs[0] = spiffe },
		"pod in another ns":  func(c *x509.Certificate) { c.URIs[1] = other[1] },
		"common name other":  func(c *x509.Certificate) { c.Subject.CommonName = "system:serviceaccount:ns:admin" },
		"common name absent": func(c *x509.Certificate) { c.Subject.CommonName = "" },
		"four URIs":          func(c *x509.Certificate) { c.URIs = append(c.URIs, uris[2]) },
	} {
		c := good()
		mutate(c)
		if got, err := ParseClientPodCertificate(c); err == nil {
			t.Errorf("%s: accepted as %+v", name, got)
		}
	}
}
