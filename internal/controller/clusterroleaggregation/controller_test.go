package clusterroleaggregation

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/component-helpers/auth/rbac/validation"

	"github.com/idplane/idplane/internal/authz/rbac/bootstrap"
)

const (
	toAdmin = "example.com/aggregate-to-admin"
	toView  = "example.com/aggregate-to-view"
)

func rule(verb, resource string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{""}, Resources: []string{resource}}
}

func role(name string, labels map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Rules: rules}
}

func aggregated(name string, labels map[string]string, selectLabels []string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	r := role(name, labels, rules...)
	r.AggregationRule = &rbacv1.AggregationRule{}
	for _, l := range selectLabels {
		r.AggregationRule.ClusterRoleSelectors = append(r.AggregationRule.ClusterRoleSelectors,
			metav1.LabelSelector{MatchLabels: map[string]string{l: "true"}})
	}
	return r
}

func labelled(keys ...string) map[string]string {
	m := map[string]string{}
	for _, k := range keys {
		m[k] = "true"
	}
	return m
}

func TestSync(t *testing.T) {
	cases := []struct {
		name    string
		roles   []*rbacv1.ClusterRole
		sync    string
		want    []rbacv1.PolicyRule
		updates int
	}{
		{
			name: "union of the matching roles in name order",
			roles: []*rbacv1.ClusterRole{
				aggregated("admin", nil, []string{toAdmin}),
				role("b", labelled(toAdmin), rule("get", "secrets")),
				role("a", labelled(toAdmin), rule("get", "pods"), rule("list", "pods")),
				role("unlabelled", nil, rule("delete", "nodes")),
				role("other-label", labelled(toView), rule("watch", "nodes")),
			},
			sync:    "admin",
			want:    []rbacv1.PolicyRule{rule("get", "pods"), rule("list", "pods"), rule("get", "secrets")},
			updates: 1,
		},
		{
			name: "a rule held by several roles appears once",
			roles: []*rbacv1.ClusterRole{
				aggregated("admin", nil, []string{toAdmin}),
				role("a", labelled(toAdmin), rule("get", "pods")),
				role("b", labelled(toAdmin), rule("get", "pods"), rule("get", "secrets")),
			},
			sync:    "admin",
			want:    []rbacv1.PolicyRule{rule("get", "pods"), rule("get", "secrets")},
			updates: 1,
		},
		{
			name: "any selector matches",
			roles: []*rbacv1.ClusterRole{
				aggregated("admin", nil, []string{toAdmin, toView}),
				role("a", labelled(toAdmin), rule("get", "pods")),
				role("b", labelled(toView), rule("get", "secrets")),
			},
			sync:    "admin",
			want:    []rbacv1.PolicyRule{rule("get", "pods"), rule("get", "secrets")},
			updates: 1,
		},
		{
			name: "the role does not aggregate itself",
			roles: []*rbacv1.ClusterRole{
				aggregated("admin", labelled(toAdmin), []string{toAdmin}, rule("delete", "nodes")),
				role("a", labelled(toAdmin), rule("get", "pods")),
			},
			sync:    "admin",
			want:    []rbacv1.PolicyRule{rule("get", "pods")},
			updates: 1,
		},
		{
			name: "an aggregated source contributes its current rules",
			roles: []*rbacv1.ClusterRole{
				aggregated("admin", nil, []string{toAdmin}),
				aggregated("edit", labelled(toAdmin), []string{toView}, rule("get", "pods")),
			},
			sync:    "admin",
			want:    []rbacv1.PolicyRule{rule("get", "pods")},
			updates: 1,
		},
		{
			name: "up-to-date rules are not written",
			roles: []*rbacv1.ClusterRole{
				aggregated("admin", nil, []string{toAdmin}, rule("get", "pods"), rule("get", "secrets")),
				role("a", labelled(toAdmin), rule("get", "pods")),
				role("b", labelled(toAdmin), rule("get", "secrets")),
			},
			sync: "admin",
			want: []rbacv1.PolicyRule{rule("get", "pods"), rule("get", "secrets")},
		},
		{
			name: "rules of roles no longer matching are dropped",
			roles: []*rbacv1.ClusterRole{
				aggregated("admin", nil, []string{toAdmin}, rule("get", "pods"), rule("get", "secrets")),
				role("a", labelled(toAdmin), rule("get", "pods")),
				role("b", nil, rule("get", "secrets")),
			},
			sync:    "admin",
			want:    []rbacv1.PolicyRule{rule("get", "pods")},
			updates: 1,
		},
		{
			name: "with nothing matching the rules are emptied",
			roles: []*rbacv1.ClusterRole{
				aggregated("admin", nil, []string{toAdmin}, rule("get", "pods")),
			},
			sync:    "admin",
			want:    nil,
			updates: 1,
		},
		{
			name: "a role without aggregationRule is left alone",
			roles: []*rbacv1.ClusterRole{
				role("plain", nil, rule("get", "pods")),
				role("a", labelled(toAdmin), rule("get", "secrets")),
			},
			sync: "plain",
			want: []rbacv1.PolicyRule{rule("get", "pods")},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var objects []runtime.Object
			for _, r := range tc.roles {
				objects = append(objects, r)
			}
			client := fake.NewClientset(objects...)
			factory := informers.NewSharedInformerFactory(client, 0)
			clusterRoles := factory.Rbac().V1().ClusterRoles()
			c, err := New(client, clusterRoles)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range tc.roles {
				if err := clusterRoles.Informer().GetIndexer().Add(r); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.sync(context.Background(), tc.sync); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if got := countUpdates(client.Actions()); got != tc.updates {
				t.Errorf("%d updates, want %d", got, tc.updates)
			}
			got, err := client.RbacV1().ClusterRoles().Get(context.Background(), tc.sync, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Rules); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSyncOfAMissingRoleDoesNothing(t *testing.T) {
	client := fake.NewClientset()
	c, err := New(client, informers.NewSharedInformerFactory(client, 0).Rbac().V1().ClusterRoles())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.sync(context.Background(), "gone"); err != nil {
		t.Fatal(err)
	}
	if n := len(client.Actions()); n != 0 {
		t.Errorf("%d requests, want none", n)
	}
}

func countUpdates(actions []k8stesting.Action) int {
	n := 0
	for _, a := range actions {
		if a.GetVerb() == "update" && a.GetResource().Resource == "clusterroles" {
			n++
		}
	}
	return n
}

// start runs the controller on client until the test ends.
func start(t *testing.T, client *fake.Clientset) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, factory.Rbac().V1().ClusterRoles())
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx, 2)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		factory.Shutdown()
	})
}

