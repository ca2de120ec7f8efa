// Package podcert authenticates kubernetes.io/kube-apiserver-client-pod certificates: a client
// certificate of that signer's CA is the pod's service account, with the extras a pod-bound
// token carries, for as long as the service account, the pod and its node are the very objects
// the certificate names. It applies the bound-token rules to mTLS: every request looks the three
// objects up again (in the informers the token authenticator reads), and nothing is cached, so
// a deleted or replaced pod's certificate stops working as soon as the server has seen it go.
//
// Its CA is trusted here only. It is never part of the client-CA pool the general x509
// authenticator verifies with, so a client-pod certificate can never be read as the user its
// subject names; and the general CA, or any other signer's, never verifies here.
package podcert

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	apiserviceaccount "k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/utils/clock"

	podcertformat "github.com/idplane/idplane/internal/certificates/podcert"
	"github.com/idplane/idplane/internal/serviceaccount"
)

// CA gives the options that verify a chain against the client-pod signer's CA as it is now (a
// dynamiccertificates CA provider, which reads the file again when it changes).
type CA interface {
	VerifyOptions() (x509.VerifyOptions, bool)
}

// Authenticator is the client-pod certificate authenticator.
type Authenticator struct {
	ca     CA
	getter serviceaccount.Getter
	clock  clock.PassiveClock
}

// New returns the authenticator of certificates that verify against ca, looking the objects up
// with getter.
func New(ca CA, getter serviceaccount.Getter, clk clock.PassiveClock) *Authenticator {
	return &Authenticator{ca: ca, getter: getter, clock: clk}
}

var _ authenticator.Request = (*Authenticator)(nil)

// AuthenticateRequest answers (nil, false, nil) for a request without a client certificate or
// with one that is neither of the client-pod CA nor in its format: another authenticator may
// take it. A certificate in the format that does not verify, or whose objects are gone, replaced
// or being deleted, is refused with the reason.
func (a *Authenticator) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	leaf := req.TLS.PeerCertificates[0]
	opts, ok := a.ca.VerifyOptions()
	if !ok {
		return nil, false, nil
	}
	opts.CurrentTime = a.clock.Now()
	opts.KeyUsages = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	opts.Intermediates = x509.NewCertPool()
	for _, c := range req.TLS.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := leaf.Verify(opts); err != nil {
		if inFormat(leaf) {
			return nil, false, fmt.Errorf("pod client certificate: %w", err)
		}
		return nil, false, nil
	}
	id, err := podcertformat.ParseClientPodCertificate(leaf)
	if err != nil {
		return nil, false, fmt.Errorf("pod client certificate: %w", err)
	}
	info, err := a.check(req, id)
	if err != nil {
		return nil, false, fmt.Errorf("pod client certificate for %s: %w", apiserviceaccount.MakeUsername(id.Namespace, id.ServiceAccountName), err)
	}
	sum := sha256.Sum256(leaf.Raw)
	info.CredentialID = "X509SHA256=" + hex.EncodeToString(sum[:])
	return &authenticator.Response{User: info.UserInfo()}, true, nil
}

// inFormat says whether the certificate claims the client-pod format, so that its failure to
// verify is worth a reason rather than silence.
func inFormat(cert *x509.Certificate) bool {
	for _, u := range cert.URIs {
		if strings.HasPrefix(u.String(), "urn:idplane:") {
			return true
		}
	}
	return false
}

// check looks up the service account, the pod and the node the certificate names and returns
// who the request is: each must exist with the UID named and not be being deleted, the pod must
// run as the service account on the node.
func (a *Authenticator) check(req *http.Request, id podcertformat.PodIdentity) (*apiserviceaccount.ServiceAccountInfo, error) {
	ctx := req.Context()
	sa, err := a.getter.ServiceAccount(ctx, id.Namespace, id.ServiceAccountName)
	if err := live("service account", id.Namespace+"/"+id.ServiceAccountName, id.ServiceAccountUID, sa, err); err != nil {
		return nil, err
	}
	pod, err := a.getter.Pod(ctx, id.Namespace, id.PodName)
	if err := live("pod", id.Namespace+"/"+id.PodName, id.PodUID, pod, err); err != nil {
		return nil, err
	}
	if pod.Spec.ServiceAccountName != id.ServiceAccountName {
		return nil, fmt.Errorf("pod %s/%s runs as service account %q, not %q", id.Namespace, id.PodName, pod.Spec.ServiceAccountName, id.ServiceAccountName)
	}
	if pod.Spec.NodeName != id.NodeName {
		return nil, fmt.Errorf("pod %s/%s is bound to node %q, not %q", id.Namespace, id.PodName, pod.Spec.NodeName, id.NodeName)
	}
	node, err := a.getter.Node(ctx, id.NodeName)
	if err := live("node", id.NodeName, id.NodeUID, node, err); err != nil {
		return nil, err
	}
	return &apiserviceaccount.ServiceAccountInfo{
		Namespace: id.Namespace, Name: sa.Name, UID: string(sa.UID),
		PodName: pod.Name, PodUID: string(pod.UID),
		NodeName: node.Name, NodeUID: string(node.UID),
	}, nil
}

// live says why an object named in the certificate no longer vouches for it: gone, replaced by
// another of the same name (another UID), or being deleted.
func live(kind, name string, uid types.UID, obj metav1.Object, err error) error {
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s %s named in the certificate has been deleted", kind, name)
	case err != nil:
		return fmt.Errorf("looking up %s %s: %w", kind, name, err)
	case obj.GetUID() != uid:
		return fmt.Errorf("%s %s has UID %s, not the UID %s the certificate names: it was deleted and recreated", kind, name, obj.GetUID(), uid)
	case obj.GetDeletionTimestamp() != nil:
		return fmt.Errorf("%s %s named in the certificate is being deleted", kind, name)
	}
	return nil
}
