// Package pki creates and reuses the server's key material in the data directory: the cluster CA,
// the CAs of the signers that issue server certificates, the serving certificate, the
// service-account signing key and the admin client certificate.
// Files written once are reused on every later start, so clients keep trusting the same CA.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

const (
	caValidity      = 10 * 365 * 24 * time.Hour
	servingValidity = 365 * 24 * time.Hour
	clientValidity  = 365 * 24 * time.Hour
	// A serving certificate this close to expiry is re-issued at start-up rather than left to lapse
	// while the server runs.
	servingRenewBefore = 30 * 24 * time.Hour
	// Backdating absorbs clock skew between this machine and its clients.
	backdate = 5 * time.Minute
)

// CA is a certificate authority loaded from or written to disk.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	Key     crypto.Signer
}

// Files names the key material inside <data-dir>/pki.
type Files struct{ Dir string }

func (f Files) CACert() string      { return filepath.Join(f.Dir, "ca.crt") }
func (f Files) CAKey() string       { return filepath.Join(f.Dir, "ca.key") }
func (f Files) ServingCert() string { return filepath.Join(f.Dir, "apiserver.crt") }
func (f Files) ServingKey() string  { return filepath.Join(f.Dir, "apiserver.key") }
func (f Files) SAKey() string       { return filepath.Join(f.Dir, "sa.key") }
func (f Files) SAPub() string       { return filepath.Join(f.Dir, "sa.pub") }
func (f Files) AdminCert() string   { return filepath.Join(f.Dir, "admin.crt") }
func (f Files) AdminKey() string    { return filepath.Join(f.Dir, "admin.key") }

// SignerCACert and SignerCAKey are the CA of one signer, by its short name (kubelet-serving for
// kubernetes.io/kubelet-serving).
func (f Files) SignerCACert(signer string) string { return filepath.Join(f.Dir, signer+"-ca.crt") }
func (f Files) SignerCAKey(signer string) string  { return filepath.Join(f.Dir, signer+"-ca.key") }

// EnsureCA loads the CA from disk, creating a new self-signed one when neither file exists.
// One file without the other is an error: silently replacing a CA would orphan every issued
// certificate.
func EnsureCA(f Files, commonName string, now time.Time) (*CA, error) {
	return ensureCA(f.CACert(), f.CAKey(), commonName, now)
}

// EnsureSignerCA is EnsureCA for one signer's own CA (SignerCACert, SignerCAKey), named
// idplane-<signer>-ca.
func EnsureSignerCA(f Files, signer string, now time.Time) (*CA, error) {
	return ensureCA(f.SignerCACert(signer), f.SignerCAKey(signer), "idplane-"+signer+"-ca", now)
}

func ensureCA(certFile, keyFile, commonName string, now time.Time) (*CA, error) {
	certPEM, certErr := os.ReadFile(certFile)
	keyPEM, keyErr := os.ReadFile(keyFile)
	switch {
	case certErr == nil && keyErr == nil:
		return ParseCA(certPEM, keyPEM)
	case errors.Is(certErr, os.ErrNotExist) && errors.Is(keyErr, os.ErrNotExist):
	case certErr != nil && !errors.Is(certErr, os.ErrNotExist):
		return nil, fmt.Errorf("reading CA certificate: %w", certErr)
	case keyErr != nil && !errors.Is(keyErr, os.ErrNotExist):
		return nil, fmt.Errorf("reading CA key: %w", keyErr)
	default:
		return nil, fmt.Errorf("only one of %s and %s exists; restore the other or remove both", certFile, keyFile)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := createCertificate(tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("creating CA certificate: %w", err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: der})
	keyPEM, err = EncodeKey(key)
	if err != nil {
		return nil, err
	}
	if err := WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := WriteFile(certFile, certPEM, 0o644); err != nil {
		return nil, err
	}
	return ParseCA(certPEM, keyPEM)
}

// ParseCA parses a PEM certificate and its PEM private key.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	cert, err := ParseCertificate(certPEM)
	if err != nil {
		return nil, fmt.Errorf("parsing CA certificate: %w", err)
	}
	key, err := ParseKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("parsing CA key: %w", err)
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, errors.New("CA certificate and key do not match")
	}
	return &CA{Cert: cert, CertPEM: certPEM, Key: key}, nil
}

// ServingNames are the names a serving certificate must carry.
type ServingNames struct {
	DNS []string
	IPs []net.IP
}

