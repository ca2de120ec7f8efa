package validation

import (
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidateEviction(t *testing.T) {
	orphan := true
	tests := []struct {
		name string
		opts *metav1.DeleteOptions
		want []want
	}{
		{name: "no options"},
		{name: "grace period", opts: &metav1.DeleteOptions{GracePeriodSeconds: ptrTo[int64](0)}},
		{name: "dry run", opts: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}},
		{name: "negative grace period", opts: &metav1.DeleteOptions{GracePeriodSeconds: ptrTo[int64](-1)}, want: []want{invalid("deleteOptions.gracePeriodSeconds")}},
		{
			name: "unknown propagation policy",
			opts: &metav1.DeleteOptions{PropagationPolicy: ptrTo[metav1.DeletionPropagation]("Later")},
			want: []want{notSupported("deleteOptions.propagationPolicy")},
		},
		{
			name: "orphan and propagation",
			//lint:ignore SA1019 the deprecated field is still accepted, and its conflict is what is tested.
			opts: &metav1.DeleteOptions{OrphanDependents: &orphan, PropagationPolicy: ptrTo(metav1.DeletePropagationBackground)},
			want: []want{invalid("deleteOptions.propagationPolicy")},
		},
		{name: "unknown dry run", opts: &metav1.DeleteOptions{DryRun: []string{"Some"}}, want: []want{notSupported("deleteOptions.dryRun")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, DeleteOptions: tc.opts}
			expectErrors(t, ValidateEviction(e), tc.want...)
		})
	}
}
