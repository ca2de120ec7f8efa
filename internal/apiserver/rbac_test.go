package apiserver

import (
	"context"
	"crypto/x509"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/idplane/idplane/internal/pki"
)

// rbacServer is a server with RBAC (the default modes) and clients for users whose certificates
// its CA signed.
type rbacServer struct {
	*testServer
	ca *pki.CA
}

func startRBACServer(t *testing.T) *rbacServer {
	t.Helper()
	return startRBACServerWith(t, nil)
}

func startRBACServerWith(t *testing.T, configure func(*Options)) *rbacServer {
	t.Helper()
	dir := t.TempDir()
	ts := startTestServer(t, dir, configure)
	ca, err := pki.EnsureCA(pki.Files{Dir: filepath.Join(dir, "pki")}, "unused", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return &rbacServer{testServer: ts, ca: ca}
}

func (s *rbacServer) userConfig(t *testing.T, name string, groups ...string) *rest.Config {
	t.Helper()
	certPEM, keyPEM, err := pki.Issue(s.ca, pki.IssueRequest{CommonName: name, Organization: groups, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, Validity: time.Hour, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(s.config)
	cfg.CertData, cfg.KeyData = certPEM, keyPEM
	return cfg
}

func (s *rbacServer) user(t *testing.T, name string, groups ...string) kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(s.userConfig(t, name, groups...))
}

// eventually retries check until it passes: the RBAC index follows the store through a watch.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		last = check()
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, last)
	}
}

func mustCreate[T any](t *testing.T, create func(context.Context, T, metav1.CreateOptions) (T, error), obj T) {
	t.Helper()
	if _, err := create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestRBACAuthorizesThroughBindings(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	admin := s.client
	for _, ns := range []string{"team-a", "team-b"} {
		mustCreate(t, admin.CoreV1().Namespaces().Create, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		for _, name := range []string{"one", "two"} {
			mustCreate(t, admin.CoreV1().Secrets(ns).Create, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}})
		}
	}
	rbac := admin.RbacV1()
	mustCreate(t, rbac.Roles("team-a").Create, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "secret-reader"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}, ResourceNames: []string{"only-this"}},
			{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"get"}},
		},
	})
	mustCreate(t, rbac.RoleBindings("team-a").Create, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-reads"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "secret-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "alice"}, {Kind: rbacv1.GroupKind, Name: "auditors"}, {Kind: rbacv1.ServiceAccountKind, Name: "robot", Namespace: "team-a"}},
	})
	mustCreate(t, rbac.ClusterRoles().Create, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	})
	mustCreate(t, rbac.ClusterRoleBindings().Create, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "alice"}},
	})

	alice := s.user(t, "alice")
	auditor := s.user(t, "carol", "auditors")
	bob := s.user(t, "bob")
	eventually(t, "alice reads secrets in team-a", func() error {
		_, err := alice.CoreV1().Secrets("team-a").Get(ctx, "one", metav1.GetOptions{})
		return err
	})
	cases := []struct {
		name    string
		do      func() error
		allowed bool
	}{
		{"user binding: get in its namespace", func() error {
			_, err := alice.CoreV1().Secrets("team-a").Get(ctx, "two", metav1.GetOptions{})
			return err
		}, true},
		{"user binding: list in its namespace", func() error { _, err := alice.CoreV1().Secrets("team-a").List(ctx, metav1.ListOptions{}); return err }, true},
		{"user binding: not in another namespace", func() error {
			_, err := alice.CoreV1().Secrets("team-b").Get(ctx, "one", metav1.GetOptions{})
			return err
		}, false},
		{"user binding: verb not granted", func() error { return alice.CoreV1().Secrets("team-a").Delete(ctx, "one", metav1.DeleteOptions{}) }, false},
		{"resourceNames: the named object", func() error {
			_, err := alice.CoreV1().ConfigMaps("team-a").Get(ctx, "only-this", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil // authorized; the object just does not exist
			}
			return err
		}, true},
		{"resourceNames: another object", func() error {
			_, err := alice.CoreV1().ConfigMaps("team-a").Get(ctx, "other", metav1.GetOptions{})
			return err
		}, false},
		{"subresource granted, not the resource", func() error { _, err := alice.CoreV1().Pods("team-a").Get(ctx, "p", metav1.GetOptions{}); return err }, false},
		{"group binding", func() error {
			_, err := auditor.CoreV1().Secrets("team-a").Get(ctx, "one", metav1.GetOptions{})
			return err
		}, true},
		{"no binding", func() error {
			_, err := bob.CoreV1().Secrets("team-a").Get(ctx, "one", metav1.GetOptions{})
			return err
		}, false},
		{"non-resource URL granted", func() error { return alice.Discovery().RESTClient().Get().AbsPath("/metrics").Do(ctx).Error() }, true},
		{"non-resource URL not granted", func() error { return bob.Discovery().RESTClient().Get().AbsPath("/metrics").Do(ctx).Error() }, false},
		{"basic-user: everyone may ask who they are", func() error {
			_, err := bob.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationSelfReview, metav1.CreateOptions{})
			return err
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			if tc.allowed && err != nil {
				t.Errorf("want allowed, got %v", err)
			}
			if !tc.allowed && !apierrors.IsForbidden(err) {
				t.Errorf("want Forbidden, got %v", err)
			}
		})
	}

	// A service account bound by a RoleBinding, asked through a SubjectAccessReview.
	sar := func(user string, groups []string, ns, verb, resource string) *authorizationv1.SubjectAccessReview {
		review, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: resource},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return review
	}
	robot := "system:serviceaccount:team-a:robot"
	if r := sar(robot, []string{"system:serviceaccounts", "system:serviceaccounts:team-a"}, "team-a", "list", "secrets"); !r.Status.Allowed {
		t.Errorf("service account robot should list secrets in team-a: %+v", r.Status)
	}
	if r := sar(robot, nil, "team-b", "list", "secrets"); r.Status.Allowed {
		t.Errorf("service account robot may not list secrets in team-b: %+v", r.Status)
	}

	// Deleting the binding revokes access.
	if err := rbac.RoleBindings("team-a").Delete(ctx, "alice-reads", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "alice loses access", func() error {
		_, err := alice.CoreV1().Secrets("team-a").Get(ctx, "one", metav1.GetOptions{})
		if apierrors.IsForbidden(err) {
			return nil
		}
		return err
	})
}

