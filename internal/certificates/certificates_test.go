package certificates

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"

	"github.com/idplane/idplane/internal/pki"
	"github.com/idplane/idplane/internal/testing/testkeys"
)

type reqOpts struct {
	cn     string
	orgs   []string
	dns    []string
	ips    []net.IP
	emails []string
	uris   []*url.URL
	// key is the request's key type; empty means ECDSA P-256.
	key keyType
}

type keyType string

const (
	rsaKey     keyType = testkeys.RSA
	ecdsaKey   keyType = testkeys.ECDSAP256
	ed25519Key keyType = testkeys.Ed25519
)

func testKey(t testing.TB, kind keyType) crypto.Signer {
	t.Helper()
	if kind == "" {
		kind = ecdsaKey
	}
	return testkeys.Key(t, string(kind))
}

func makeRequest(t testing.TB, o reqOpts) *x509.CertificateRequest {
	t.Helper()
	key := testKey(t, o.key)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: o.cn, Organization: o.orgs}, DNSNames: o.dns, IPAddresses: o.ips, EmailAddresses: o.emails, URIs: o.uris,
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	csr, err := ParseRequest(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
	if err != nil {
		t.Fatal(err)
	}
	return csr
}

func usages(us ...certificatesv1.KeyUsage) []certificatesv1.KeyUsage { return us }

