package printers

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
)

// podCertificateRequests prints requests as NAME SIGNERNAME POD SERVICEACCOUNT CONDITION AGE,
// with the node under -o wide: who asked, for whom, and how the signer answered.
var podCertificateRequests rest.TableConvertor = newTable(
	nameColumn[*certificatesv1.PodCertificateRequest](),
	stringColumn("SignerName", doc(certificatesv1.PodCertificateRequestSpec{}, "signerName"), func(r *certificatesv1.PodCertificateRequest) any { return orNone(r.Spec.SignerName) }),
	stringColumn("Pod", doc(certificatesv1.PodCertificateRequestSpec{}, "podName"), func(r *certificatesv1.PodCertificateRequest) any { return orNone(r.Spec.PodName) }),
	stringColumn("ServiceAccount", doc(certificatesv1.PodCertificateRequestSpec{}, "serviceAccountName"), func(r *certificatesv1.PodCertificateRequest) any {
		return orNone(r.Spec.ServiceAccountName)
	}),
	stringColumn("Condition", doc(certificatesv1.PodCertificateRequestStatus{}, "conditions"), func(r *certificatesv1.PodCertificateRequest) any { return pcrCondition(r) }),
	ageColumn[*certificatesv1.PodCertificateRequest](),
	stringColumn("Node", doc(certificatesv1.PodCertificateRequestSpec{}, "nodeName"), func(r *certificatesv1.PodCertificateRequest) any { return orNone(string(r.Spec.NodeName)) }).wide(),
)

// pcrCondition is the signer's answer (Issued, Denied or Failed, with the reason when there is
// one), or Pending.
func pcrCondition(r *certificatesv1.PodCertificateRequest) string {
	for _, c := range r.Status.Conditions {
		switch c.Type {
		case certificatesv1.PodCertificateRequestConditionTypeIssued, certificatesv1.PodCertificateRequestConditionTypeDenied, certificatesv1.PodCertificateRequestConditionTypeFailed:
			if c.Status != metav1.ConditionTrue {
				continue
			}
			if c.Reason != "" && c.Type != certificatesv1.PodCertificateRequestConditionTypeIssued {
				return c.Type + "(" + c.Reason + ")"
			}
			return c.Type
		}
	}
	return "Pending"
}
