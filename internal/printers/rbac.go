package printers

import (
	"fmt"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	rbacv1beta1 "k8s.io/api/rbac/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Upstream has no printer for roles, so its server falls back to the default table: the name and
// the creation time as an RFC 3339 date rather than an age.
var roleColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Created At", Type: "date", Description: objectMetaDoc["creationTimestamp"]},
}

func createdAt(t metav1.Time) string { return t.UTC().Format(time.RFC3339) }

// Roles prints roles as NAME CREATED AT.
var Roles = New(roleColumns, func(r *rbacv1.Role) ([]any, error) {
	return []any{r.Name, createdAt(r.CreationTimestamp)}, nil
})

// ClusterRoles prints cluster roles as NAME CREATED AT.
var ClusterRoles = New(roleColumns, func(r *rbacv1.ClusterRole) ([]any, error) {
	return []any{r.Name, createdAt(r.CreationTimestamp)}, nil
})

// RoleBindings prints role bindings as NAME ROLE AGE, and USERS GROUPS SERVICEACCOUNTS wide.
// The ROLE description is the v1beta1 one, which is what upstream's column definitions carry.
var RoleBindings = New(bindingColumns(rbacv1beta1.RoleBinding{}.SwaggerDoc()["roleRef"], "roleBinding"),
	func(b *rbacv1.RoleBinding) ([]any, error) {
		return bindingCells(b.Name, b.RoleRef, b.Subjects, b.CreationTimestamp), nil
	})

// ClusterRoleBindings prints cluster role bindings as RoleBindings does.
var ClusterRoleBindings = New(bindingColumns(rbacv1beta1.ClusterRoleBinding{}.SwaggerDoc()["roleRef"], "clusterRoleBinding"),
	func(b *rbacv1.ClusterRoleBinding) ([]any, error) {
		return bindingCells(b.Name, b.RoleRef, b.Subjects, b.CreationTimestamp), nil
	})

func bindingColumns(roleRefDoc, kind string) []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Role", Type: "string", Description: roleRefDoc},
		ageColumn,
		{Name: "Users", Type: "string", Priority: 1, Description: "Users in the " + kind},
		{Name: "Groups", Type: "string", Priority: 1, Description: "Groups in the " + kind},
		{Name: "ServiceAccounts", Type: "string", Priority: 1, Description: "ServiceAccounts in the " + kind},
	}
}

// bindingCells lists subjects by kind; service accounts show as namespace/name. Subjects of other
// kinds, which validation refuses, are not shown.
func bindingCells(name string, ref rbacv1.RoleRef, subjects []rbacv1.Subject, created metav1.Time) []any {
	var users, groups, serviceAccounts []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		case rbacv1.ServiceAccountKind:
			serviceAccounts = append(serviceAccounts, s.Namespace+"/"+s.Name)
		}
	}
	return []any{
		name,
		fmt.Sprintf("%s/%s", ref.Kind, ref.Name),
		age(created),
		strings.Join(users, ", "),
		strings.Join(groups, ", "),
		strings.Join(serviceAccounts, ", "),
	}
}
