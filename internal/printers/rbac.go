package printers

import (
	"k8s.io/apiserver/pkg/registry/rest"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	rbacv1beta1 "k8s.io/api/rbac/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// roles prints roles as NAME CREATED AT. Upstream has no printer for roles, so its server
// falls back to the default table: the name and the creation time as an RFC 3339 date rather
// than an age.
var roles rest.TableConvertor = newTable(nameColumn[*rbacv1.Role](), createdAtColumn[*rbacv1.Role]())

// clusterRoles prints cluster roles as NAME CREATED AT.
var clusterRoles rest.TableConvertor = newTable(nameColumn[*rbacv1.ClusterRole](), createdAtColumn[*rbacv1.ClusterRole]())

func createdAtColumn[T object]() column[T] {
	c := stringColumn("Created At", doc(metav1.ObjectMeta{}, "creationTimestamp"), func(obj T) any {
		return obj.GetCreationTimestamp().UTC().Format(time.RFC3339)
	})
	c.def.Type = "date"
	return c
}

// roleBindings prints role bindings as NAME ROLE AGE, and USERS GROUPS SERVICEACCOUNTS wide.
// The ROLE description is the v1beta1 one, which is what upstream's column definitions carry.
var roleBindings rest.TableConvertor = newTable(bindingColumns("roleBinding", doc(rbacv1beta1.RoleBinding{}, "roleRef"),
	func(b *rbacv1.RoleBinding) (rbacv1.RoleRef, []rbacv1.Subject) { return b.RoleRef, b.Subjects })...)

// clusterRoleBindings prints cluster role bindings as roleBindings does.
var clusterRoleBindings rest.TableConvertor = newTable(bindingColumns("clusterRoleBinding", doc(rbacv1beta1.ClusterRoleBinding{}, "roleRef"),
	func(b *rbacv1.ClusterRoleBinding) (rbacv1.RoleRef, []rbacv1.Subject) { return b.RoleRef, b.Subjects })...)

// bindingColumns are the columns of both binding kinds, read through binding.
func bindingColumns[T object](kind, roleRefDoc string, binding func(T) (rbacv1.RoleRef, []rbacv1.Subject)) []column[T] {
	subjects := func(subjectKind, title string) column[T] {
		return stringColumn(title, title+" in the "+kind, func(b T) any {
			_, s := binding(b)
			return subjectsOfKind(s, subjectKind)
		}).wide()
	}
	return []column[T]{
		nameColumn[T](),
		stringColumn("Role", roleRefDoc, func(b T) any {
			ref, _ := binding(b)
			return ref.Kind + "/" + ref.Name
		}),
		ageColumn[T](),
		subjects(rbacv1.UserKind, "Users"),
		subjects(rbacv1.GroupKind, "Groups"),
		subjects(rbacv1.ServiceAccountKind, "ServiceAccounts"),
	}
}

// subjectsOfKind lists the subjects of one kind, service accounts as namespace/name. Subjects
// of other kinds, which validation refuses, are not shown.
func subjectsOfKind(subjects []rbacv1.Subject, kind string) string {
	var names []string
	for _, s := range subjects {
		switch {
		case s.Kind != kind:
		case kind == rbacv1.ServiceAccountKind:
			names = append(names, s.Namespace+"/"+s.Name)
		default:
			names = append(names, s.Name)
		}
	}
	return strings.Join(names, ", ")
}
