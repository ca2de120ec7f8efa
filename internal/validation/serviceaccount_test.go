package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func validServiceAccount() *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		ObjectMeta:       metav1.ObjectMeta{Name: "builder", Namespace: "ci"},
		Secrets:          []corev1.ObjectReference{{Name: "builder-token"}},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}},
	}
}

func TestValidateServiceAccount(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*corev1.ServiceAccount)
		want   []want
	}{
		{name: "valid", mutate: func(*corev1.ServiceAccount) {}},
		{name: "subdomain name", mutate: func(sa *corev1.ServiceAccount) { sa.Name = "ci.builder" }},
		{name: "invalid name", mutate: func(sa *corev1.ServiceAccount) { sa.Name = "Builder" }, want: []want{invalid("metadata.name")}},
		{name: "missing namespace", mutate: func(sa *corev1.ServiceAccount) { sa.Namespace = "" }, want: []want{required("metadata.namespace")}},
		{name: "secret without name", mutate: func(sa *corev1.ServiceAccount) { sa.Secrets[0].Name = "" }, want: []want{required("secrets[0].name")}},
		{
			name:   "invalid pull secret name",
			mutate: func(sa *corev1.ServiceAccount) { sa.ImagePullSecrets[0].Name = "Registry" },
			want:   []want{invalid("imagePullSecrets[0].name")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sa := validServiceAccount()
			tc.mutate(sa)
			expectErrors(t, ValidateServiceAccount(sa), tc.want...)
		})
	}
}

func TestValidateServiceAccountUpdate(t *testing.T) {
	oldSA := validServiceAccount()
	oldSA.ResourceVersion = "1"
	oldSA.UID = "u1"

	newSA := oldSA.DeepCopy()
	newSA.AutomountServiceAccountToken = ptrTo(false)
	expectErrors(t, ValidateServiceAccountUpdate(newSA, oldSA))

	newSA = oldSA.DeepCopy()
	newSA.Namespace = "other"
	expectErrors(t, ValidateServiceAccountUpdate(newSA, oldSA), invalid("metadata.namespace"))
}
