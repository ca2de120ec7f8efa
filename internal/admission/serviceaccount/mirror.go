package serviceaccount

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/idplane/idplane/internal/podwalk"
)

// Refusals of mirror pods, most important first: the first three are upstream's messages, the
// projections after them are refused by idplane only (a static pod has no identity for a signer to
// certify, and no business with the cluster's trust bundles), and a volume source this server
// cannot judge might reference anything.
var (
	errMirrorServiceAccount     = errors.New("a mirror pod may not reference service accounts")
	errMirrorSecret             = errors.New("a mirror pod may not reference secrets")
	errMirrorTokenProjection    = errors.New("a mirror pod may not use ServiceAccountToken volume projections")
	errMirrorPodCertificate     = errors.New("a mirror pod may not use PodCertificate volume projections")
	errMirrorClusterTrustBundle = errors.New("a mirror pod may not use ClusterTrustBundle volume projections")
	errMirrorUnknown            = errors.New("a mirror pod may not use a volume source this server cannot judge")
	mirrorRefusals              = []error{errMirrorServiceAccount, errMirrorSecret, errMirrorTokenProjection, errMirrorPodCertificate, errMirrorClusterTrustBundle, errMirrorUnknown}
)

// isMirror reports whether pod is a mirror pod: the API's copy of a node's static pod.
func isMirror(pod *corev1.Pod) bool {
	_, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]
	return mirror
}

// forbidMirrorReferences refuses a mirror pod that names a service account, a secret or a
// projection that hands the node credentials or trust anchors. Anyone who may create pods may
// annotate one as a mirror pod, and the plugin neither defaults nor checks a mirror pod's account,
// since it must stay as its node wrote it; so a mirror pod may not have one at all. The node's own
// mirror pods name nothing (NodeRestriction refuses any reference), so they are never refused here.
func forbidMirrorReferences(a admission.Attributes, pod *corev1.Pod) error {
	found := map[error]bool{}
	for r := range podwalk.References(pod) {
		if err := mirrorRefusal(r); err != nil {
			found[err] = true
		}
	}
	for _, err := range mirrorRefusals {
		if found[err] {
			return admission.NewForbidden(a, err)
		}
	}
	return nil
}

// mirrorRefusal is what refuses a mirror pod naming r, or nil when a mirror pod may name it
// (configmaps, claims, CSI drivers, …), as upstream allows.
func mirrorRefusal(r podwalk.Reference) error {
	switch r.Kind {
	case podwalk.ServiceAccount:
		// The walk reports a token projection as a reference to the pod's account.
		if r.Path.In("spec.volumes") {
			return errMirrorTokenProjection
		}
		return errMirrorServiceAccount
	case podwalk.Secret:
		return errMirrorSecret
	case podwalk.PodCertificate:
		return errMirrorPodCertificate
	case podwalk.ClusterTrustBundle:
		return errMirrorClusterTrustBundle
	case podwalk.Unknown:
		return errMirrorUnknown
	}
	return nil
}
