package bootstrap

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/component-helpers/auth/rbac/reconciliation"
)

// ClusterInfoViewer names the Role and RoleBinding in kube-public that let anonymous clients get
// cluster-info, as kubeadm names them.
const ClusterInfoViewer = "kubeadm:bootstrap-signer-clusterinfo"

// ClusterInfoRole grants get of kube-public/cluster-info and of nothing else.
func ClusterInfoRole() rbacv1.Role {
	r := rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: ClusterInfoViewer, Namespace: metav1.NamespacePublic},
		Rules: []rbacv1.PolicyRule{{
			Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"},
			ResourceNames: []string{bootstrapapi.ConfigMapClusterInfo},
		}},
	}
	markBootstrap(&r.ObjectMeta)
	return r
}

// ClusterInfoRoleBinding binds ClusterInfoRole to the user system:anonymous.
func ClusterInfoRoleBinding() rbacv1.RoleBinding {
	b := rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ClusterInfoViewer, Namespace: metav1.NamespacePublic},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: ClusterInfoViewer},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user.Anonymous}},
	}
	markBootstrap(&b.ObjectMeta)
	return b
}

// ReconcileClusterInfoViewer brings ClusterInfoRole and its binding into the cluster as Reconcile
// does the cluster-wide policy: adding what is missing, removing nothing, leaving alone objects
// whose autoupdate annotation is "false".
func ReconcileClusterInfoViewer(ctx context.Context, client kubernetes.Interface) error {
	role := ClusterInfoRole()
	err := onConflict(ctx, func() error {
		opts := reconciliation.ReconcileRoleOptions{
			Role:    reconciliation.RoleRuleOwner{Role: role.DeepCopy()},
			Client:  reconciliation.RoleModifier{Client: client.RbacV1(), NamespaceClient: client.CoreV1().Namespaces()},
			Confirm: true,
		}
		if _, err := opts.Run(); err != nil {
			return fmt.Errorf("reconciling role %s/%s: %w", role.Namespace, role.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	binding := ClusterInfoRoleBinding()
	return onConflict(ctx, func() error {
		opts := reconciliation.ReconcileRoleBindingOptions{
			RoleBinding: reconciliation.RoleBindingAdapter{RoleBinding: binding.DeepCopy()},
			Client:      reconciliation.RoleBindingClientAdapter{Client: client.RbacV1(), NamespaceClient: client.CoreV1().Namespaces()},
			Confirm:     true,
		}
		if _, err := opts.Run(); err != nil {
			return fmt.Errorf("reconciling rolebinding %s/%s: %w", binding.Namespace, binding.Name, err)
		}
		return nil
	})
}
