package rolebinding

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/idplane/idplane/internal/registry/rbac/escalation"
)

var podReader = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}}

// teamRules: everyone holds podReader in team-a, where Role "reader" grants it too; no Role
// exists elsewhere.
type teamRules struct{}

func (teamRules) GrantedRules(_ user.Info, namespace string) ([]rbacv1.PolicyRule, error) {
	if namespace == "team-a" {
		return podReader, nil
	}
	return nil, nil
}

func (teamRules) RoleRefRules(namespace string, ref rbacv1.RoleRef) ([]rbacv1.PolicyRule, error) {
	if namespace == "team-a" && ref.Kind == "Role" && ref.Name == "reader" {
		return podReader, nil
	}
	return nil, apierrors.NewNotFound(rbacv1.Resource("roles"), ref.Name)
}

func TestCheck(t *testing.T) {
	guard := &escalation.Guard{Rules: teamRules{}}
	// The object's namespace is empty, as on a create before the store fills it in: the check
	// must go by the request's.
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "readers"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
	}
	tests := []struct {
		name      string
		namespace string
		check     func(error) bool
	}{
		{name: "role in the request namespace, rules held", namespace: "team-a", check: func(err error) bool { return err == nil }},
		{name: "role missing in the request namespace", namespace: "team-b", check: apierrors.IsNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := request.WithNamespace(request.WithUser(context.Background(), &user.DefaultInfo{Name: "bob"}), tc.namespace)
			if err := check(guard)(ctx, binding, nil); !tc.check(err) {
				t.Errorf("unexpected error: %v", err)
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

	valid := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "readers", Namespace: "team-a", ResourceVersion: "1"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "builder"}},
	}
	if errs := s.Validate(ctx, valid); len(errs) != 0 {
		t.Errorf("valid binding: %v", errs)
	}
	rebound := valid.DeepCopy()
	rebound.RoleRef.Name = "writer"
	if errs := s.ValidateUpdate(ctx, rebound, valid); len(errs) != 1 || errs[0].Field != "roleRef" {
		t.Errorf("role reference change: %v, want one error on roleRef", errs)
	}
}
