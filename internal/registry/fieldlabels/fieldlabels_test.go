package fieldlabels

import (
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestAttrs(t *testing.T) {
	core := corev1.SchemeGroupVersion
	pcr := &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns"},
		Spec:       certificatesv1.PodCertificateRequestSpec{NodeName: "n1", PodName: "p1", SignerName: "example.com/s"},
	}
	cases := []struct {
		name  string
		gvk   schema.GroupVersionKind
		obj   runtime.Object
		field string
		want  string
	}{
		{"pod node", core.WithKind("Pod"), &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n1"}}, "spec.nodeName", "n1"},
		{"pod phase", core.WithKind("Pod"), &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, "status.phase", "Running"},
		{"pod name", core.WithKind("Pod"), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}, "metadata.name", "p"},
		{"pod namespace", core.WithKind("Pod"), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}, "metadata.namespace", "ns"},
		{"pod host network", core.WithKind("Pod"), &corev1.Pod{Spec: corev1.PodSpec{HostNetwork: true}}, "spec.hostNetwork", "true"},
		{"secret type", core.WithKind("Secret"), &corev1.Secret{Type: corev1.SecretTypeTLS}, "type", "kubernetes.io/tls"},
		{"namespace phase", core.WithKind("Namespace"), &corev1.Namespace{Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}, "status.phase", "Terminating"},
		{"event source falls back to reporting controller", core.WithKind("Event"), &corev1.Event{ReportingController: "kubelet"}, "source", "kubelet"},
		{"pcr node", certificatesv1.SchemeGroupVersion.WithKind("PodCertificateRequest"), pcr, "spec.nodeName", "n1"},
		{"pcr pod", certificatesv1.SchemeGroupVersion.WithKind("PodCertificateRequest"), pcr, "spec.podName", "p1"},
		{"pcr signer", certificatesv1.SchemeGroupVersion.WithKind("PodCertificateRequest"), pcr, "spec.signerName", "example.com/s"},
		{"pcr namespace", certificatesv1.SchemeGroupVersion.WithKind("PodCertificateRequest"), pcr, "metadata.namespace", "ns"},
		{"v1beta1 pcr node", certificatesv1beta1.SchemeGroupVersion.WithKind("PodCertificateRequest"), pcr, "spec.nodeName", "n1"},
		{"lease name", coordinationv1.SchemeGroupVersion.WithKind("Lease"), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l"}}, "metadata.name", "l"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, fields, err := AttrsFunc(tc.gvk)(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			if got, ok := fields[tc.field]; !ok || got != tc.want {
				t.Errorf("%s = %q (present %v), want %q", tc.field, got, ok, tc.want)
			}
		})
	}
}

func TestClusterScopedKindsHaveNoNamespaceField(t *testing.T) {
	_, fields, err := AttrsFunc(corev1.SchemeGroupVersion.WithKind("Node"))(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fields["metadata.namespace"]; ok {
		t.Error("node fields include metadata.namespace")
	}
}

func TestRegisterAcceptsOnlyKnownLabels(t *testing.T) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := Register(s); err != nil {
		t.Fatal(err)
	}
	pod := corev1.SchemeGroupVersion.WithKind("Pod")
	cases := []struct {
		label string
		ok    bool
	}{
		{"spec.nodeName", true},
		{"status.phase", true},
		{"metadata.namespace", true},
		{"spec.containers", false},
		{"type", false},
	}
	for _, tc := range cases {
		_, _, err := s.ConvertFieldLabel(pod, tc.label, "x")
		if (err == nil) != tc.ok {
			t.Errorf("pod field label %q: err %v, want accepted=%v", tc.label, err, tc.ok)
		}
	}
}

// TestEmptyFieldsMatchAsEmpty pins that leaving empty values out of the stored set changes no
// selector's answer: every field a pod's selectors may name, with "=" and "!=", against the
// empty value and a set one, answers as it would against the full set.
func TestEmptyFieldsMatchAsEmpty(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec:       corev1.PodSpec{NodeName: "n1", RestartPolicy: corev1.RestartPolicyAlways, SchedulerName: "default-scheduler", ServiceAccountName: "default"},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
	_, sparse, err := AttrsFunc(corev1.SchemeGroupVersion.WithKind("Pod"))(pod)
	if err != nil {
		t.Fatal(err)
	}
	if len(sparse) > 8 {
		t.Errorf("a pod without status IPs keeps %d fields, want at most 8 (one map group): %v", len(sparse), sparse)
	}
	full := fields.Set{
		"metadata.name": "p", "metadata.namespace": "ns", "spec.nodeName": "n1", "spec.restartPolicy": "Always",
		"spec.schedulerName": "default-scheduler", "spec.serviceAccountName": "default", "spec.hostNetwork": "false",
		"status.phase": "Pending", "status.podIP": "", "status.nominatedNodeName": "",
	}
	for name, value := range full {
		for _, v := range []string{"", value, "other"} {
			for _, op := range []string{"=", "!="} {
				sel, err := fields.ParseSelector(name + op + v)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := sel.Matches(sparse), sel.Matches(full); got != want {
					t.Errorf("%s matches the stored set: %v, the full set: %v", sel, got, want)
				}
			}
		}
	}
	for _, name := range []string{"spec.hostNetwork", "status.phase", "spec.nodeName"} {
		if sparse[name] != full[name] {
			t.Errorf("%s = %q, want %q", name, sparse[name], full[name])
		}
	}
}
