package clusterrolebinding

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/idplane/idplane/internal/registry/rbac/escalation"
)

var podReader = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}}

// namespaceReader: everyone holds podReader in team-a only; ClusterRole "view" grants it.
type namespaceReader struct{}

func (namespaceReader) GrantedRules(_ user.Info, namespace string) ([]rbacv1.PolicyRule, error) {
	if namespace == "team-a" {
		return podReader, nil
	}
	return nil, nil
}

func (namespaceReader) RoleRefRules(string, rbacv1.RoleRef) ([]rbacv1.PolicyRule, error) {
	return podReader, nil
}

func TestCheck(t *testing.T) {
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "viewers"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
	}
	// bindView allows binding ClusterRole view cluster-wide, and nothing else.
	bindView := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetVerb() == "bind" && a.GetResource() == "clusterroles" && a.GetName() == "view" && a.GetNamespace() == "" {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
	tests := []struct {
		name    string
		guard   *escalation.Guard
		wantErr bool
	}{
		// Holding the rules in a namespace, even the request's, is not holding them cluster-wide.
		{name: "rules held only in a namespace", guard: &escalation.Guard{Rules: namespaceReader{}}, wantErr: true},
		{name: "bind on the cluster role", guard: &escalation.Guard{Rules: namespaceReader{}, Authorizer: bindView}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := request.WithNamespace(request.WithUser(context.Background(), &user.DefaultInfo{Name: "bob"}), "team-a")
			if err := check(tc.guard)(ctx, binding, nil); (err != nil) != tc.wantErr {
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
	if s.NamespaceScoped() || !s.AllowCreateOnUpdate(ctx) {
		t.Errorf("namespaced %v, create on update %v; want cluster-scoped, created on update", s.NamespaceScoped(), s.AllowCreateOnUpdate(ctx))
	}

	valid := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "viewers", ResourceVersion: "1"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "ci", Name: "builder"}},
	}
	if errs := s.Validate(ctx, valid); len(errs) != 0 {
		t.Errorf("valid binding: %v", errs)
	}
	noNamespace := valid.DeepCopy()
	noNamespace.Subjects[0].Namespace = ""
	if errs := s.Validate(ctx, noNamespace); len(errs) != 1 || errs[0].Field != "subjects[0].namespace" {
		t.Errorf("service account without namespace: %v, want one error on subjects[0].namespace", errs)
	}
	rebound := valid.DeepCopy()
	rebound.RoleRef.Name = "admin"
	if errs := s.ValidateUpdate(ctx, rebound, valid); len(errs) != 1 || errs[0].Field != "roleRef" {
		t.Errorf("role reference change: %v, want one error on roleRef", errs)
	}
}
