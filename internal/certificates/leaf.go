package certificates

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"fmt"
	"math/big"
)

// SignLeaf signs tmpl for pub with the CA in use, as Sign does for a CSR: a fresh 128-bit serial,
// never a CA, and a NotAfter cut to the CA's own. The caller chooses everything else (subject,
// names, usages, validity); it checks the returned certificate, which may be shorter-lived than
// it asked for.
func (c *CA) SignLeaf(tmpl *x509.Certificate, pub crypto.PublicKey) (*x509.Certificate, error) {
	ca, err := c.signingCA()
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generating a serial number: %w", err)
	}
	t := *tmpl
	t.SerialNumber = serial
	t.BasicConstraintsValid, t.IsCA = true, false
	if t.NotAfter.After(ca.Cert.NotAfter) {
		t.NotAfter = ca.Cert.NotAfter
	}
	der, err := x509.CreateCertificate(rand.Reader, &t, ca.Cert, pub, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing the certificate just signed: %w", err)
	}
	return cert, nil
}
