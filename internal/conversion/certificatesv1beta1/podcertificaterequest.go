package certificatesv1beta1

//lint:file-ignore SA1019 v1beta1's deprecated pkixPublicKey and proofOfPossession are named to refuse them: v1 cannot hold them.

import (
	"maps"

	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/idplane/idplane/internal/conversion"
	"github.com/idplane/idplane/internal/validation"
)

func addPodCertificateRequests(s *runtime.Scheme) error {
	return conversion.Pair[certificatesv1beta1.PodCertificateRequest, certificatesv1.PodCertificateRequest, certificatesv1beta1.PodCertificateRequestList, certificatesv1.PodCertificateRequestList]{
		ToNew: PodCertificateRequestToV1, FromNew: PodCertificateRequestFromV1,
		OldItems: func(l *certificatesv1beta1.PodCertificateRequestList) (*metav1.ListMeta, *[]certificatesv1beta1.PodCertificateRequest) {
			return &l.ListMeta, &l.Items
		},
		NewItems: func(l *certificatesv1.PodCertificateRequestList) (*metav1.ListMeta, *[]certificatesv1.PodCertificateRequest) {
			return &l.ListMeta, &l.Items
		},
	}.AddToScheme(s)
}

// PodCertificateRequestToV1 converts a v1beta1 request to v1. v1 cannot hold v1beta1's deprecated
// pkixPublicKey and proofOfPossession: a request that sets them is marked with an annotation that
// validation refuses with a 422 naming spec.stubPKCS10Request, so they are never silently lost.
func PodCertificateRequestToV1(in *certificatesv1beta1.PodCertificateRequest, out *certificatesv1.PodCertificateRequest) {
	out.ObjectMeta = in.ObjectMeta
	if len(in.Spec.PKIXPublicKey) > 0 || len(in.Spec.ProofOfPossession) > 0 {
		out.Annotations = maps.Clone(in.Annotations)
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[validation.PodCertificateV1beta1KeyFieldsAnnotation] = ""
	}
	out.Spec = certificatesv1.PodCertificateRequestSpec{
		SignerName:                in.Spec.SignerName,
		PodName:                   in.Spec.PodName,
		PodUID:                    in.Spec.PodUID,
		ServiceAccountName:        in.Spec.ServiceAccountName,
		ServiceAccountUID:         in.Spec.ServiceAccountUID,
		NodeName:                  in.Spec.NodeName,
		NodeUID:                   in.Spec.NodeUID,
		MaxExpirationSeconds:      in.Spec.MaxExpirationSeconds,
		StubPKCS10Request:         in.Spec.StubPKCS10Request,
		UnverifiedUserAnnotations: in.Spec.UnverifiedUserAnnotations,
	}
	out.Status = certificatesv1.PodCertificateRequestStatus(in.Status)
}

// PodCertificateRequestFromV1 converts a stored v1 request to v1beta1.
func PodCertificateRequestFromV1(in *certificatesv1.PodCertificateRequest, out *certificatesv1beta1.PodCertificateRequest) {
	out.ObjectMeta = in.ObjectMeta
	out.Spec = certificatesv1beta1.PodCertificateRequestSpec{
		SignerName:                in.Spec.SignerName,
		PodName:                   in.Spec.PodName,
		PodUID:                    in.Spec.PodUID,
		ServiceAccountName:        in.Spec.ServiceAccountName,
		ServiceAccountUID:         in.Spec.ServiceAccountUID,
		NodeName:                  in.Spec.NodeName,
		NodeUID:                   in.Spec.NodeUID,
		MaxExpirationSeconds:      in.Spec.MaxExpirationSeconds,
		StubPKCS10Request:         in.Spec.StubPKCS10Request,
		UnverifiedUserAnnotations: in.Spec.UnverifiedUserAnnotations,
	}
	out.Status = certificatesv1beta1.PodCertificateRequestStatus(in.Status)
}
