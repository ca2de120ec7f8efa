package bootstrap

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-helpers/auth/rbac/validation"
)

func TestClusterInfoViewer(t *testing.T) {
	client := fake.NewClientset()
	ctx := context.Background()
	if err := ReconcileClusterInfoViewer(ctx, client); err != nil {
		t.Fatal(err)
	}
	role, err := client.RbacV1().Roles("kube-public").Get(ctx, ClusterInfoViewer, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Exactly get of the one configmap: no list, no watch, no other name.
	want := []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"cluster-info"}}}
	if covers, _ := validation.Covers(want, role.Rules); !covers || len(role.Rules) != 1 || len(role.Rules[0].Verbs) != 1 {
		t.Errorf("role rules = %+v, want %+v", role.Rules, want)
	}
	binding, err := client.RbacV1().RoleBindings("kube-public").Get(ctx, ClusterInfoViewer, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if binding.RoleRef.Kind != "Role" || binding.RoleRef.Name != ClusterInfoViewer ||
		len(binding.Subjects) != 1 || binding.Subjects[0].Kind != rbacv1.UserKind || binding.Subjects[0].Name != "system:anonymous" {
		t.Errorf("binding = %+v, want the role bound to the user system:anonymous alone", binding)
	}

	// An administrator's addition survives, and a second reconcile of an unchanged policy writes nothing.
	binding.Subjects = append(binding.Subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "extra"})
	if _, err := client.RbacV1().RoleBindings("kube-public").Update(ctx, binding, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	client.ClearActions()
	if err := ReconcileClusterInfoViewer(ctx, client); err != nil {
		t.Fatal(err)
	}
	if w := writes(client); len(w) != 0 {
		t.Errorf("second reconcile wrote %v", w)
	}
	if b, _ := client.RbacV1().RoleBindings("kube-public").Get(ctx, ClusterInfoViewer, metav1.GetOptions{}); len(b.Subjects) != 2 {
		t.Errorf("subjects after reconcile = %+v, want the administrator's kept", b.Subjects)
	}
}
