package bootstrap

import (
	"context"
	"maps"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/component-helpers/auth/rbac/validation"
)

// writes counts the mutating requests the fake client received, by verb.
func writes(client *fake.Clientset) map[string]int {
	n := map[string]int{}
	for _, a := range client.Actions() {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete":
			n[a.GetVerb()]++
		}
	}
	return n
}

func reconciled(t *testing.T, client *fake.Clientset) {
	t.Helper()
	if err := Reconcile(context.Background(), client); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
}

func getRole(t *testing.T, client *fake.Clientset, name string) *rbacv1.ClusterRole {
	t.Helper()
	r, err := client.RbacV1().ClusterRoles().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func getBinding(t *testing.T, client *fake.Clientset, name string) *rbacv1.ClusterRoleBinding {
	t.Helper()
	b, err := client.RbacV1().ClusterRoleBindings().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func defaultRole(t *testing.T, name string) *rbacv1.ClusterRole {
	t.Helper()
	r, ok := rolesByName(t)[name]
	if !ok {
		t.Fatalf("no default clusterrole %q", name)
	}
	return &r
}

func TestReconcileCreatesEverything(t *testing.T) {
	client := fake.NewClientset()
	reconciled(t, client)

	roles, err := client.RbacV1().ClusterRoles().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bindings, err := client.RbacV1().ClusterRoleBindings().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(roles.Items) != len(ClusterRoles()) || len(bindings.Items) != len(ClusterRoleBindings()) {
		t.Errorf("%d clusterroles and %d bindings stored, want %d and %d",
			len(roles.Items), len(bindings.Items), len(ClusterRoles()), len(ClusterRoleBindings()))
	}
	want := map[string]int{"create": len(ClusterRoles()) + len(ClusterRoleBindings())}
	if got := writes(client); !maps.Equal(got, want) {
		t.Errorf("writes %v, want %v", got, want)
	}
	if b := getBinding(t, client, "system:node"); len(b.Subjects) != 0 {
		t.Errorf("stored system:node binding has subjects %+v", b.Subjects)
	}
}

func TestReconcileTwiceWritesOnce(t *testing.T) {
	client := fake.NewClientset()
	reconciled(t, client)
	client.ClearActions()
	reconciled(t, client)
	if got := writes(client); len(got) != 0 {
		t.Errorf("second run wrote %v", got)
	}
}

// The aggregation controller fills admin, edit and view; their rules are not the
// policy's, and reconciliation must neither strip them nor count them as a change.
func TestReconcileKeepsAggregatedRules(t *testing.T) {
	client := fake.NewClientset()
	reconciled(t, client)
	view := getRole(t, client, "view")
	view.Rules = defaultRole(t, "system:aggregate-to-view").Rules
	if _, err := client.RbacV1().ClusterRoles().Update(context.Background(), view, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	client.ClearActions()
	reconciled(t, client)
	if got := writes(client); len(got) != 0 {
		t.Errorf("reconcile wrote %v", got)
	}
	if got := getRole(t, client, "view"); len(got.Rules) != len(view.Rules) {
		t.Errorf("view has %d rules after reconcile, want %d", len(got.Rules), len(view.Rules))
	}
}

func TestReconcileMergesIntoExistingObjects(t *testing.T) {
	extraRule := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"nodes"}}
	extraSubject := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}
	masters := rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:masters"}
	cases := []struct {
		name    string
		objects []runtime.Object
		check   func(t *testing.T, client *fake.Clientset)
	}{
		{
			name: "an administrator's rule is kept and a missing default rule added back",
			objects: []runtime.Object{&rbacv1.ClusterRole{
				ObjectMeta: metav1.ObjectMeta{Name: "system:basic-user", Labels: map[string]string{"team": "ops"}},
				Rules:      []rbacv1.PolicyRule{extraRule},
			}},
			check: func(t *testing.T, client *fake.Clientset) {
				got := getRole(t, client, "system:basic-user")
				if !slices.ContainsFunc(got.Rules, func(r rbacv1.PolicyRule) bool { return ruleEqual(r, extraRule) }) {
					t.Errorf("administrator's rule dropped: %+v", got.Rules)
				}
				if ok, missing := validation.Covers(got.Rules, defaultRole(t, "system:basic-user").Rules); !ok {
					t.Errorf("default rules missing: %+v", missing)
				}
				if got.Labels["team"] != "ops" || got.Labels[bootstrappingLabel] != "rbac-defaults" {
					t.Errorf("labels %v, want the administrator's and the policy's", got.Labels)
				}
				if got.Annotations[rbacv1.AutoUpdateAnnotationKey] != "true" {
					t.Errorf("annotations %v lack autoupdate", got.Annotations)
				}
			},
		},
		{
			name: "an administrator's subject is kept and the default subject added",
			objects: []runtime.Object{&rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects:   []rbacv1.Subject{extraSubject},
			}},
			check: func(t *testing.T, client *fake.Clientset) {
				got := getBinding(t, client, "cluster-admin").Subjects
				if !slices.Contains(got, extraSubject) || !slices.Contains(got, masters) {
					t.Errorf("subjects %+v, want alice and system:masters", got)
				}
			},
		},
		{
			name: "an administrator's subject on system:node is not removed",
			objects: []runtime.Object{&rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "system:node"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node"},
				Subjects:   []rbacv1.Subject{extraSubject},
			}},
			check: func(t *testing.T, client *fake.Clientset) {
				if got := getBinding(t, client, "system:node").Subjects; !slices.Equal(got, []rbacv1.Subject{extraSubject}) {
					t.Errorf("subjects %+v, want only alice", got)
				}
			},
		},
		{
			name: "a binding to another role is replaced, roleRef being immutable",
			objects: []runtime.Object{&rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "system:discovery"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects:   []rbacv1.Subject{extraSubject},
			}},
			check: func(t *testing.T, client *fake.Clientset) {
				got := getBinding(t, client, "system:discovery")
				if got.RoleRef.Name != "system:discovery" || slices.Contains(got.Subjects, extraSubject) {
					t.Errorf("binding %+v not replaced by the default", got)
				}
			},
		},
		{
			name: "autoupdate false leaves a role untouched",
			objects: []runtime.Object{&rbacv1.ClusterRole{
				ObjectMeta: metav1.ObjectMeta{
					Name:        "system:discovery",
					Annotations: map[string]string{rbacv1.AutoUpdateAnnotationKey: "false"},
				},
				Rules: []rbacv1.PolicyRule{extraRule},
			}},
			check: func(t *testing.T, client *fake.Clientset) {
				got := getRole(t, client, "system:discovery")
				if len(got.Rules) != 1 || !ruleEqual(got.Rules[0], extraRule) || len(got.Labels) != 0 {
					t.Errorf("protected role changed: %+v", got)
				}
				assertNoWriteTo(t, client, "clusterroles", "system:discovery")
			},
		},
		{
			name: "autoupdate false leaves a binding untouched",
			objects: []runtime.Object{&rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{
					Name:        "cluster-admin",
					Annotations: map[string]string{rbacv1.AutoUpdateAnnotationKey: "false"},
				},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects: []rbacv1.Subject{extraSubject},
			}},
			check: func(t *testing.T, client *fake.Clientset) {
				if got := getBinding(t, client, "cluster-admin").Subjects; !slices.Equal(got, []rbacv1.Subject{extraSubject}) {
					t.Errorf("protected binding changed: subjects %+v", got)
				}
				assertNoWriteTo(t, client, "clusterrolebindings", "cluster-admin")
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.objects...)
			reconciled(t, client)
			tc.check(t, client)
			client.ClearActions()
			reconciled(t, client)
			if got := writes(client); len(got) != 0 {
				t.Errorf("second run wrote %v", got)
			}
		})
	}
}

