package certificatesv1beta1

import (
	"reflect"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func full() *certificatesv1beta1.CertificateSigningRequest {
	signer := "example.com/s"
	at := metav1.NewTime(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
	return &certificatesv1beta1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "csr", UID: "u", ResourceVersion: "7", Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"}},
		Spec: certificatesv1beta1.CertificateSigningRequestSpec{
			Request: []byte("request"), SignerName: &signer, ExpirationSeconds: func() *int32 { v := int32(3600); return &v }(),
			Usages:   []certificatesv1beta1.KeyUsage{certificatesv1beta1.UsageClientAuth, certificatesv1beta1.UsageDigitalSignature},
			Username: "alice", UID: "uid", Groups: []string{"devs"}, Extra: map[string]certificatesv1beta1.ExtraValue{"k": {"v1", "v2"}},
		},
		Status: certificatesv1beta1.CertificateSigningRequestStatus{
			Conditions: []certificatesv1beta1.CertificateSigningRequestCondition{{
				Type: certificatesv1beta1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "r", Message: "m", LastUpdateTime: at, LastTransitionTime: at,
			}},
			Certificate: []byte("cert"),
		},
	}
}

// TestRoundTrip: every field of a filled v1beta1 CSR survives v1beta1 → v1 → v1beta1, and every
// field of the v1 form is set (a field added to either version fails here until converted).
func TestRoundTrip(t *testing.T) {
	in := full()
	var v1 certificatesv1.CertificateSigningRequest
	ToV1(in, &v1)
	var back certificatesv1beta1.CertificateSigningRequest
	FromV1(&v1, &back)
	if !reflect.DeepEqual(in, &back) {
		t.Errorf("round trip changed the object:\n in: %+v\nout: %+v", in, &back)
	}
	for _, v := range []reflect.Value{reflect.ValueOf(v1.Spec), reflect.ValueOf(v1.Status), reflect.ValueOf(in.Spec), reflect.ValueOf(in.Status)} {
		for i := range v.NumField() {
			if v.Field(i).IsZero() {
				t.Errorf("%s.%s is not filled by the test or not converted", v.Type().Name(), v.Type().Field(i).Name)
			}
		}
	}
}

func TestThroughTheScheme(t *testing.T) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{certificatesv1.AddToScheme, certificatesv1beta1.AddToScheme, AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	list := &certificatesv1beta1.CertificateSigningRequestList{Items: []certificatesv1beta1.CertificateSigningRequest{*full()}}
	var v1 certificatesv1.CertificateSigningRequestList
	if err := s.Convert(list, &v1, nil); err != nil {
		t.Fatal(err)
	}
	if len(v1.Items) != 1 || v1.Items[0].Spec.SignerName != "example.com/s" {
		t.Errorf("converted list: %+v", v1.Items)
	}
}
