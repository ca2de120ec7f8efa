package bootstrap

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/auth/rbac/reconciliation"
	"k8s.io/klog/v2"
)

// Reconcile brings the default policy into the cluster: it creates missing roles and
// bindings and adds missing rules, aggregation selectors, subjects, labels and annotations
// to existing ones. It never removes anything, so an administrator's additions survive
// every start, and it leaves alone objects annotated
// rbac.authorization.kubernetes.io/autoupdate: "false". When nothing is missing it only
// reads.
func Reconcile(ctx context.Context, client kubernetes.Interface) error {
	roles := reconciliation.ClusterRoleModifier{Client: client.RbacV1().ClusterRoles()}
	for _, role := range ClusterRoles() {
		if err := reconcileRole(ctx, roles, &role); err != nil {
			return err
		}
	}
	bindings := reconciliation.ClusterRoleBindingClientAdapter{Client: client.RbacV1().ClusterRoleBindings()}
	for _, binding := range ClusterRoleBindings() {
		if err := reconcileBinding(ctx, bindings, &binding); err != nil {
			return err
		}
	}
	return nil
}

func reconcileRole(ctx context.Context, client reconciliation.RuleOwnerModifier, role *rbacv1.ClusterRole) error {
	return onConflict(ctx, func() error {
		opts := reconciliation.ReconcileRoleOptions{
			Role:    reconciliation.ClusterRoleRuleOwner{ClusterRole: role.DeepCopy()},
			Client:  client,
			Confirm: true,
		}
		result, err := opts.Run()
		if err != nil {
			return fmt.Errorf("reconciling clusterrole %q: %w", role.Name, err)
		}
		switch {
		case result.Protected && result.Operation != reconciliation.ReconcileNone:
			klog.InfoS("Default clusterrole differs but has autoupdate off; leaving it",
				"clusterrole", role.Name, "missingRules", len(result.MissingRules),
				"missingSelectors", len(result.MissingAggregationRuleSelectors))
		case result.Operation != reconciliation.ReconcileNone:
			klog.InfoS("Reconciled default clusterrole", "clusterrole", role.Name, "operation", result.Operation,
				"addedRules", len(result.MissingRules), "addedSelectors", len(result.MissingAggregationRuleSelectors))
		}
		return nil
	})
}

func reconcileBinding(ctx context.Context, client reconciliation.RoleBindingModifier, binding *rbacv1.ClusterRoleBinding) error {
	return onConflict(ctx, func() error {
		opts := reconciliation.ReconcileRoleBindingOptions{
			RoleBinding: reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: binding.DeepCopy()},
			Client:      client,
			Confirm:     true,
		}
		result, err := opts.Run()
		if err != nil {
			return fmt.Errorf("reconciling clusterrolebinding %q: %w", binding.Name, err)
		}
		switch {
		case result.Protected && result.Operation != reconciliation.ReconcileNone:
			klog.InfoS("Default clusterrolebinding differs but has autoupdate off; leaving it",
				"clusterrolebinding", binding.Name, "missingSubjects", len(result.MissingSubjects))
		case result.Operation != reconciliation.ReconcileNone:
			klog.InfoS("Reconciled default clusterrolebinding", "clusterrolebinding", binding.Name,
				"operation", result.Operation, "addedSubjects", len(result.MissingSubjects))
		}
		return nil
	})
}

// onConflict retries fn while another writer changed the object between its read and its
// write (an update racing the aggregation controller or an administrator); the
// reconciliation library re-reads the object on every attempt.
func onConflict(ctx context.Context, fn func() error) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return fn()
	})
}
