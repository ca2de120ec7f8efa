package noderestriction

import (
	"context"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
)

// admitPodCertificateRequest lets a node create a PodCertificateRequest only for a pod bound to
// itself, naming the live pod, its service account and the node by name and UID, for a signer
// one of the pod's podCertificate sources asks for: a stolen node credential cannot get a
// certificate for a workload elsewhere, for a pod that was replaced, or from a signer the pod
// never asked. A node never writes a request after creating it, nor its /status (the signer's).
func (p *Plugin) admitPodCertificateRequest(ctx context.Context, nodeName string, a admission.Attributes) error {
	if a.GetSubresource() != "" {
		return forbid(a, "node %q may not write podcertificaterequests/%s", nodeName, a.GetSubresource())
	}
	if a.GetOperation() != admission.Create {
		return forbid(a, "node %q may only create podcertificaterequests", nodeName)
	}
	r, ok := a.GetObject().(*certificatesv1.PodCertificateRequest)
	if !ok {
		return forbid(a, "unexpected type %T", a.GetObject())
	}
	if string(r.Spec.NodeName) != nodeName {
		return forbid(a, "PodCertificateRequest spec.nodeName=%q, which is not the requesting node %q", r.Spec.NodeName, nodeName)
	}
	node, err := p.getNode(ctx, a, nodeName)
	if err != nil {
		return err
	}
	if node.UID != r.Spec.NodeUID {
		return forbid(a, "PodCertificateRequest spec.nodeUID=%q, which is not the UID of node %q", r.Spec.NodeUID, nodeName)
	}
	pod, err := p.getPod(ctx, a, a.GetNamespace(), r.Spec.PodName)
	if err != nil {
		return err
	}
	switch {
	case pod.UID != r.Spec.PodUID:
		return forbid(a, "PodCertificateRequest spec.podUID=%q, which is not the UID of pod %s/%s. The pod might have been deleted and then recreated", r.Spec.PodUID, pod.Namespace, pod.Name)
	case pod.Spec.NodeName != nodeName:
		return forbid(a, "pod %s/%s is not bound to node %q", pod.Namespace, pod.Name, nodeName)
	case pod.Spec.ServiceAccountName != r.Spec.ServiceAccountName:
		return forbid(a, "PodCertificateRequest spec.serviceAccountName=%q, but pod %s/%s runs as %q", r.Spec.ServiceAccountName, pod.Namespace, pod.Name, pod.Spec.ServiceAccountName)
	case !podAsksSigner(pod, r.Spec.SignerName):
		return forbid(a, "signer %q, which no podCertificate volume source of pod %s/%s names", r.Spec.SignerName, pod.Namespace, pod.Name)
	}
	sa, err := p.client.CoreV1().ServiceAccounts(pod.Namespace).Get(ctx, r.Spec.ServiceAccountName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("looking up service account %s/%s: %w", pod.Namespace, r.Spec.ServiceAccountName, err))
	}
	if sa.UID != r.Spec.ServiceAccountUID {
		return forbid(a, "PodCertificateRequest spec.serviceAccountUID=%q, which is not the UID of service account %s/%s", r.Spec.ServiceAccountUID, sa.Namespace, sa.Name)
	}
	return nil
}

// podAsksSigner says whether one of the pod's projected podCertificate sources names signer.
func podAsksSigner(pod *corev1.Pod, signer string) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.PodCertificate != nil && src.PodCertificate.SignerName == signer {
				return true
			}
		}
	}
	return false
}
