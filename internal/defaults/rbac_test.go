package defaults

import (
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestBindingDefaults(t *testing.T) {
	in := []rbacv1.Subject{
		{Kind: rbacv1.UserKind, Name: "alice"},
		{Kind: rbacv1.GroupKind, Name: "devs"},
		{Kind: rbacv1.ServiceAccountKind, Name: "builder", Namespace: "ci"},
		{Kind: rbacv1.UserKind, APIGroup: "example.com", Name: "kept"},
		{Kind: "Robot", Name: "r2"},
	}
	wantSubjects := []rbacv1.Subject{
		{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"},
		{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "devs"},
		{Kind: rbacv1.ServiceAccountKind, Name: "builder", Namespace: "ci"},
		{Kind: rbacv1.UserKind, APIGroup: "example.com", Name: "kept"},
		{Kind: "Robot", Name: "r2"},
	}
	ref := rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}
	wantRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}

	// Defaults run through the scheme, as the decoder runs them.
	s := runtime.NewScheme()
	RegisterDefaults(s)

	tests := []struct {
		name string
		obj  runtime.Object
		want runtime.Object
	}{
		{
			name: "role binding",
			obj:  &rbacv1.RoleBinding{RoleRef: ref, Subjects: clone(in)},
			want: &rbacv1.RoleBinding{RoleRef: wantRef, Subjects: wantSubjects},
		},
		{
			name: "role binding list",
			obj:  &rbacv1.RoleBindingList{Items: []rbacv1.RoleBinding{{RoleRef: ref, Subjects: clone(in)}}},
			want: &rbacv1.RoleBindingList{Items: []rbacv1.RoleBinding{{RoleRef: wantRef, Subjects: wantSubjects}}},
		},
		{
			name: "cluster role binding",
			obj:  &rbacv1.ClusterRoleBinding{RoleRef: ref, Subjects: clone(in)},
			want: &rbacv1.ClusterRoleBinding{RoleRef: wantRef, Subjects: wantSubjects},
		},
		{
			name: "cluster role binding list",
			obj:  &rbacv1.ClusterRoleBindingList{Items: []rbacv1.ClusterRoleBinding{{RoleRef: ref, Subjects: clone(in)}}},
			want: &rbacv1.ClusterRoleBindingList{Items: []rbacv1.ClusterRoleBinding{{RoleRef: wantRef, Subjects: wantSubjects}}},
		},
		{
			name: "explicit role ref group kept for validation to refuse",
			obj:  &rbacv1.RoleBinding{RoleRef: rbacv1.RoleRef{APIGroup: "example.com", Kind: "Role", Name: "r"}},
			want: &rbacv1.RoleBinding{RoleRef: rbacv1.RoleRef{APIGroup: "example.com", Kind: "Role", Name: "r"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s.Default(tc.obj)
			if !reflect.DeepEqual(tc.obj, tc.want) {
				t.Errorf("got  %+v\nwant %+v", tc.obj, tc.want)
			}
		})
	}
}

func clone(subjects []rbacv1.Subject) []rbacv1.Subject {
	return append([]rbacv1.Subject(nil), subjects...)
}
