package certificates

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"

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

// CA is a signing CA read from a certificate and a key file, read again whenever either file
// changes, so that rotating the CA needs no restart.
type CA struct {
	certFile, keyFile string

	mu     sync.Mutex
	ca     *pki.CA
	loaded [2]fileStamp
}

type fileStamp struct {
	modTime time.Time
	size    int64
}

// LoadCA reads the CA files.
func LoadCA(certFile, keyFile string) (*CA, error) {
	c := &CA{certFile: certFile, keyFile: keyFile}
	if _, err := c.current(); err != nil {
		return nil, err
	}
	return c, nil
}

// current returns the CA, reading the files again if they changed since they were last read. A
// changed pair that cannot be read is an error: signing with a CA its operator replaced would
// issue certificates nobody trusts any more.
func (c *CA) current() (*pki.CA, error) {
	var stamps [2]fileStamp
	for i, f := range []string{c.certFile, c.keyFile} {
		st, err := os.Stat(f)
		if err != nil {
			return nil, fmt.Errorf("reading signing CA: %w", err)
		}
		stamps[i] = fileStamp{st.ModTime(), st.Size()}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ca != nil && stamps == c.loaded {
		return c.ca, nil
	}
	certPEM, err := os.ReadFile(c.certFile)
	if err != nil {
		return nil, fmt.Errorf("reading signing CA certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(c.keyFile)
	if err != nil {
		return nil, fmt.Errorf("reading signing CA key: %w", err)
	}
	ca, err := pki.ParseCA(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("loading signing CA from %s and %s: %w", c.certFile, c.keyFile, err)
	}
	c.ca, c.loaded = ca, stamps
	return ca, nil
}

// CertPEM is the CA's certificate as currently loaded.
func (c *CA) CertPEM() ([]byte, error) {
	ca, err := c.current()
	if err != nil {
		return nil, err
	}
	return ca.CertPEM, nil
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
	ca, err := c.current()
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
