package apiserver

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
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

// TestSlimPodStatusWriteBack: the node lifecycle controller writes a pod's status back from its
// informer copy, which informerTransform has slimmed. The status subresource takes the spec from
// the stored pod, so the write loses nothing: spec, labels and annotations stay as stored.
func TestSlimPodStatusWriteBack(t *testing.T) {
	ts := startTestServer(t, t.TempDir(), nil)
	ctx := context.Background()
	ensureServiceAccount(t, ts.client, "default", "default")
	pod := newPod("web", onNode("node1"), func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "web"}
		p.Annotations = map[string]string{"note": "kept"}
		p.Spec.Containers[0].Command = []string{"serve"}
		p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "prod"}}
		p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
	})
	stored, err := ts.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	obj, err := informerTransform(stored.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	cached := obj.(*corev1.Pod)
	if cached.Spec.Containers[0].Image != "" {
		t.Fatal("the informer's copy was not slimmed; this test would prove nothing")
	}
	cached.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "NodeNotReady"}}
	if _, err := ts.client.CoreV1().Pods("default").UpdateStatus(ctx, cached, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	got, err := ts.client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(got.Spec, stored.Spec) {
		t.Errorf("spec after the status write:\n%+v\nwant\n%+v", got.Spec, stored.Spec)
	}
	if got.Labels["app"] != "web" || got.Annotations["note"] != "kept" {
		t.Errorf("metadata after the status write: %+v", got.ObjectMeta)
	}
	if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Reason != "NodeNotReady" {
		t.Errorf("status not written: %+v", got.Status)
	}
}
