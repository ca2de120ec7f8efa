package apiserver

import (
	"fmt"
	"path/filepath"

	"github.com/idplane/idplane/internal/certificates"
	"github.com/idplane/idplane/internal/controller/csrsigning"
	"github.com/idplane/idplane/internal/pki"
)

// loadClusterSigners loads the built-in kubernetes.io signers, each with its CA files (by flag,
// else the cluster CA in <data-dir>/pki).
func loadClusterSigners(o *Options) (map[string]csrsigning.Signer, error) {
	files := pki.Files{Dir: filepath.Join(o.DataDir, "pki")}
	signers := map[string]csrsigning.Signer{}
	for _, s := range clusterSigners {
		certFile, keyFile := files.CACert(), files.CAKey()
		if f := o.ClusterSigningFiles[s.flag]; f.CertFile != "" {
			certFile, keyFile = f.CertFile, f.KeyFile
		}
		ca, err := certificates.LoadCA(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("signer %s: %w", s.signer, err)
		}
		signers[s.signer] = csrsigning.Signer{Policy: certificates.Policies[s.signer], CA: ca}
	}
	return signers, nil
}
