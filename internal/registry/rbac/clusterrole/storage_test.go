package clusterrole

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/idplane/idplane/internal/registry/rbac/escalation"
)

// heldRules grants every user the rules listed for a namespace.
type heldRules map[string][]rbacv1.PolicyRule

func (h heldRules) GrantedRules(_ user.Info, namespace string) ([]rbacv1.PolicyRule, error) {
	return h[namespace], nil
}

func (h heldRules) RoleRefRules(string, rbacv1.RoleRef) ([]rbacv1.PolicyRule, error) {
	return nil, nil
}

var (
	podReader  = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}}
	everything = []rbacv1.PolicyRule{
		{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}},
		{NonResourceURLs: []string{"*"}, Verbs: []string{"*"}},
	}
)

func clusterRole(rules []rbacv1.PolicyRule, aggregated bool) *rbacv1.ClusterRole {
	r := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}, Rules: rules}
	if aggregated {
		r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{"rbac.example.com/aggregate-to-monitoring": "true"}},
		}}
	}
	return r
}

func TestCheck(t *testing.T) {
	const aggregationRefused = "must have cluster-admin privileges to use the aggregationRule"
	tests := []struct {
		name    string
		held    heldRules
		role    *rbacv1.ClusterRole
		old     *rbacv1.ClusterRole
		wantErr string
	}{
		{name: "rules held cluster-wide", held: heldRules{"": podReader}, role: clusterRole(podReader, false)},
		{
			name: "rules held only in a namespace", held: heldRules{"team-a": podReader}, role: clusterRole(podReader, false),
			wantErr: "is attempting to grant RBAC permissions not currently held",
		},
		{name: "aggregation by a cluster admin", held: heldRules{"": everything}, role: clusterRole(nil, true)},
		{name: "aggregation by someone else", held: heldRules{"": podReader}, role: clusterRole(nil, true), wantErr: aggregationRefused},
		{
			name: "aggregation rule removed by someone else", held: heldRules{"": podReader},
			role: clusterRole(podReader, false), old: clusterRole(podReader, true), wantErr: aggregationRefused,
		},
		{
			name: "empty aggregation rule is no aggregation", held: heldRules{"": podReader},
			role: &rbacv1.ClusterRole{AggregationRule: &rbacv1.AggregationRule{}, Rules: podReader},
		},
		{name: "rules refused before aggregation", held: heldRules{}, role: clusterRole(podReader, true), wantErr: "not currently held"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := request.WithUser(context.Background(), &user.DefaultInfo{Name: "bob"})
			err := check(&escalation.Guard{Rules: tc.held})(ctx, tc.role, tc.old)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestStrategy(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := rbacv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	s := strategy(scheme)
	ctx := context.Background()
	if s.NamespaceScoped() || !s.AllowCreateOnUpdate(ctx) {
		t.Errorf("namespaced %v, create on update %v; want cluster-scoped, created on update", s.NamespaceScoped(), s.AllowCreateOnUpdate(ctx))
	}

	valid := clusterRole(podReader, true)
	valid.ResourceVersion = "1"
	invalid := valid.DeepCopy()
	invalid.AggregationRule.ClusterRoleSelectors = nil
	if errs := s.Validate(ctx, valid); len(errs) != 0 {
		t.Errorf("valid cluster role: %v", errs)
	}
	if errs := s.Validate(ctx, invalid); len(errs) != 1 || errs[0].Field != "aggregationRule.clusterRoleSelectors" {
		t.Errorf("aggregation rule without selectors: %v, want one error on aggregationRule.clusterRoleSelectors", errs)
	}
	if errs := s.ValidateUpdate(ctx, invalid, valid); len(errs) != 1 || errs[0].Field != "aggregationRule.clusterRoleSelectors" {
		t.Errorf("update to no selectors: %v, want one error on aggregationRule.clusterRoleSelectors", errs)
	}
}
