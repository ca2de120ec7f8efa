package apiserver

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/utils/clock"

	podcertauthn "github.com/idplane/idplane/internal/authn/podcert"
	"github.com/idplane/idplane/internal/certificates"
	"github.com/idplane/idplane/internal/certificates/podcert"
	"github.com/idplane/idplane/internal/controller/podcertsigning"
	"github.com/idplane/idplane/internal/pki"
	"github.com/idplane/idplane/internal/serviceaccount"
)

// podCertSigners are idplane's PodCertificateRequest signers, each with a CA of its own in
// <data-dir>/pki named by the short name (<short>-ca.crt and -ca.key, created at first start):
// an SVID must not verify as anything else the cluster issues, and the client-pod CA is trusted
// by its own authenticator only.
var podCertSigners = []struct{ short, signer string }{
	{"spiffe", podcert.SPIFFESignerName},
	{"kube-apiserver-client-pod", podcert.ClientPodSignerName},
}

// podCertCAs are those signers' CAs, by signer name, read again when their files change.
type podCertCAs map[string]*certificates.CA

// loadPodCertCAs creates the signers' CAs when missing and loads them.
func loadPodCertCAs(o *Options, now time.Time) (podCertCAs, error) {
	files := pki.Files{Dir: filepath.Join(o.DataDir, "pki")}
	cas := podCertCAs{}
	for _, s := range podCertSigners {
		if _, err := pki.EnsureSignerCA(files, s.short, now); err != nil {
			return nil, fmt.Errorf("signer %s: %w", s.signer, err)
		}
		ca, err := certificates.LoadCA(files.SignerCACert(s.short), files.SignerCAKey(s.short))
		if err != nil {
			return nil, fmt.Errorf("signer %s: %w", s.signer, err)
		}
		cas[s.signer] = ca
	}
	return cas, nil
}

// podCertAuthentication builds the client-pod certificate authenticator over the client-pod CA's
// certificate file and makes the TLS layer name that CA among the acceptable client CAs, so that
// TLS clients (Go's among them) offer such a certificate at all. Only the TLS layer's list gains
// it: the general x509 authenticator keeps verifying with the cluster CA alone, and only this
// authenticator verifies with the client-pod CA.
// It loads the signers' CAs (a.podCerts), which the later steps use.
func (a *assembly) podCertAuthentication() (authenticator.Request, error) {
	var err error
	if a.podCerts, err = loadPodCertCAs(a.o, time.Now()); err != nil {
		return nil, err
	}
	files := pki.Files{Dir: filepath.Join(a.o.DataDir, "pki")}
	const short = "kube-apiserver-client-pod"
	trust, err := dynamiccertificates.NewDynamicCAContentFromFile("client-pod-ca", files.SignerCACert(short))
	if err != nil {
		return nil, fmt.Errorf("signer %s: %w", podcert.ClientPodSignerName, err)
	}
	// The generic server runs the union's file watchers with the TLS layer.
	a.cfg.SecureServing.ClientCA = dynamiccertificates.NewUnionCAContentProvider(a.cfg.SecureServing.ClientCA, trust)
	getter := serviceaccount.NewInformerGetter(a.loopback.client, a.loopback.informers)
	return podcertauthn.New(trust, getter, clock.RealClock{}), nil
}

// installSPIFFEBundle serves the SPIFFE bundle of idplane.io/spiffe's CA.
func installSPIFFEBundle(srv *genericapiserver.GenericAPIServer, cas podCertCAs) {
	srv.Handler.NonGoRestfulMux.Handle(podcert.BundlePath, podcert.BundleHandler(cas[podcert.SPIFFESignerName]))
}

// signers are the signing controller's signers.
func (cas podCertCAs) signers() map[string]podcertsigning.Signer {
	policies := podcert.Policies()
	signers := map[string]podcertsigning.Signer{}
	for name, ca := range cas {
		signers[name] = podcertsigning.Signer{Policy: policies[name], CA: ca}
	}
	return signers
}

// addReloadHook reads the CAs' files again when they change, on every replica: each replica
// serves the bundle and may lead.
func (cas podCertCAs) addReloadHook(srv *genericapiserver.GenericAPIServer) error {
	return srv.AddPostStartHook("pod-certificate-ca-reload", func(ctx genericapiserver.PostStartHookContext) error {
		for _, ca := range cas {
			go ca.Run(ctx)
		}
		return nil
	})
}

// podCertificateSigningController answers the built-in signers' requests.
func podCertificateSigningController(cc controllerContext) (func(context.Context), error) {
	c, err := podcertsigning.New(cc.client, cc.informers.PodCertificateRequests(), podcertsigning.Config{
		Signers: cc.podCerts.signers(),
		Params:  podcert.Params{TrustDomain: cc.podCertOptions.SPIFFETrustDomain, Duration: cc.podCertOptions.Duration},
		Clock:   clock.RealClock{},
	})
	return func(ctx context.Context) { c.Run(ctx, 2) }, err
}
