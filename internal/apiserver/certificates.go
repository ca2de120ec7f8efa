package apiserver

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/idplane/idplane/internal/certificates"
	"github.com/idplane/idplane/internal/controller/csrsigning"
	"github.com/idplane/idplane/internal/pki"
)

// loadClusterSigners loads the built-in kubernetes.io signers, each with its CA files: by flag,
// else its own CA in <data-dir>/pki for a signer of server certificates (created when missing,
// also in a data directory an older idplane made), else the cluster CA.
func loadClusterSigners(o *Options, now time.Time) (map[string]csrsigning.Signer, error) {
	files := pki.Files{Dir: filepath.Join(o.DataDir, "pki")}
	signers := map[string]csrsigning.Signer{}
	for _, s := range clusterSigners {
		certFile, keyFile := files.CACert(), files.CAKey()
		switch f := o.ClusterSigningFiles[s.flag]; {
		case f.CertFile != "":
			certFile, keyFile = f.CertFile, f.KeyFile
		case s.ownCA:
			if _, err := pki.EnsureSignerCA(files, s.flag, now); err != nil {
				return nil, fmt.Errorf("signer %s: %w", s.signer, err)
			}
			certFile, keyFile = files.SignerCACert(s.flag), files.SignerCAKey(s.flag)
		}
		ca, err := certificates.LoadCA(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("signer %s: %w", s.signer, err)
		}
		policy, ok := certificates.PolicyFor(s.signer)
		if !ok {
			return nil, fmt.Errorf("signer %s: no built-in policy", s.signer)
		}
		signers[s.signer] = csrsigning.Signer{Policy: policy, CA: ca}
	}
	return signers, nil
}

// servingCertNames are the names the API server's serving certificate covers.
func servingCertNames(certPEM []byte) (certificates.ServerNames, error) {
	cert, err := pki.ParseCertificate(certPEM)
	if err != nil {
		return certificates.ServerNames{}, fmt.Errorf("parsing the serving certificate: %w", err)
	}
	return certificates.ServerNames{DNS: cert.DNSNames, IPs: cert.IPAddresses}, nil
}