var authenticationSelfReview = authenticationv1SelfSubjectReview()

func TestEscalationPrevention(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	rbac := s.client.RbacV1()
	mustCreate(t, s.client.CoreV1().Namespaces().Create, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dev"}})
	// dave manages roles and bindings in dev, and may read configmaps there, nothing else. Verb
	// "*" would include escalate and bind, so the verbs are listed.
	mustCreate(t, rbac.Roles("dev").Create, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "rbac-manager"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles", "rolebindings"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}},
		},
	})
	bindDave := func(name, role string) {
		mustCreate(t, rbac.RoleBindings("dev").Create, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "dave"}},
		})
	}
	bindDave("dave-manages", "rbac-manager")
	dave := s.user(t, "dave").RbacV1()
	secretsRole := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "secret-admin"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"*"}}},
	}
	eventually(t, "dave creates a role within his rights", func() error {
		_, err := dave.Roles("dev").Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "cm-reader"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}},
		}, metav1.CreateOptions{})
		return err
	})
	_, err := dave.Roles("dev").Create(ctx, secretsRole, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("creating a role granting secrets: got %v, want Forbidden", err)
	}

	// An admin creates the role; dave may not bind it without holding it or having "bind".
	mustCreate(t, rbac.Roles("dev").Create, secretsRole)
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "erin-secrets"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "secret-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "erin"}},
	}
	// Until the index has the new role, the guard cannot find it (404); then it refuses (403).
	eventually(t, "binding a role he does not hold is refused", func() error {
		if _, err := dave.RoleBindings("dev").Create(ctx, binding, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			return errorf("got %v, want Forbidden", err)
		}
		return nil
	})

	mustCreate(t, rbac.Roles("dev").Create, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "may-bind-and-escalate"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles"}, Verbs: []string{"bind"}, ResourceNames: []string{"secret-admin"}},
			{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles"}, Verbs: []string{"escalate"}},
		},
	})
	bindDave("dave-binds", "may-bind-and-escalate")
	eventually(t, "bind lets dave bind the role", func() error {
		_, err := dave.RoleBindings("dev").Create(ctx, binding, metav1.CreateOptions{})
		return err
	})
	eventually(t, "escalate lets dave create a wider role", func() error {
		wider := secretsRole.DeepCopy()
		wider.Name = "wider"
		_, err := dave.Roles("dev").Create(ctx, wider, metav1.CreateOptions{})
		return err
	})
}

