package defaults

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	corev1 "k8s.io/api/core/v1"

	"github.com/idplane/idplane/internal/certificates"
)

// CertificateSigningRequestV1beta1 fills what v1beta1 left optional and v1 requires: the signer,
// guessed from the request as the design says (a kubelet client or serving request gets the
// kubelet signer it fits, anything else kubernetes.io/legacy-unknown), and condition status True.
func CertificateSigningRequestV1beta1(csr *certificatesv1beta1.CertificateSigningRequest) {
	if csr.Spec.SignerName == nil || *csr.Spec.SignerName == "" {
		signer := guessSigner(csr)
		csr.Spec.SignerName = &signer
	}
	for i := range csr.Status.Conditions {
		if csr.Status.Conditions[i].Status == "" {
			csr.Status.Conditions[i].Status = corev1.ConditionTrue
		}
	}
}

// CertificateSigningRequestListV1beta1 defaults every item.
func CertificateSigningRequestListV1beta1(l *certificatesv1beta1.CertificateSigningRequestList) {
	for i := range l.Items {
		CertificateSigningRequestV1beta1(&l.Items[i])
	}
}

func guessSigner(csr *certificatesv1beta1.CertificateSigningRequest) string {
	parsed, err := certificates.ParseRequest(csr.Spec.Request)
	if err != nil {
		return certificatesv1beta1.LegacyUnknownSignerName
	}
	req := &certificates.Request{CSR: parsed}
	for _, u := range csr.Spec.Usages {
		req.Usages = append(req.Usages, certificatesv1.KeyUsage(u))
	}
	for _, signer := range []string{certificatesv1.KubeAPIServerClientKubeletSignerName, certificatesv1.KubeletServingSignerName} {
		if policy, ok := certificates.PolicyFor(signer); ok && policy.Check(req) == nil {
			return signer
		}
	}
	return certificatesv1beta1.LegacyUnknownSignerName
}

// podCertificateMaxExpirationSeconds is spec.maxExpirationSeconds when the client leaves it out:
// a day, the longest kubernetes.io signers issue.
const podCertificateMaxExpirationSeconds int32 = 86400

// PodCertificateRequest sets spec.maxExpirationSeconds when the client left it out.
func PodCertificateRequest(r *certificatesv1.PodCertificateRequest) {
	orDefaultPtr(&r.Spec.MaxExpirationSeconds, podCertificateMaxExpirationSeconds)
}

// PodCertificateRequestList defaults every item.
func PodCertificateRequestList(l *certificatesv1.PodCertificateRequestList) {
	for i := range l.Items {
		PodCertificateRequest(&l.Items[i])
	}
}

// PodCertificateRequestV1beta1 defaults as v1 does.
func PodCertificateRequestV1beta1(r *certificatesv1beta1.PodCertificateRequest) {
	orDefaultPtr(&r.Spec.MaxExpirationSeconds, podCertificateMaxExpirationSeconds)
}

// PodCertificateRequestListV1beta1 defaults every item.
func PodCertificateRequestListV1beta1(l *certificatesv1beta1.PodCertificateRequestList) {
	for i := range l.Items {
		PodCertificateRequestV1beta1(&l.Items[i])
	}
}
