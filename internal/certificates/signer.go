package certificates

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"sync/atomic"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/klog/v2"

	"github.com/idplane/idplane/internal/pki"
)

// backdate starts every certificate a little in the past, so that a client whose clock is behind
// the server's does not reject it as not yet valid.
const backdate = 5 * time.Minute

var keyUsages = map[certificatesv1.KeyUsage]x509.KeyUsage{
	certificatesv1.UsageSigning:           x509.KeyUsageDigitalSignature,
	certificatesv1.UsageDigitalSignature:  x509.KeyUsageDigitalSignature,
	certificatesv1.UsageContentCommitment: x509.KeyUsageContentCommitment,
	certificatesv1.UsageKeyEncipherment:   x509.KeyUsageKeyEncipherment,
	certificatesv1.UsageKeyAgreement:      x509.KeyUsageKeyAgreement,
	certificatesv1.UsageDataEncipherment:  x509.KeyUsageDataEncipherment,
	certificatesv1.UsageCertSign:          x509.KeyUsageCertSign,
	certificatesv1.UsageCRLSign:           x509.KeyUsageCRLSign,
	certificatesv1.UsageEncipherOnly:      x509.KeyUsageEncipherOnly,
	certificatesv1.UsageDecipherOnly:      x509.KeyUsageDecipherOnly,
}

var extKeyUsages = map[certificatesv1.KeyUsage]x509.ExtKeyUsage{
	certificatesv1.UsageAny:             x509.ExtKeyUsageAny,
	certificatesv1.UsageServerAuth:      x509.ExtKeyUsageServerAuth,
	certificatesv1.UsageClientAuth:      x509.ExtKeyUsageClientAuth,
	certificatesv1.UsageCodeSigning:     x509.ExtKeyUsageCodeSigning,
	certificatesv1.UsageEmailProtection: x509.ExtKeyUsageEmailProtection,
	certificatesv1.UsageSMIME:           x509.ExtKeyUsageEmailProtection,
	certificatesv1.UsageIPsecEndSystem:  x509.ExtKeyUsageIPSECEndSystem,
	certificatesv1.UsageIPsecTunnel:     x509.ExtKeyUsageIPSECTunnel,
	certificatesv1.UsageIPsecUser:       x509.ExtKeyUsageIPSECUser,
	certificatesv1.UsageTimestamping:    x509.ExtKeyUsageTimeStamping,
	certificatesv1.UsageOCSPSigning:     x509.ExtKeyUsageOCSPSigning,
	certificatesv1.UsageMicrosoftSGC:    x509.ExtKeyUsageMicrosoftServerGatedCrypto,
	certificatesv1.UsageNetscapeSGC:     x509.ExtKeyUsageNetscapeServerGatedCrypto,
}

// CA is a signing CA read from a certificate and a key file and read again when they change, so
// that rotating the CA needs no restart. The files are watched by the library that reloads the
// server's other certificates, dynamiccertificates, while Run runs. That library rides out files
// that do not hold a usable pair on the pair it loaded before; a CA does not sign meanwhile:
// signing with a CA its operator replaced would issue certificates nobody trusts any more. So
// before each signing it compares the files' size and modification time with those of the pair
// in use (two stats), and reads them again through the library when they differ.
type CA struct {
	certFile, keyFile string
	files             *dynamiccertificates.DynamicCertKeyPairContent
	ca                atomic.Pointer[pki.CA]
	// current holds the stamps of the files the pair in use was read from.
	current atomic.Pointer[fileStamps]
}

// fileStamps tell whether the certificate and the key file changed.
type fileStamps [2]struct {
	modTime time.Time
	size    int64
}

func statFiles(certFile, keyFile string) (fileStamps, error) {
	var stamps fileStamps
	for i, f := range []string{certFile, keyFile} {
		st, err := os.Stat(f)
		if err != nil {
			return stamps, fmt.Errorf("reading signing CA: %w", err)
		}
		stamps[i].modTime, stamps[i].size = st.ModTime(), st.Size()
	}
	return stamps, nil
}

