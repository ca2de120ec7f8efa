// Package certificatesv1beta1 converts CertificateSigningRequests and PodCertificateRequests between certificates.k8s.io
// v1beta1, which idplane serves for older clients, and v1, which it stores and validates.
package certificatesv1beta1

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/idplane/idplane/internal/conversion"
)

// AddToScheme registers the conversions in both directions, for objects and lists.
func AddToScheme(s *runtime.Scheme) error {
	if err := addPodCertificateRequests(s); err != nil {
		return err
	}
	return conversion.Pair[certificatesv1beta1.CertificateSigningRequest, certificatesv1.CertificateSigningRequest, certificatesv1beta1.CertificateSigningRequestList, certificatesv1.CertificateSigningRequestList]{
		ToNew: ToV1, FromNew: FromV1,
		OldItems: func(l *certificatesv1beta1.CertificateSigningRequestList) (*metav1.ListMeta, *[]certificatesv1beta1.CertificateSigningRequest) {
			return &l.ListMeta, &l.Items
		},
		NewItems: func(l *certificatesv1.CertificateSigningRequestList) (*metav1.ListMeta, *[]certificatesv1.CertificateSigningRequest) {
			return &l.ListMeta, &l.Items
		},
	}.AddToScheme(s)
}

// ToV1 converts a v1beta1 CSR to v1; an unset signer name stays empty, for v1 validation to refuse.
func ToV1(in *certificatesv1beta1.CertificateSigningRequest, out *certificatesv1.CertificateSigningRequest) {
	out.ObjectMeta = in.ObjectMeta
	out.Spec = certificatesv1.CertificateSigningRequestSpec{
		Request:           in.Spec.Request,
		ExpirationSeconds: in.Spec.ExpirationSeconds,
		Username:          in.Spec.Username,
		UID:               in.Spec.UID,
		Groups:            in.Spec.Groups,
	}
	if in.Spec.SignerName != nil {
		out.Spec.SignerName = *in.Spec.SignerName
	}
	for _, u := range in.Spec.Usages {
		out.Spec.Usages = append(out.Spec.Usages, certificatesv1.KeyUsage(u))
	}
	if in.Spec.Extra != nil {
		out.Spec.Extra = make(map[string]certificatesv1.ExtraValue, len(in.Spec.Extra))
		for k, v := range in.Spec.Extra {
			out.Spec.Extra[k] = certificatesv1.ExtraValue(v)
		}
	}
	out.Status = certificatesv1.CertificateSigningRequestStatus{Certificate: in.Status.Certificate}
	for _, c := range in.Status.Conditions {
		out.Status.Conditions = append(out.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.RequestConditionType(c.Type), Status: c.Status, Reason: c.Reason, Message: c.Message,
			LastUpdateTime: c.LastUpdateTime, LastTransitionTime: c.LastTransitionTime,
		})
	}
}

// FromV1 converts a v1 CSR to v1beta1.
func FromV1(in *certificatesv1.CertificateSigningRequest, out *certificatesv1beta1.CertificateSigningRequest) {
	out.ObjectMeta = in.ObjectMeta
	out.Spec = certificatesv1beta1.CertificateSigningRequestSpec{
		Request:           in.Spec.Request,
		ExpirationSeconds: in.Spec.ExpirationSeconds,
		Username:          in.Spec.Username,
		UID:               in.Spec.UID,
		Groups:            in.Spec.Groups,
	}
	if in.Spec.SignerName != "" {
		name := in.Spec.SignerName
		out.Spec.SignerName = &name
	}
	for _, u := range in.Spec.Usages {
		out.Spec.Usages = append(out.Spec.Usages, certificatesv1beta1.KeyUsage(u))
	}
	if in.Spec.Extra != nil {
		out.Spec.Extra = make(map[string]certificatesv1beta1.ExtraValue, len(in.Spec.Extra))
		for k, v := range in.Spec.Extra {
			out.Spec.Extra[k] = certificatesv1beta1.ExtraValue(v)
		}
	}
	out.Status = certificatesv1beta1.CertificateSigningRequestStatus{Certificate: in.Status.Certificate}
	for _, c := range in.Status.Conditions {
		out.Status.Conditions = append(out.Status.Conditions, certificatesv1beta1.CertificateSigningRequestCondition{
			Type: certificatesv1beta1.RequestConditionType(c.Type), Status: c.Status, Reason: c.Reason, Message: c.Message,
			LastUpdateTime: c.LastUpdateTime, LastTransitionTime: c.LastTransitionTime,
		})
	}
}
