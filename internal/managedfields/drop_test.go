package managedfields

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

func TestDrop(t *testing.T) {
	fields := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ManagedFields: fields, Labels: map[string]string{"a": "b"}}}
	u := &unstructured.Unstructured{}
	u.SetName("u")
	u.SetManagedFields(fields)
	tombstone := cache.DeletedFinalStateUnknown{Key: "default/p", Obj: pod}

	for _, tc := range []struct {
		name string
		obj  any
	}{
		{"typed", pod},
		{"unstructured", u},
		{"tombstone", tombstone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Drop(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := got.(cache.DeletedFinalStateUnknown); ok {
				return
			}
			m := got.(metav1.Object)
			if m.GetManagedFields() != nil {
				t.Errorf("managed fields kept: %v", m.GetManagedFields())
			}
			if m.GetName() == "" {
				t.Error("name lost")
			}
		})
	}
	if pod.Labels["a"] != "b" {
		t.Error("labels changed")
	}
}
