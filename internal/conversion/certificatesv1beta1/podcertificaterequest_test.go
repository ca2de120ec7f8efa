package certificatesv1beta1

//lint:file-ignore SA1019 v1beta1's deprecated pkixPublicKey and proofOfPossession are named to refuse them: v1 cannot hold them.

import (
	"reflect"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/idplane/idplane/internal/validation"
)

func fullPCR() *certificatesv1beta1.PodCertificateRequest {
	at := metav1.NewTime(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	seconds := int32(3600)
	return &certificatesv1beta1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "pcr", Namespace: "ns", UID: "u", Annotations: map[string]string{"c": "d"}},
		Spec: certificatesv1beta1.PodCertificateRequestSpec{
			SignerName: "example.com/s", PodName: "p", PodUID: "pu", ServiceAccountName: "sa", ServiceAccountUID: "sau",
			NodeName: "n", NodeUID: "nu", MaxExpirationSeconds: &seconds, StubPKCS10Request: []byte("stub"),
			UnverifiedUserAnnotations: map[string]string{"example.com/k": "v"},
		},
		Status: certificatesv1beta1.PodCertificateRequestStatus{
			Conditions:       []metav1.Condition{{Type: "Issued", Status: metav1.ConditionTrue, Reason: "r", Message: "m", LastTransitionTime: at}},
			CertificateChain: "chain", NotBefore: &at, BeginRefreshAt: &at, NotAfter: &at,
		},
	}
}

// TestPodCertificateRequestRoundTrip: every field v1 holds survives v1beta1 → v1 → v1beta1, and
// every field of the v1 form is filled (a field added to v1 fails here until converted).
func TestPodCertificateRequestRoundTrip(t *testing.T) {
	in := fullPCR()
	var v1 certificatesv1.PodCertificateRequest
	PodCertificateRequestToV1(in, &v1)
	var back certificatesv1beta1.PodCertificateRequest
	PodCertificateRequestFromV1(&v1, &back)
	if !reflect.DeepEqual(in, &back) {
		t.Errorf("round trip changed the object:\n in: %+v\nout: %+v", in, &back)
	}
	for _, v := range []reflect.Value{reflect.ValueOf(v1.Spec), reflect.ValueOf(v1.Status)} {
		for i := range v.NumField() {
			if v.Field(i).IsZero() {
				t.Errorf("%s.%s is not filled by the test or not converted", v.Type().Name(), v.Type().Field(i).Name)
			}
		}
	}
	if _, marked := v1.Annotations[validation.PodCertificateV1beta1KeyFieldsAnnotation]; marked {
		t.Error("a request without the deprecated fields was marked")
	}
}

// TestPodCertificateRequestDeprecatedKeyFields: a request with pkixPublicKey or proofOfPossession
// converts to one v1 validation refuses at spec.stubPKCS10Request, and the input is not changed.
func TestPodCertificateRequestDeprecatedKeyFields(t *testing.T) {
	for name, set := range map[string]func(*certificatesv1beta1.PodCertificateRequest){
		"pkixPublicKey":     func(r *certificatesv1beta1.PodCertificateRequest) { r.Spec.PKIXPublicKey = []byte("k") },
		"proofOfPossession": func(r *certificatesv1beta1.PodCertificateRequest) { r.Spec.ProofOfPossession = []byte("p") },
	} {
		t.Run(name, func(t *testing.T) {
			in := fullPCR()
			set(in)
			var v1 certificatesv1.PodCertificateRequest
			PodCertificateRequestToV1(in, &v1)
			if _, ok := in.Annotations[validation.PodCertificateV1beta1KeyFieldsAnnotation]; ok {
				t.Error("the conversion changed its input's annotations")
			}
			found := false
			for _, e := range validation.ValidatePodCertificateRequest(&v1) {
				found = found || e.Field == "spec.stubPKCS10Request" && e.Type == "FieldValueRequired"
			}
			if !found {
				t.Errorf("no Required error at spec.stubPKCS10Request: %v", validation.ValidatePodCertificateRequest(&v1))
			}
		})
	}
}
