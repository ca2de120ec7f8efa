package noderestriction

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apiserver/pkg/admission"

	"github.com/idplane/idplane/internal/certificates"
	"github.com/idplane/idplane/internal/nodeidentity"
)

// admitPVCStatus lets a node write only the part of a claim's status that the kubelet reports
// after expanding a volume; everything else about a claim is the controllers' and the user's.
func admitPVCStatus(nodeName string, a admission.Attributes) error {
	if a.GetSubresource() != "status" {
		return forbid(a, "may only update PVC status")
	}
	if a.GetOperation() != admission.Update {
		return forbid(a, "unexpected operation %q", a.GetOperation())
	}
	old, ok := a.GetOldObject().(*corev1.PersistentVolumeClaim)
	if !ok {
		return forbid(a, "unexpected type %T", a.GetOldObject())
	}
	claim, ok := a.GetObject().(*corev1.PersistentVolumeClaim)
	if !ok {
		return forbid(a, "unexpected type %T", a.GetObject())
	}
	if !apiequality.Semantic.DeepEqual(withoutKubeletStatus(old), withoutKubeletStatus(claim)) {
		return forbid(a, "node %q is not allowed to update fields other than status.capacity, status.conditions, status.allocatedResources and status.allocatedResourceStatuses", nodeName)
	}
	return nil
}

// withoutKubeletStatus copies a claim without the fields a kubelet may change, nor the resource
// version (an unconditional update leaves it empty) and managed fields (kept by the server).
func withoutKubeletStatus(c *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
	c = c.DeepCopy()
	c.ResourceVersion = ""
	c.ManagedFields = nil
	c.Status.Capacity = nil
	c.Status.Conditions = nil
	c.Status.AllocatedResources = nil
	c.Status.AllocatedResourceStatuses = nil
	return c
}

// admitToken lets a node request a service account token only bound to a pod that runs on it, so a
// stolen node credential cannot mint tokens for workloads elsewhere. The pod binding also keeps the
// node from binding a token to some other Node.
func (p *Plugin) admitToken(ctx context.Context, nodeName string, a admission.Attributes) error {
	if a.GetOperation() != admission.Create || a.GetSubresource() != "token" {
		return nil
	}
	tr, ok := a.GetObject().(*authenticationv1.TokenRequest)
	if !ok {
		return forbid(a, "unexpected type %T", a.GetObject())
	}
	ref := tr.Spec.BoundObjectRef
	if ref == nil || ref.APIVersion != "v1" || ref.Kind != "Pod" || ref.Name == "" {
		return forbid(a, "node requested token not bound to a pod")
	}
	if ref.UID == "" {
		return forbid(a, "node requested token with a pod binding without a uid")
	}
	pod, err := p.getPod(ctx, a, a.GetNamespace(), ref.Name)
	if err != nil {
		return err
	}
	if ref.UID != pod.UID {
		return forbid(a, "the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID)
	}
	if pod.Spec.NodeName != nodeName {
		return forbid(a, "node requested token bound to a pod scheduled on a different node")
	}
	for _, audience := range tr.Spec.Audiences {
		if !p.podUsesAudience(pod, audience) {
			return forbid(a, "node requested a token for audience %q, which no serviceAccountToken volume source of pod %s/%s names", audience, pod.Namespace, pod.Name)
		}
	}
	return nil
}

// podUsesAudience says whether one of the pod's projected serviceAccountToken sources asks for
// audience (a source without one asks for the API audiences): a node fetches a pod's tokens only to
// write them into its volumes, so a token for any other audience is one the pod never asked for.
func (p *Plugin) podUsesAudience(pod *corev1.Pod, audience string) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			t := src.ServiceAccountToken
			if t != nil && (t.Audience == audience || (t.Audience == "" && p.apiAudiences.Has(audience))) {
				return true
			}
		}
	}
	return false
}

// admitLease keeps a node to its own heartbeat Lease in kube-node-lease.
func admitLease(nodeName string, a admission.Attributes) error {
	if a.GetNamespace() != corev1.NamespaceNodeLease {
		return forbid(a, "can only access leases in the %q system namespace", corev1.NamespaceNodeLease)
	}
	if targetName(a) != nodeName {
		return forbid(a, "can only access node lease with the same name as the requesting node")
	}
	return nil
}

// admitCSINode keeps a node to the CSINode named after it.
func admitCSINode(nodeName string, a admission.Attributes) error {
	if targetName(a) != nodeName {
		return forbid(a, "can only access CSINode with the same name as the requesting node")
	}
	return nil
}

// admitCSR requires a node's kubelet client and serving CSRs to name the node itself, so one node
// cannot ask for another node's identity. Other signers are the signer's to check.
func admitCSR(nodeName string, a admission.Attributes) error {
	if a.GetOperation() != admission.Create {
		return nil
	}
	csr, ok := a.GetObject().(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return forbid(a, "unexpected type %T", a.GetObject())
	}
	if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName && csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
		return nil
	}
	req, err := certificates.ParseRequest(csr.Spec.Request)
	if err != nil {
		return forbid(a, "unable to parse csr: %v", err)
	}
	if want := nodeidentity.UserPrefix + nodeName; req.Subject.CommonName != want {
		return forbid(a, "can only create a node CSR with CN=%s", want)
	}
	return nil
}
