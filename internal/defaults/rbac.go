package defaults

import rbacv1 "k8s.io/api/rbac/v1"

// RoleBinding fills in the API group of the role reference and of user and group subjects,
// which clients routinely omit: RBAC is the only group they can belong to.
func RoleBinding(b *rbacv1.RoleBinding) {
	roleRef(&b.RoleRef)
	subjects(b.Subjects)
}

// RoleBindingList defaults every role binding of the list.
func RoleBindingList(l *rbacv1.RoleBindingList) {
	for i := range l.Items {
		RoleBinding(&l.Items[i])
	}
}

// ClusterRoleBinding defaults a cluster role binding as RoleBinding does.
func ClusterRoleBinding(b *rbacv1.ClusterRoleBinding) {
	roleRef(&b.RoleRef)
	subjects(b.Subjects)
}

// ClusterRoleBindingList defaults every cluster role binding of the list.
func ClusterRoleBindingList(l *rbacv1.ClusterRoleBindingList) {
	for i := range l.Items {
		ClusterRoleBinding(&l.Items[i])
	}
}

func roleRef(ref *rbacv1.RoleRef) {
	orDefault(&ref.APIGroup, rbacv1.GroupName)
}

// subjects leaves service accounts alone: they live in the core group, whose name is empty.
func subjects(list []rbacv1.Subject) {
	for i := range list {
		s := &list[i]
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	}
}
