package apiserver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestInformerTransform: every object loses its managed fields; a pod also loses what no reader
// of the shared informers reads, and keeps what they do.
func TestInformerTransform(t *testing.T) {
	fields := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	pod := newPod("p", onNode("n1"))
	pod.ManagedFields = fields
	got, err := informerTransform(pod)
	if err != nil {
		t.Fatal(err)
	}
	p := got.(*corev1.Pod)
	if p.ManagedFields != nil || p.Spec.Containers[0].Image != "" {
		t.Errorf("pod kept managed fields or its image: %+v", p)
	}
	if p.Spec.NodeName != "n1" || p.Spec.Containers[0].Name != "c" {
		t.Errorf("pod lost its node or container name: %+v", p.Spec)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", ManagedFields: fields}, Data: map[string][]byte{"k": []byte("v")}}
	got, err = informerTransform(secret)
	if err != nil {
		t.Fatal(err)
	}
	if s := got.(*corev1.Secret); s.ManagedFields != nil || string(s.Data["k"]) != "v" {
		t.Errorf("secret = %+v, want its data without managed fields", s)
	}
}
