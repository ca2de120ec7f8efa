package apiserver

import (
	"fmt"
	"path/filepath"

	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/idplane/idplane/internal/certificates"
	"github.com/idplane/idplane/internal/controller/csrapproving"
	"github.com/idplane/idplane/internal/controller/csrsigning"
	"github.com/idplane/idplane/internal/controller/trustbundlepublisher"
	"github.com/idplane/idplane/internal/pki"
)

// csrSigningController builds the signing controller for the built-in kubernetes.io signers,
// each with its CA files (by flag, else the cluster CA in <data-dir>/pki), and the publisher of
// their CAs as ClusterTrustBundles.
func csrSigningController(o *Options, client kubernetes.Interface, factory informers.SharedInformerFactory) (*csrsigning.Controller, *trustbundlepublisher.Publisher, error) {
	files := pki.Files{Dir: filepath.Join(o.DataDir, "pki")}
	signers := map[string]csrsigning.Signer{}
	cas := map[string]trustbundlepublisher.CA{}
	for _, s := range clusterSigners {
		certFile, keyFile := files.CACert(), files.CAKey()
		if f := o.ClusterSigningFiles[s.flag]; f.CertFile != "" {
			certFile, keyFile = f.CertFile, f.KeyFile
		}
		ca, err := certificates.LoadCA(certFile, keyFile)
		if err != nil {
			return nil, nil, fmt.Errorf("signer %s: %w", s.signer, err)
		}
		signers[s.signer] = csrsigning.Signer{Policy: certificates.Policies[s.signer], CA: ca}
		cas[s.signer] = ca
	}
	signing, err := csrsigning.New(client, factory.Certificates().V1().CertificateSigningRequests(), csrsigning.Config{
		Signers: signers, MaxDuration: o.ClusterSigningDuration, Clock: clock.RealClock{},
	})
	if err != nil {
		return nil, nil, err
	}
	return signing, trustbundlepublisher.New(client, cas), nil
}

// csrApprovingController builds the kubelet-client approver, asking the server's own authorizer,
// and, with --approve-kubelet-serving, the kubelet-serving one.
func csrApprovingController(o *Options, client kubernetes.Interface, az authorizer.Authorizer, factory informers.SharedInformerFactory) (*csrapproving.Controller, error) {
	cfg := csrapproving.Config{ApproveKubeletServing: o.ApproveKubeletServing}
	if o.ApproveKubeletServing {
		cfg.Nodes = factory.Core().V1().Nodes()
	}
	return csrapproving.New(client, az, factory.Certificates().V1().CertificateSigningRequests(), cfg)
}