func waitForRules(t *testing.T, client *fake.Clientset, name string, want []rbacv1.PolicyRule) {
	t.Helper()
	var got []rbacv1.PolicyRule
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true,
		func(ctx context.Context) (bool, error) {
			r, err := client.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			got = r.Rules
			return cmp.Equal(want, got), nil
		})
	if err != nil {
		t.Fatalf("clusterrole %q rules %+v, want %+v", name, got, want)
	}
}

func TestRunFollowsLabels(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(
		aggregated("admin", nil, []string{toAdmin}),
		role("a", labelled(toAdmin), rule("get", "pods")),
		role("b", labelled(toAdmin), rule("get", "secrets")),
	)
	start(t, client)
	waitForRules(t, client, "admin", []rbacv1.PolicyRule{rule("get", "pods"), rule("get", "secrets")})

	b, err := client.RbacV1().ClusterRoles().Get(ctx, "b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Labels = nil
	if _, err := client.RbacV1().ClusterRoles().Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForRules(t, client, "admin", []rbacv1.PolicyRule{rule("get", "pods")})

	if _, err := client.RbacV1().ClusterRoles().Create(ctx,
		role("c", labelled(toAdmin), rule("list", "configmaps")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForRules(t, client, "admin", []rbacv1.PolicyRule{rule("get", "pods"), rule("list", "configmaps")})

	if err := client.RbacV1().ClusterRoles().Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForRules(t, client, "admin", []rbacv1.PolicyRule{rule("list", "configmaps")})
}

// The default policy's admin, edit and view, filled by the controller, nest as upstream's:
// admin holds everything edit does, edit everything view does, and view no secrets.
func TestRunFillsTheDefaultRoles(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	if err := bootstrap.Reconcile(ctx, client); err != nil {
		t.Fatal(err)
	}
	start(t, client)

	rulesOf := func(name string) []rbacv1.PolicyRule {
		r, err := client.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Rules
	}
	covers := func(owner, servant string) bool {
		ok, _ := validation.Covers(rulesOf(owner), rulesOf(servant))
		return ok
	}
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) {
			return covers("view", "system:aggregate-to-view") &&
				covers("edit", "system:aggregate-to-edit") && covers("edit", "view") &&
				covers("admin", "system:aggregate-to-admin") && covers("admin", "edit"), nil
		})
	if err != nil {
		t.Fatalf("admin, edit and view not filled: admin %+v, edit %+v, view %+v",
			rulesOf("admin"), rulesOf("edit"), rulesOf("view"))
	}
	getSecrets := []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}}
	if ok, _ := validation.Covers(rulesOf("view"), getSecrets); ok {
		t.Error("view reads secrets")
	}
	if ok, _ := validation.Covers(rulesOf("edit"), getSecrets); !ok {
		t.Error("edit does not read secrets")
	}
}
