package role

import (
	"context"
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

var podReader = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}}

func TestCheck(t *testing.T) {
	guard := &escalation.Guard{Rules: heldRules{"team-a": podReader}}
	bob := &user.DefaultInfo{Name: "bob"}
	// The object's namespace is empty, as on a create before the store fills it in: the check
	// must go by the request's.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader"}, Rules: podReader}

	tests := []struct {
		name      string
		namespace string
		wantErr   bool
	}{
		{name: "rules held in the request namespace", namespace: "team-a"},
		{name: "rules not held in the request namespace", namespace: "team-b", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := request.WithNamespace(request.WithUser(context.Background(), bob), tc.namespace)
			if err := check(guard)(ctx, role, nil); (err != nil) != tc.wantErr {
				t.Errorf("error = %v, want error %v", err, tc.wantErr)
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
	if !s.NamespaceScoped() || !s.AllowCreateOnUpdate(ctx) {
		t.Errorf("namespaced %v, create on update %v; want both", s.NamespaceScoped(), s.AllowCreateOnUpdate(ctx))
	}

	valid := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: "team-a", ResourceVersion: "1"}, Rules: podReader}
	invalid := valid.DeepCopy()
	invalid.Rules = []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}
	if errs := s.Validate(ctx, valid); len(errs) != 0 {
		t.Errorf("valid role: %v", errs)
	}
	if errs := s.Validate(ctx, invalid); len(errs) != 1 || errs[0].Field != "rules[0].nonResourceURLs" {
		t.Errorf("URL rule in a role: %v, want one error on rules[0].nonResourceURLs", errs)
	}
	if errs := s.ValidateUpdate(ctx, invalid, valid); len(errs) != 1 || errs[0].Field != "rules[0].nonResourceURLs" {
		t.Errorf("update to a URL rule: %v, want one error on rules[0].nonResourceURLs", errs)
	}
}