func TestPolicies(t *testing.T) {
	const (
		client  = certificatesv1.KubeAPIServerClientSignerName
		kubelet = certificatesv1.KubeAPIServerClientKubeletSignerName
		serving = certificatesv1.KubeletServingSignerName
	)
	node := reqOpts{cn: "system:node:n1", orgs: []string{"system:nodes"}}
	withDNS := node
	withDNS.dns = []string{"n1.example.com"}
	withIP := node
	withIP.ips = []net.IP{net.ParseIP("10.0.0.1")}
	withEmail := withDNS
	withEmail.emails = []string{"n1@example.com"}
	rsaNode := node
	rsaNode.key = rsaKey
	extraOrg := node
	extraOrg.orgs = []string{"system:nodes", "system:masters"}
	bareCN := node
	bareCN.cn = "system:node:"
	digitalClient := usages(certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth)
	cases := []struct {
		name, signer string
		req          reqOpts
		usages       []certificatesv1.KeyUsage
		wantErr      string
	}{
		{"client: any subject", client, reqOpts{cn: "alice", orgs: []string{"devs"}}, digitalClient, ""},
		{"client: server auth", client, reqOpts{cn: "alice"}, usages(certificatesv1.UsageServerAuth), `usage "server auth" is not allowed`},
		{"client: no client auth", client, reqOpts{cn: "alice"}, usages(certificatesv1.UsageDigitalSignature), `usage "client auth" is required`},
		{"kubelet client", kubelet, node, digitalClient, ""},
		{"kubelet client: key encipherment with RSA", kubelet, rsaNode, usages(certificatesv1.UsageKeyEncipherment, certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth), ""},
		{"kubelet client: key encipherment without digital signature", kubelet, node, usages(certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth), "must be exactly one of"},
		{"kubelet client: not a node name", kubelet, reqOpts{cn: "alice", orgs: []string{"system:nodes"}}, digitalClient, `must start with "system:node:"`},
		{"kubelet client: the prefix alone", kubelet, bareCN, digitalClient, "name a node"},
		{"kubelet client: another organization too", kubelet, extraOrg, digitalClient, "must be exactly"},
		{"kubelet client: SANs", kubelet, withDNS, digitalClient, "subject alternative names are not allowed"},
		{"kubelet client: server auth", kubelet, node, usages(certificatesv1.UsageServerAuth, certificatesv1.UsageClientAuth), "must be exactly one of"},
		{"kubelet serving: DNS", serving, withDNS, usages(certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth), ""},
		{"kubelet serving: IP", serving, withIP, usages(certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth), ""},
		{"kubelet serving: no SANs", serving, node, usages(certificatesv1.UsageServerAuth), "at least one DNS or IP"},
		{"kubelet serving: email SAN", serving, withEmail, usages(certificatesv1.UsageServerAuth), "only DNS and IP"},
		{"kubelet serving: client auth", serving, withDNS, usages(certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth, certificatesv1.UsageClientAuth), "must be exactly one of"},
		{"legacy-unknown: anything", legacyUnknownSignerName, reqOpts{cn: "x"}, usages(certificatesv1.UsageCertSign), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			policy, ok := PolicyFor(tc.signer)
			if !ok {
				t.Fatalf("no policy for %s", tc.signer)
			}
			err := policy.Check(&Request{CSR: makeRequest(t, tc.req), Usages: tc.usages})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Check = %v, want allowed", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Check = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestPolicyFor: every built-in signer has its policy, named after it; any other name has none.
func TestPolicyFor(t *testing.T) {
	cases := []struct {
		signer string
		want   bool
	}{
		{certificatesv1.KubeAPIServerClientSignerName, true},
		{certificatesv1.KubeAPIServerClientKubeletSignerName, true},
		{certificatesv1.KubeletServingSignerName, true},
		{legacyUnknownSignerName, true},
		{"example.com/other", false},
		{"", false},
	}
	for _, tc := range cases {
		t.Run(tc.signer, func(t *testing.T) {
			p, ok := PolicyFor(tc.signer)
			if ok != tc.want || (ok && p.SignerName != tc.signer) {
				t.Errorf("PolicyFor = %q, %t; want %t", p.SignerName, ok, tc.want)
			}
		})
	}
}

// TestUsageSetsPerKeyType: each built-in signer takes the same usage sets whatever the key type
// (the kubelet signers exactly the design's set or that set without key encipherment), and what
// it takes it signs with exactly those usages.
func TestUsageSetsPerKeyType(t *testing.T) {
	const (
		client  = certificatesv1.KubeAPIServerClientSignerName
		kubelet = certificatesv1.KubeAPIServerClientKubeletSignerName
		serving = certificatesv1.KubeletServingSignerName
		legacy  = legacyUnknownSignerName
	)
	const (
		ke    = certificatesv1.UsageKeyEncipherment
		ds    = certificatesv1.UsageDigitalSignature
		cAuth = certificatesv1.UsageClientAuth
		sAuth = certificatesv1.UsageServerAuth
	)
	usageSets := []struct {
		name   string
		usages []certificatesv1.KeyUsage
		// signed are the signers that take the set.
		signed []string
	}{
		{"design client set", usages(ke, ds, cAuth), []string{client, kubelet, legacy}},
		{"client set without key encipherment", usages(ds, cAuth), []string{client, kubelet, legacy}},
		{"design client set reordered and repeated", usages(cAuth, ke, ds, cAuth), []string{client, kubelet, legacy}},
		{"design serving set", usages(ke, ds, sAuth), []string{serving, legacy}},
		{"serving set without key encipherment", usages(ds, sAuth), []string{serving, legacy}},
		{"client auth alone", usages(cAuth), []string{client, legacy}},
		{"key encipherment and client auth", usages(ke, cAuth), []string{client, legacy}},
		{"server auth alone", usages(sAuth), []string{legacy}},
		{"key encipherment and server auth", usages(ke, sAuth), []string{legacy}},
		{"client and server auth", usages(ds, cAuth, sAuth), []string{legacy}},
		{"design serving set and cert sign", usages(ke, ds, sAuth, certificatesv1.UsageCertSign), []string{legacy}},
	}
	subjects := map[string]reqOpts{
		client:  {cn: "alice", orgs: []string{"devs"}},
		kubelet: {cn: "system:node:n1", orgs: []string{"system:nodes"}},
		serving: {cn: "system:node:n1", orgs: []string{"system:nodes"}, dns: []string{"n1.example.com"}, ips: []net.IP{net.ParseIP("10.0.0.1")}},
		legacy:  {cn: "anyone"},
	}
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	certFile, keyFile := writeCA(t, t.TempDir(), "ca", now)
	ca, err := LoadCA(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, signer := range []string{kubelet, serving, client, legacy} {
		for _, key := range []keyType{rsaKey, ecdsaKey, ed25519Key} {
			for _, set := range usageSets {
				t.Run(signer+"/"+string(key)+"/"+set.name, func(t *testing.T) {
					opts := subjects[signer]
					opts.key = key
					req := &Request{CSR: makeRequest(t, opts), Usages: set.usages}
					err := policies[signer].Check(req)
					if want := slices.Contains(set.signed, signer); want != (err == nil) {
						t.Fatalf("Check = %v, want signed %v", err, want)
					}
					if err != nil {
						return
					}
					certPEM, err := ca.Sign(SignParams{Request: req, MaxDuration: time.Hour, Now: now})
					if err != nil {
						t.Fatalf("signing: %v", err)
					}
					block, _ := pem.Decode(certPEM)
					cert, err := x509.ParseCertificate(block.Bytes)
					if err != nil {
						t.Fatal(err)
					}
					if got, want := cert.KeyUsage&x509.KeyUsageKeyEncipherment != 0, slices.Contains(set.usages, ke); got != want {
						t.Errorf("certificate key encipherment %v, want %v", got, want)
					}
					if got, want := slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageServerAuth), slices.Contains(set.usages, sAuth); got != want {
						t.Errorf("certificate server auth %v, want %v", got, want)
					}
					if cert.PublicKeyAlgorithm != req.CSR.PublicKeyAlgorithm {
						t.Errorf("certificate key %v, want the request's %v", cert.PublicKeyAlgorithm, req.CSR.PublicKeyAlgorithm)
					}
				})
			}
		}
	}
}

func writeCA(t *testing.T, dir, name string, now time.Time) (certFile, keyFile string) {
	t.Helper()
	files := pki.Files{Dir: filepath.Join(dir, name)}
	if _, err := pki.EnsureCA(files, name, now); err != nil {
		t.Fatal(err)
	}
	return files.CACert(), files.CAKey()
}

func TestSign(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	certFile, keyFile := writeCA(t, dir, "ca1", now)
	ca, err := LoadCA(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	req := &Request{CSR: makeRequest(t, reqOpts{cn: "system:node:n1", dns: []string{"n1.example.com"}}), Usages: usages(certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth)}
	sign := func(expiration *int32, max time.Duration) *x509.Certificate {
		t.Helper()
		certPEM, err := ca.Sign(SignParams{Request: req, ExpirationSeconds: expiration, MaxDuration: max, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(certPEM)
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return cert
	}
	hour := int32(3600)
	cert := sign(&hour, 365*24*time.Hour)
	caPEM := ca.CertPEM()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "n1.example.com", CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("does not verify as a serving certificate: %v", err)
	}
	if cert.IsCA || cert.KeyUsage != x509.KeyUsageDigitalSignature {
		t.Errorf("CA %v, key usage %v", cert.IsCA, cert.KeyUsage)
	}
	if !cert.NotBefore.Equal(now.Add(-backdate)) || !cert.NotAfter.Equal(now.Add(time.Hour)) {
		t.Errorf("valid %v to %v, want backdated start and the hour asked for", cert.NotBefore, cert.NotAfter)
	}
	if cert := sign(nil, 2*time.Hour); !cert.NotAfter.Equal(now.Add(2 * time.Hour)) {
		t.Errorf("without expirationSeconds: until %v, want the signer's maximum", cert.NotAfter)
	}
	if cert := sign(&hour, 30*time.Minute); !cert.NotAfter.Equal(now.Add(30 * time.Minute)) {
		t.Errorf("maximum below the request: until %v, want the maximum", cert.NotAfter)
	}
	caCert, _ := pki.ParseCertificate(caPEM)
	if cert := sign(nil, 100*365*24*time.Hour); !cert.NotAfter.Equal(caCert.NotAfter) {
		t.Errorf("beyond the CA: until %v, want the CA's own end %v", cert.NotAfter, caCert.NotAfter)
	}
}

func TestParseRequestRefusesBadInput(t *testing.T) {
	good := makeRequest(t, reqOpts{cn: "x"})
	tampered := append([]byte(nil), good.Raw...)
	tampered[len(tampered)-3] ^= 0xff
	for name, data := range map[string][]byte{
		"empty":            nil,
		"not PEM":          []byte("hello"),
		"wrong block type": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: good.Raw}),
		"garbage DER":      pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: []byte{1, 2, 3}}),
		"bad signature":    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: tampered}),
	} {
		if _, err := ParseRequest(data); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

// FuzzPolicies checks arbitrary requests against every built-in signer: the rules answer, and never panic.
func FuzzPolicies(f *testing.F) {
	f.Add([]byte(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: makeRequest(f, reqOpts{cn: "system:node:n"}).Raw})), "client auth")
	f.Add([]byte("-----BEGIN CERTIFICATE REQUEST-----\nAA==\n-----END CERTIFICATE REQUEST-----\n"), "server auth")
	f.Fuzz(func(t *testing.T, data []byte, usage string) {
		csr, err := ParseRequest(data)
		if err != nil {
			return
		}
		for _, p := range policies {
			_ = p.Check(&Request{CSR: csr, Usages: []certificatesv1.KeyUsage{certificatesv1.KeyUsage(usage)}})
		}
	})
}