// EnsureServingCert returns the serving certificate and key in PEM, issuing a new pair when none
// exists, when the existing one was not signed by ca, expires within 30 days, or lacks one of the
// wanted names.
func EnsureServingCert(f Files, ca *CA, names ServingNames, now time.Time) (certPEM, keyPEM []byte, err error) {
	certPEM, certErr := os.ReadFile(f.ServingCert())
	keyPEM, keyErr := os.ReadFile(f.ServingKey())
	if certErr == nil && keyErr == nil && servingCertUsable(certPEM, keyPEM, ca, names, now) {
		return certPEM, keyPEM, nil
	}
	certPEM, keyPEM, err = Issue(ca, IssueRequest{
		CommonName:  "idplane-apiserver",
		DNSNames:    names.DNS,
		IPAddresses: names.IPs,
		Usages:      []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		Validity:    servingValidity,
		Now:         now,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("issuing serving certificate: %w", err)
	}
	if err := WriteFile(f.ServingKey(), keyPEM, 0o600); err != nil {
		return nil, nil, err
	}
	if err := WriteFile(f.ServingCert(), certPEM, 0o644); err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}

func servingCertUsable(certPEM, keyPEM []byte, ca *CA, names ServingNames, now time.Time) bool {
	cert, err := ParseCertificate(certPEM)
	if err != nil {
		return false
	}
	key, err := ParseKey(keyPEM)
	if err != nil || !publicKeysEqual(cert.PublicKey, key.Public()) {
		return false
	}
	if cert.CheckSignatureFrom(ca.Cert) != nil || now.Add(servingRenewBefore).After(cert.NotAfter) {
		return false
	}
	for _, dns := range names.DNS {
		if !slices.Contains(cert.DNSNames, dns) {
			return false
		}
	}
	for _, ip := range names.IPs {
		if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

// IssueRequest describes a leaf certificate signed by a CA with a fresh P-256 key.
type IssueRequest struct {
	CommonName   string
	Organization []string
	DNSNames     []string
	IPAddresses  []net.IP
	Usages       []x509.ExtKeyUsage
	Validity     time.Duration
	Now          time.Time
}

// Issue creates a key and a certificate for it signed by ca, both PEM-encoded.
func Issue(ca *CA, req IssueRequest) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating key: %w", err)
	}
	notAfter := req.Now.Add(req.Validity)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: req.CommonName, Organization: req.Organization},
		DNSNames:    req.DNSNames,
		IPAddresses: req.IPAddresses,
		NotBefore:   req.Now.Add(-backdate),
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: req.Usages,
	}
	der, err := createCertificate(tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = EncodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: der}), keyPEM, nil
}

// EnsureAdminCert returns the admin client certificate (CN idplane-admin, O system:masters),
// issuing it when missing, expiring within 30 days or not signed by ca.
func EnsureAdminCert(f Files, ca *CA, now time.Time) (certPEM, keyPEM []byte, err error) {
	certPEM, certErr := os.ReadFile(f.AdminCert())
	keyPEM, keyErr := os.ReadFile(f.AdminKey())
	if certErr == nil && keyErr == nil && servingCertUsable(certPEM, keyPEM, ca, ServingNames{}, now) {
		return certPEM, keyPEM, nil
	}
	certPEM, keyPEM, err = Issue(ca, IssueRequest{
		CommonName:   "idplane-admin",
		Organization: []string{"system:masters"},
		Usages:       []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		Validity:     clientValidity,
		Now:          now,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("issuing admin certificate: %w", err)
	}
	if err := WriteFile(f.AdminKey(), keyPEM, 0o600); err != nil {
		return nil, nil, err
	}
	if err := WriteFile(f.AdminCert(), certPEM, 0o644); err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}

// EnsureServiceAccountKey returns the service-account token signing key, creating sa.key and
// sa.pub on first start.
func EnsureServiceAccountKey(f Files) (crypto.Signer, error) {
	keyPEM, err := os.ReadFile(f.SAKey())
	if err == nil {
		key, err := ParseKey(keyPEM)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", f.SAKey(), err)
		}
		return key, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading service-account key: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating service-account key: %w", err)
	}
	keyPEM, err = EncodeKey(key)
	if err != nil {
		return nil, err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, fmt.Errorf("encoding service-account public key: %w", err)
	}
	if err := WriteFile(f.SAKey(), keyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := WriteFile(f.SAPub(), pem.EncodeToMemory(&pem.Block{Type: keyutil.PublicKeyBlockType, Bytes: pubDER}), 0o644); err != nil {
		return nil, err
	}
	return key, nil
}

// ParseCertificate parses the first certificate of a PEM document.
func ParseCertificate(certPEM []byte) (*x509.Certificate, error) {
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, err
	}
	return certs[0], nil
}

// ParseKey parses a PEM private key in PKCS#8, SEC 1 (EC) or PKCS#1 (RSA) form.
func ParseKey(keyPEM []byte) (crypto.Signer, error) {
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("key of type %T cannot sign", key)
	}
	return signer, nil
}

// EncodeKey encodes an ECDSA key as a SEC 1 "EC PRIVATE KEY" PEM block.
func EncodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, fmt.Errorf("encoding key: %w", err)
	}
	return keyPEM, nil
}

func createCertificate(tmpl, parent *x509.Certificate, pub any, signer crypto.Signer) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	tmpl.SerialNumber = serial
	return x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
}

func publicKeysEqual(a, b any) bool {
	k, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && k.Equal(b)
}

// WriteFile writes through a temporary file and a rename so a crash never leaves a truncated file,
// creating parent directories.
func WriteFile(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
