package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func validNamespace() *corev1.Namespace {
	return &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{corev1.LabelMetadataName: "team-a"}},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	}
}

func TestValidateNamespace(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*corev1.Namespace)
		want   []want
	}{
		{name: "valid", mutate: func(*corev1.Namespace) {}},
		{name: "valid qualified finalizer", mutate: func(ns *corev1.Namespace) { ns.Spec.Finalizers = append(ns.Spec.Finalizers, "example.com/cleanup") }},
		{name: "missing name", mutate: func(ns *corev1.Namespace) { ns.Name = "" }, want: []want{required("metadata.name")}},
		{name: "subdomain name", mutate: func(ns *corev1.Namespace) { ns.Name = "team.a" }, want: []want{invalid("metadata.name")}},
		{name: "namespaced", mutate: func(ns *corev1.Namespace) { ns.Namespace = "default" }, want: []want{forbidden("metadata.namespace")}},
		{
			name:   "generateName",
			mutate: func(ns *corev1.Namespace) { ns.GenerateName = "Team-" },
			want:   []want{invalid("metadata.generateName")},
		},
		{
			name:   "unqualified spec finalizer",
			mutate: func(ns *corev1.Namespace) { ns.Spec.Finalizers = []corev1.FinalizerName{"cleanup"} },
			want:   []want{invalid("spec.finalizers[0]")},
		},
		{
			name:   "malformed spec finalizer",
			mutate: func(ns *corev1.Namespace) { ns.Spec.Finalizers = []corev1.FinalizerName{"example.com/a/b"} },
			want:   []want{invalid("spec.finalizers[0]")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := validNamespace()
			tc.mutate(ns)
			expectErrors(t, ValidateNamespace(ns), tc.want...)
		})
	}
}

func TestValidateNamespaceUpdates(t *testing.T) {
	now := metav1.Now()
	tests := []struct {
		name     string
		validate func(newNs, oldNs *corev1.Namespace) field.ErrorList
		old      func(*corev1.Namespace)
		mutate   func(*corev1.Namespace)
		want     []want
	}{
		{name: "relabel", validate: ValidateNamespaceUpdate, mutate: func(ns *corev1.Namespace) { ns.Labels["tier"] = "prod" }},
		{name: "rename", validate: ValidateNamespaceUpdate, mutate: func(ns *corev1.Namespace) { ns.Name = "team-b" }, want: []want{invalid("metadata.name")}},
		{name: "uid changed", validate: ValidateNamespaceUpdate, mutate: func(ns *corev1.Namespace) { ns.UID = "x" }, want: []want{invalid("metadata.uid")}},
		{
			name:     "terminating",
			validate: ValidateNamespaceStatusUpdate,
			old:      func(ns *corev1.Namespace) { ns.DeletionTimestamp = &now },
			mutate:   func(ns *corev1.Namespace) { ns.Status.Phase = corev1.NamespaceTerminating },
		},
		{
			name:     "terminating without deletion",
			validate: ValidateNamespaceStatusUpdate,
			mutate:   func(ns *corev1.Namespace) { ns.Status.Phase = corev1.NamespaceTerminating },
			want:     []want{invalid("status.phase")},
		},
		{
			name:     "active while deleted",
			validate: ValidateNamespaceStatusUpdate,
			old:      func(ns *corev1.Namespace) { ns.DeletionTimestamp = &now },
			want:     []want{invalid("status.phase")},
		},
		{
			name:     "finalize removes the kubernetes finalizer",
			validate: ValidateNamespaceFinalizeUpdate,
			mutate:   func(ns *corev1.Namespace) { ns.Spec.Finalizers = nil },
		},
		{
			name:     "finalize with bad finalizer",
			validate: ValidateNamespaceFinalizeUpdate,
			mutate:   func(ns *corev1.Namespace) { ns.Spec.Finalizers = []corev1.FinalizerName{"Not Valid"} },
			want:     []want{invalid("spec.finalizers[0]"), invalid("spec.finalizers[0]")},
		},
		{
			name:     "finalizer added while deleting",
			validate: ValidateNamespaceUpdate,
			old:      func(ns *corev1.Namespace) { ns.DeletionTimestamp = &now },
			mutate:   func(ns *corev1.Namespace) { ns.Finalizers = []string{"example.com/hold"} },
			want:     []want{forbidden("metadata.finalizers")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldNs := validNamespace()
			oldNs.ResourceVersion = "5"
			if tc.old != nil {
				tc.old(oldNs)
			}
			newNs := oldNs.DeepCopy()
			if tc.mutate != nil {
				tc.mutate(newNs)
			}
			expectErrors(t, tc.validate(newNs, oldNs), tc.want...)
		})
	}
}
