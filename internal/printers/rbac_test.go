package printers

import (
	"context"
	"reflect"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
)

func TestRBACTables(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 4, 30, 9, 30, 0, 0, time.FixedZone("CEST", 2*3600)))
	subjects := []rbacv1.Subject{
		{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"},
		{Kind: rbacv1.ServiceAccountKind, Namespace: "ci", Name: "builder"},
		{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "devs"},
		{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"},
		{Kind: rbacv1.ServiceAccountKind, Namespace: "ci", Name: "deployer"},
	}
	bindingColumns := []string{"Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"}

	tests := []struct {
		name      string
		convertor rest.TableConvertor
		obj       runtime.Object
		columns   []string
		wide      []string
		want      []any
	}{
		{
			name:      "role shows its creation time in UTC",
			convertor: roles,
			obj:       &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader", Namespace: "team-a", CreationTimestamp: created}},
			columns:   []string{"Name", "Created At"},
			want:      []any{"pod-reader", "2026-04-30T07:30:00Z"},
		},
		{
			name:      "cluster role",
			convertor: clusterRoles,
			obj:       &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "view", CreationTimestamp: created}},
			columns:   []string{"Name", "Created At"},
			want:      []any{"view", "2026-04-30T07:30:00Z"},
		},
		{
			name:      "role binding lists subjects by kind",
			convertor: roleBindings,
			obj: &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "readers", Namespace: "team-a", CreationTimestamp: ago(3 * time.Hour)},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-reader"},
				Subjects:   subjects,
			},
			columns: bindingColumns,
			wide:    []string{"Users", "Groups", "ServiceAccounts"},
			want:    []any{"readers", "Role/pod-reader", "3h", "alice, bob", "devs", "ci/builder, ci/deployer"},
		},
		{
			name:      "cluster role binding without subjects",
			convertor: clusterRoleBindings,
			obj: &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "system:node", CreationTimestamp: ago(26 * time.Hour)},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node"},
			},
			columns: bindingColumns,
			wide:    []string{"Users", "Groups", "ServiceAccounts"},
			want:    []any{"system:node", "ClusterRole/system:node", "26h", "", "", ""},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			table, err := frozen(tc.convertor).ConvertToTable(context.Background(), tc.obj, nil)
			if err != nil {
				t.Fatalf("ConvertToTable: %v", err)
			}
			var columns, wide []string
			for _, c := range table.ColumnDefinitions {
				columns = append(columns, c.Name)
				if c.Priority == 1 {
					wide = append(wide, c.Name)
				}
				if c.Description == "" {
					t.Errorf("column %q has no description", c.Name)
				}
			}
			if !reflect.DeepEqual(columns, tc.columns) || !reflect.DeepEqual(wide, tc.wide) {
				t.Errorf("columns = %v (wide %v), want %v (wide %v)", columns, wide, tc.columns, tc.wide)
			}
			if got := table.Rows[0].Cells; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("cells = %#v, want %#v", got, tc.want)
			}
		})
	}
}