func TestImpersonation(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	rbac := s.client.RbacV1()
	mustCreate(t, rbac.ClusterRoles().Create, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "impersonate-frank"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"users"}, Verbs: []string{"impersonate"}, ResourceNames: []string{"frank"}},
			{APIGroups: []string{""}, Resources: []string{"groups"}, Verbs: []string{"impersonate"}, ResourceNames: []string{"readers"}},
		},
	})
	mustCreate(t, rbac.ClusterRoleBindings().Create, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "gina-impersonates"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "impersonate-frank"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "gina"}},
	})
	mustCreate(t, rbac.ClusterRoleBindings().Create, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "readers-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "readers"}},
	})
	as := func(userName string, groups ...string) kubernetes.Interface {
		cfg := s.userConfig(t, "gina")
		cfg.Impersonate = rest.ImpersonationConfig{UserName: userName, Groups: groups}
		return kubernetes.NewForConfigOrDie(cfg)
	}
	eventually(t, "gina impersonates frank in readers", func() error {
		review, err := as("frank", "readers").AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationSelfReview, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if review.Status.UserInfo.Username != "frank" {
			return errorf("impersonated user is %q", review.Status.UserInfo.Username)
		}
		return nil
	})
	eventually(t, "frank in readers lists pods once the binding is indexed", func() error {
		_, err := as("frank", "readers").CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		return err
	})
	if _, err := as("frank").CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("frank without readers lists pods: got %v, want Forbidden", err)
	}
	if _, err := as("henry").CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("impersonating henry: got %v, want Forbidden", err)
	}
	if _, err := as("frank", "system:masters").CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("impersonating system:masters: got %v, want Forbidden", err)
	}
}

func TestBootstrapPolicyIsReconciledAndNodesAreNotBound(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	crb, err := s.client.RbacV1().ClusterRoleBindings().Get(ctx, "system:node", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(crb.Subjects) != 0 {
		t.Errorf("system:node binding has subjects %v; nodes must get their rights from the Node authorizer", crb.Subjects)
	}
	// An admin's change survives a restart; a deleted default comes back.
	view, err := s.client.RbacV1().ClusterRoles().Get(ctx, "system:basic-user", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	view.Rules = append(view.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}})
	if _, err := s.client.RbacV1().ClusterRoles().Update(ctx, view, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.client.RbacV1().ClusterRoles().Delete(ctx, "system:discovery", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.stop()
	again := startTestServer(t, s.dataDir, nil)
	basic, err := again.client.RbacV1().ClusterRoles().Get(ctx, "system:basic-user", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(basic.Rules) != len(view.Rules) {
		t.Errorf("system:basic-user rules %v after restart, want the admin's rule kept (%d rules)", basic.Rules, len(view.Rules))
	}
	if _, err := again.client.RbacV1().ClusterRoles().Get(ctx, "system:discovery", metav1.GetOptions{}); err != nil {
		t.Errorf("system:discovery not recreated: %v", err)
	}
}

func TestRoleRefIsImmutable(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	mustCreate(t, s.client.RbacV1().RoleBindings("default").Create, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "b"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "x"}},
	})
	patch := []byte(`{"roleRef":{"name":"edit"}}`)
	_, err := s.client.RbacV1().RoleBindings("default").Patch(ctx, "b", types.MergePatchType, patch, metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("changing roleRef: got %v, want Invalid", err)
	}
}

func authenticationv1SelfSubjectReview() authenticationv1.SelfSubjectReview {
	return authenticationv1.SelfSubjectReview{}
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

func sarFor(user string, groups []string, ns, verb, resource, name string) *authorizationv1.SubjectAccessReview {
	return &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: resource, Name: name},
	}}
}