func TestReconcileRestoresARemovedRule(t *testing.T) {
	client := fake.NewClientset()
	reconciled(t, client)
	node := getRole(t, client, "system:node")
	node.Rules = slices.DeleteFunc(node.Rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.Resources, "serviceaccounts/token")
	})
	if _, err := client.RbacV1().ClusterRoles().Update(context.Background(), node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	client.ClearActions()
	reconciled(t, client)
	if got, want := writes(client), map[string]int{"update": 1}; !maps.Equal(got, want) {
		t.Errorf("writes %v, want %v", got, want)
	}
	if ok, missing := validation.Covers(getRole(t, client, "system:node").Rules, NodeRules()); !ok {
		t.Errorf("rules still missing: %+v", missing)
	}
}

func TestReconcileRetriesConflicts(t *testing.T) {
	client := fake.NewClientset()
	reconciled(t, client)
	role := getRole(t, client, "system:auth-delegator")
	role.Rules = nil
	if _, err := client.RbacV1().ClusterRoles().Update(context.Background(), role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	conflicts := 2
	client.PrependReactor("update", "clusterroles", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts == 0 {
			return false, nil, nil
		}
		conflicts--
		return true, nil, apierrors.NewConflict(rbacv1.Resource("clusterroles"), "system:auth-delegator", nil)
	})
	reconciled(t, client)
	if conflicts != 0 {
		t.Errorf("%d conflicts left unconsumed", conflicts)
	}
	if got := getRole(t, client, "system:auth-delegator"); len(got.Rules) == 0 {
		t.Error("rules not restored after conflicts")
	}
}

func TestReconcileStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	client := fake.NewClientset()
	if err := Reconcile(ctx, client); err == nil {
		t.Fatal("Reconcile succeeded with a cancelled context")
	}
	if got := writes(client); len(got) != 0 {
		t.Errorf("cancelled run wrote %v", got)
	}
}

func assertNoWriteTo(t *testing.T, client *fake.Clientset, resource, name string) {
	t.Helper()
	for _, a := range client.Actions() {
		if a.GetResource().Resource != resource {
			continue
		}
		// Creates and updates carry the object written; the two action interfaces are the same.
		write, ok := a.(k8stesting.CreateAction)
		if !ok {
			continue
		}
		if m, err := meta.Accessor(write.GetObject()); err == nil && m.GetName() == name {
			t.Errorf("%s %q written: %s", resource, name, a.GetVerb())
		}
	}
}