// LoadCA reads the CA files; Run keeps reading them.
func LoadCA(certFile, keyFile string) (*CA, error) {
	stamps, err := statFiles(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	files, err := dynamiccertificates.NewDynamicServingContentFromFiles("signing-ca", certFile, keyFile)
	if err != nil {
		// The library does not say which file is at fault, or how; reading the pair does.
		if _, readErr := readCA(certFile, keyFile); readErr != nil {
			return nil, readErr
		}
		return nil, fmt.Errorf("loading signing CA from %s and %s: %w", certFile, keyFile, err)
	}
	c := &CA{certFile: certFile, keyFile: keyFile, files: files}
	if err := c.load(); err != nil {
		return nil, err
	}
	c.current.Store(&stamps)
	files.AddListener(reloader{c})
	return c, nil
}

func readCA(certFile, keyFile string) (*pki.CA, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("reading signing CA certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("reading signing CA key: %w", err)
	}
	return parseCA(certFile, keyFile, certPEM, keyPEM)
}

func parseCA(certFile, keyFile string, certPEM, keyPEM []byte) (*pki.CA, error) {
	ca, err := pki.ParseCA(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("loading signing CA from %s and %s: %w", certFile, keyFile, err)
	}
	return ca, nil
}

// load parses the pair the library holds now. The library has checked that the key is the
// certificate's; parsing it here as well keeps to the one parser every CA in idplane goes through.
func (c *CA) load() error {
	certPEM, keyPEM := c.files.CurrentCertKeyContent()
	if loaded := c.ca.Load(); loaded != nil && bytes.Equal(loaded.CertPEM, certPEM) {
		// A key belongs to one certificate: the same certificate is the same pair.
		return nil
	}
	ca, err := parseCA(c.certFile, c.keyFile, certPEM, keyPEM)
	if err != nil {
		return err
	}
	c.ca.Store(ca)
	klog.InfoS("Signing CA loaded", "certFile", c.certFile, "subject", ca.Cert.Subject.String(),
		"notAfter", ca.Cert.NotAfter, "serial", ca.Cert.SerialNumber.String())
	return nil
}

// reloader is told by the library when the files hold a new valid pair.
type reloader struct{ c *CA }

func (r reloader) Enqueue() {
	if err := r.c.load(); err != nil {
		klog.ErrorS(err, "Signing CA files changed to a pair that does not load; signing is refused until they hold one")
	}
}

// Run watches the CA files until ctx ends, loading each new pair. A CA runs once.
func (c *CA) Run(ctx context.Context) {
	c.files.Run(ctx, 1)
}

// CertPEM is the CA's certificate as last loaded.
func (c *CA) CertPEM() []byte {
	return c.ca.Load().CertPEM
}

// signingCA returns the CA to sign with: the pair in use while the files have not changed since
// it was read, else the pair they hold now, or an error while they hold none.
func (c *CA) signingCA() (*pki.CA, error) {
	stamps, err := statFiles(c.certFile, c.keyFile)
	if err != nil {
		return nil, err
	}
	if cur := c.current.Load(); cur != nil && *cur == stamps {
		return c.ca.Load(), nil
	}
	// Stamped before the read: a change during it shows at the next signing.
	if err := c.files.RunOnce(context.Background()); err != nil {
		return nil, fmt.Errorf("loading signing CA from %s and %s: %w", c.certFile, c.keyFile, err)
	}
	if err := c.load(); err != nil {
		return nil, err
	}
	c.current.Store(&stamps)
	return c.ca.Load(), nil
}

// SignParams is one signing: the request its policy allowed, the lifetime asked for (nil: the
// signer's maximum) and the time to sign at.
type SignParams struct {
	Request           *Request
	ExpirationSeconds *int32
	MaxDuration       time.Duration
	Now               time.Time
}

// Sign issues a certificate for the request: its subject and alternative names, the usages asked
// for, never a CA, valid from a little before now for the shorter of the asked and the maximum
// lifetimes, and never beyond the CA's own expiry.
func (c *CA) Sign(p SignParams) ([]byte, error) {
	ca, err := c.signingCA()
	if err != nil {
		return nil, err
	}
	lifetime := p.MaxDuration
	if p.ExpirationSeconds != nil {
		lifetime = min(lifetime, time.Duration(*p.ExpirationSeconds)*time.Second)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generating a serial number: %w", err)
	}
	csr := p.Request.CSR
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               csr.Subject,
		DNSNames:              csr.DNSNames,
		IPAddresses:           csr.IPAddresses,
		EmailAddresses:        csr.EmailAddresses,
		URIs:                  csr.URIs,
		NotBefore:             p.Now.Add(-backdate),
		NotAfter:              p.Now.Add(lifetime),
		BasicConstraintsValid: true,
		IsCA:                  false,
	}
	if tmpl.NotAfter.After(ca.Cert.NotAfter) {
		tmpl.NotAfter = ca.Cert.NotAfter
	}
	for _, u := range p.Request.Usages {
		if ku, ok := keyUsages[u]; ok {
			tmpl.KeyUsage |= ku
		}
		if eku, ok := extKeyUsages[u]; ok {
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, eku)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, csr.PublicKey, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}
