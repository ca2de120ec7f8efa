package podcerts

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
)

// maxChainBytes bounds an issued chain, as the API bounds status.certificateChain: a signer (or
// whoever can write /status) does not choose how much the agent parses and writes to every pod.
const maxChainBytes = 100 * 1024

// issued is a certificate chain the agent accepted for a key.
type issued struct {
	chain          []byte // clean PEM, leaf first
	notBefore      time.Time
	notAfter       time.Time
	beginRefreshAt time.Time
}

// acceptChain checks an Issued request's status against the key the agent made for it and
// returns the chain as clean PEM (CERTIFICATE blocks only, no headers or text between them). A
// chain whose leaf is not for the key, that has expired, or whose times disagree with the leaf
// is refused: the API server checks the same, but the files go to a workload that trusts them.
func acceptChain(st *certificatesv1.PodCertificateRequestStatus, keyPEM []byte, now time.Time) (*issued, error) {
	if len(st.CertificateChain) > maxChainBytes {
		return nil, fmt.Errorf("the certificate chain is %d bytes, more than the %d allowed", len(st.CertificateChain), maxChainBytes)
	}
	var certs []*x509.Certificate
	var clean bytes.Buffer
	for rest := []byte(st.CertificateChain); ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			if len(bytes.TrimSpace(rest)) > 0 && len(certs) == 0 {
				return nil, errors.New("the certificate chain holds no PEM block")
			}
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("the certificate chain holds a %q PEM block; only CERTIFICATE blocks are allowed", block.Type)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d of the chain: %w", len(certs), err)
		}
		certs = append(certs, cert)
		_ = pem.Encode(&clean, &pem.Block{Type: "CERTIFICATE", Bytes: block.Bytes})
	}
	if len(certs) == 0 {
		return nil, errors.New("the certificate chain holds no certificate")
	}
	leaf := certs[0]
	pub, err := publicKey(keyPEM)
	if err != nil {
		return nil, err
	}
	if k, ok := pub.(interface{ Equal(crypto.PublicKey) bool }); !ok || !k.Equal(leaf.PublicKey) {
		return nil, errors.New("the leaf certificate is not for the key the agent requested it for")
	}
	if !now.Before(leaf.NotAfter) {
		return nil, fmt.Errorf("the leaf certificate expired at %s", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	if st.NotBefore == nil || st.NotAfter == nil || st.BeginRefreshAt == nil {
		return nil, errors.New("the status lacks notBefore, notAfter or beginRefreshAt")
	}
	if !st.NotBefore.Time.Equal(leaf.NotBefore) || !st.NotAfter.Time.Equal(leaf.NotAfter) {
		return nil, errors.New("the status's notBefore and notAfter are not the leaf certificate's")
	}
	refresh := st.BeginRefreshAt.Time
	if refresh.Before(leaf.NotBefore) || !refresh.Before(leaf.NotAfter) {
		return nil, errors.New("beginRefreshAt is outside the leaf certificate's validity")
	}
	return &issued{chain: clean.Bytes(), notBefore: leaf.NotBefore, notAfter: leaf.NotAfter, beginRefreshAt: refresh}, nil
}
