package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// policyTimeout bounds how long a new binding may take to reach the RBAC index, which follows
// the store through a watch.
const policyTimeout = 15 * time.Second

// canI runs `kubectl auth can-i` with kubeconfig: kubectl prints yes and exits 0, or prints no
// and exits 1; warnings go to stderr.
func (s *server) canI(kubeconfig string, args ...string) (stdout, stderr string, code int) {
	stdout, stderr, err := s.run(kubeconfig, append([]string{"auth", "can-i"}, args...)...)
	if err != nil {
		return stdout, stderr, exitCode(err)
	}
	return stdout, stderr, 0
}

// awaitAllowed waits until `kubectl auth can-i args` answers yes for kubeconfig's user, so that
// the bindings a test just created are in force before it relies on them.
func (s *server) awaitAllowed(t *testing.T, kubeconfig string, args ...string) {
	t.Helper()
	eventually(t, policyTimeout, func() error {
		if out, errOut, code := s.canI(kubeconfig, args...); out != "yes\n" || code != 0 {
			return fmt.Errorf("kubectl auth can-i %s: exit %d, output %q, stderr %q", strings.Join(args, " "), code, out, errOut)
		}
		return nil
	})
}

// bindAliceAndReaders gives user alice the view role in namespace team and group readers the
// view role everywhere, with kubectl's own commands.
func bindAliceAndReaders(t *testing.T, s *server) {
	t.Helper()
	s.kubectl(t, "create", "namespace", "team")
	if out := s.kubectl(t, "create", "rolebinding", "alice-view", "--clusterrole=view", "--user=alice", "-n", "team"); out != "rolebinding.rbac.authorization.k8s.io/alice-view created\n" {
		t.Fatalf("create rolebinding printed %q", out)
	}
	if out := s.kubectl(t, "create", "clusterrolebinding", "readers-view", "--clusterrole=view", "--group=readers"); out != "clusterrolebinding.rbac.authorization.k8s.io/readers-view created\n" {
		t.Fatalf("create clusterrolebinding printed %q", out)
	}
	s.awaitAllowed(t, s.Kubeconfig, "get", "pods", "-n", "team", "--as", "alice")
	s.awaitAllowed(t, s.Kubeconfig, "get", "pods", "-n", "team", "--as", "bob", "--as-group", "readers")
}

func TestRBACCanI(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	bindAliceAndReaders(t, s)
	alice := s.userKubeconfig(t, "alice")

	t.Run("list as admin", func(t *testing.T) {
		out := s.kubectl(t, "auth", "can-i", "--list")
		for _, want := range []string{
			`(?m)^Resources\s+Non-Resource URLs\s+Resource Names\s+Verbs$`,
			`(?m)^\*\.\*\s+\[\]\s+\[\]\s+\[\*\]$`,
			`(?m)^\s+\[\*\]\s+\[\]\s+\[\*\]$`,
		} {
			if !regexp.MustCompile(want).MatchString(out) {
				t.Errorf("admin's can-i --list has no line matching %s:\n%s", want, out)
			}
		}
	})

	t.Run("list as alice", func(t *testing.T) {
		out, errOut, code := s.canI(alice, "--list", "-n", "team")
		if code != 0 || errOut != "" {
			t.Fatalf("alice's can-i --list -n team: exit %d, stderr %q\n%s", code, errOut, out)
		}
		for _, want := range []string{
			`(?m)^pods\s+\[\]\s+\[\]\s+\[get list watch\]$`,
			`(?m)^pods/status\s+\[\]\s+\[\]\s+\[get list watch\]$`,
			`(?m)^configmaps\s+\[\]\s+\[\]\s+\[get list watch\]$`,
			// system:basic-user, bound to every authenticated user.
			`(?m)^selfsubjectaccessreviews\.authorization\.k8s\.io\s+\[\]\s+\[\]\s+\[create\]$`,
		} {
			if !regexp.MustCompile(want).MatchString(out) {
				t.Errorf("alice's can-i --list -n team has no line matching %s:\n%s", want, out)
			}
		}
		if regexp.MustCompile(`(?m)^secrets`).MatchString(out) {
			t.Errorf("alice's can-i --list -n team lists secrets, which view does not grant:\n%s", out)
		}

		// The RoleBinding reaches no further than its namespace.
		out, errOut, code = s.canI(alice, "--list", "-n", "default")
		if code != 0 || errOut != "" {
			t.Fatalf("alice's can-i --list -n default: exit %d, stderr %q\n%s", code, errOut, out)
		}
		if regexp.MustCompile(`(?m)^pods\s`).MatchString(out) {
			t.Errorf("alice's can-i --list -n default lists pods, granted only in team:\n%s", out)
		}
	})

	for _, c := range []struct {
		name       string
		kubeconfig string
		args       []string
		want       string
	}{
		{"alice may get pods", s.Kubeconfig, []string{"get", "pods", "-n", "team", "--as", "alice"}, "yes\n"},
		{"alice may not get secrets", s.Kubeconfig, []string{"get", "secrets", "-n", "team", "--as", "alice"}, "no\n"},
		{"alice may not create pods", s.Kubeconfig, []string{"create", "pods", "-n", "team", "--as", "alice"}, "no\n"},
		{"alice may not get pods elsewhere", s.Kubeconfig, []string{"get", "pods", "-n", "default", "--as", "alice"}, "no\n"},
		{"alice may get pod status", s.Kubeconfig, []string{"get", "pods", "--subresource=status", "-n", "team", "--as", "alice"}, "yes\n"},
		{"alice may not update pod status", s.Kubeconfig, []string{"update", "pods", "--subresource=status", "-n", "team", "--as", "alice"}, "no\n"},
		{"alice asking for herself", alice, []string{"get", "pods", "-n", "team"}, "yes\n"},
		{"alice asking for herself about secrets", alice, []string{"get", "secrets", "-n", "team"}, "no\n"},
		{"bob in readers may get pods", s.Kubeconfig, []string{"get", "pods", "-n", "team", "--as", "bob", "--as-group", "readers"}, "yes\n"},
		{"bob in readers may list pods everywhere", s.Kubeconfig, []string{"list", "pods", "--all-namespaces", "--as", "bob", "--as-group", "readers"}, "yes\n"},
		{"bob alone may not get pods", s.Kubeconfig, []string{"get", "pods", "-n", "team", "--as", "bob"}, "no\n"},
		{"alice may read the version", s.Kubeconfig, []string{"get", "/version", "--as", "alice"}, "yes\n"},
		{"alice may not read metrics", s.Kubeconfig, []string{"get", "/metrics", "--as", "alice"}, "no\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := s.canI(c.kubeconfig, c.args...)
			wantCode := 0
			if c.want == "no\n" {
				wantCode = 1
			}
			if out != c.want || code != wantCode || errOut != "" {
				t.Errorf("kubectl auth can-i %s: exit %d, output %q, stderr %q; want exit %d, output %q",
					strings.Join(c.args, " "), code, out, errOut, wantCode, c.want)
			}
		})
	}

	t.Run("subject access review", func(t *testing.T) {
		for _, c := range []struct {
			name, resource string
			allowed        bool
			reason         string
		}{
			{"allowed", "pods", true, `RBAC: allowed by RoleBinding "alice-view/team" of ClusterRole "view" to User "alice"`},
			{"denied", "secrets", false, ""},
		} {
			t.Run(c.name, func(t *testing.T) {
				out := s.kubectl(t, "create", "-o", "yaml", "-f", manifest(t, `apiVersion: authorization.k8s.io/v1
kind: SubjectAccessReview
spec:
  user: alice
  resourceAttributes:
    namespace: team
    verb: get
    resource: `+c.resource+`
`))
				if !regexp.MustCompile(`(?m)^  allowed: ` + fmt.Sprint(c.allowed) + `$`).MatchString(out) {
					t.Errorf("SubjectAccessReview of get %s does not show allowed: %v:\n%s", c.resource, c.allowed, out)
				}
				// Decoded rather than matched: the YAML printer may fold a long reason across lines.
				var sar authorizationv1.SubjectAccessReview
				if err := yaml.Unmarshal([]byte(out), &sar); err != nil {
					t.Fatalf("decoding the SubjectAccessReview kubectl printed: %v\n%s", err, out)
				}
				if sar.Status.Allowed != c.allowed || sar.Status.Denied || sar.Status.Reason != c.reason {
					t.Errorf("SubjectAccessReview status = %+v, want allowed %v, reason %q", sar.Status, c.allowed, c.reason)
				}
				if sar.Spec.User != "alice" || sar.Spec.ResourceAttributes == nil || sar.Spec.ResourceAttributes.Resource != c.resource {
					t.Errorf("SubjectAccessReview spec came back as %+v", sar.Spec)
				}
			})
		}
	})
}

func TestRBACImpersonation(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	bindAliceAndReaders(t, s)
	s.ensureServiceAccount(t, "team", "default")
	s.kubectl(t, "run", "web", "--image=nginx", "-n", "team")
	s.kubectl(t, "create", "secret", "generic", "creds", "--from-literal=password=hunter2", "-n", "team")
	// carol may impersonate alice and nobody else.
	s.kubectl(t, "create", "clusterrole", "impersonate-alice", "--verb=impersonate", "--resource=users", "--resource-name=alice")
	s.kubectl(t, "create", "clusterrolebinding", "carol-impersonates-alice", "--clusterrole=impersonate-alice", "--user=carol")
	s.awaitAllowed(t, s.Kubeconfig, "impersonate", "users/alice", "--as", "carol")
	jane := s.userKubeconfig(t, "jane", "developers")
	carol := s.userKubeconfig(t, "carol")

	t.Run("admin as alice gets pods", func(t *testing.T) {
		if out := s.kubectl(t, "--as", "alice", "get", "pods", "-n", "team", "-o", "name"); out != "pod/web\n" {
			t.Errorf("get pods as alice printed %q, want pod/web", out)
		}
	})

	t.Run("admin as alice is forbidden secrets", func(t *testing.T) {
		out, err := s.kubectlErr("--as", "alice", "get", "secrets", "-n", "team")
		want := `Error from server (Forbidden): secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in the namespace "team"`
		if exitCode(err) != 1 || !strings.Contains(out, want) {
			t.Errorf("get secrets as alice (exit %d):\n%s\nwant it to contain %s", exitCode(err), out, want)
		}
	})

	t.Run("admin as bob in readers", func(t *testing.T) {
		if out := s.kubectl(t, "--as", "bob", "--as-group", "readers", "get", "pods", "-A", "-o", "name"); out != "pod/web\n" {
			t.Errorf("get pods -A as bob in readers printed %q, want pod/web", out)
		}
	})

	t.Run("jane may not impersonate", func(t *testing.T) {
		out, err := s.kubectlAs(jane, "--as", "alice", "get", "pods", "-n", "team")
		// With constrained impersonation (beta, on by default since 1.36) the first mode tried
		// for a user who never impersonated is user-info, and its refusal is the one reported.
		want := `Error from server (Forbidden): pods is forbidden: User "jane" cannot impersonate-on:user-info:list resource "pods" in API group "" in the namespace "team"`
		if exitCode(err) != 1 || !strings.Contains(out, want) {
			t.Errorf("jane getting pods as alice (exit %d):\n%s\nwant it to contain %s", exitCode(err), out, want)
		}
	})

	t.Run("carol may impersonate alice only", func(t *testing.T) {
		if out, err := s.kubectlAs(carol, "--as", "alice", "get", "pods", "-n", "team", "-o", "name"); err != nil || out != "pod/web\n" {
			t.Errorf("carol getting pods as alice: err %v, output %q, want pod/web", err, out)
		}
		// Refusals now come from legacy impersonation, the mode that last worked for carol and
		// so the first one tried.
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--as", "bob"}, `users "bob" is forbidden: User "carol" cannot impersonate resource "users" in API group "" at the cluster scope`},
			{[]string{"--as", "alice", "--as-group", "readers"}, `groups "readers" is forbidden: User "carol" cannot impersonate resource "groups" in API group "" at the cluster scope`},
		} {
			out, err := s.kubectlAs(carol, append(c.args, "get", "pods", "-n", "team")...)
			if exitCode(err) != 1 || !strings.Contains(out, c.want) {
				t.Errorf("carol getting pods %s (exit %d):\n%s\nwant it to contain %s", strings.Join(c.args, " "), exitCode(err), out, c.want)
			}
		}
	})

	t.Run("whoami without bindings", func(t *testing.T) {
		// system:basic-user lets every authenticated user review itself.
		out, err := s.kubectlAs(jane, "auth", "whoami")
		if err != nil {
			t.Fatalf("jane's kubectl auth whoami: %v\n%s", err, out)
		}
		for _, want := range []string{`(?m)^Username\s+jane$`, `(?m)^Groups\s+\[developers system:authenticated\]$`} {
			if !regexp.MustCompile(want).MatchString(out) {
				t.Errorf("jane's whoami has no line matching %s:\n%s", want, out)
			}
		}
	})

	t.Run("whoami as alice in readers", func(t *testing.T) {
		out := s.kubectl(t, "auth", "whoami", "--as", "alice", "--as-group", "readers")
		for _, want := range []string{`(?m)^Username\s+alice$`, `(?m)^Groups\s+\[readers system:authenticated\]$`} {
			if !regexp.MustCompile(want).MatchString(out) {
				t.Errorf("whoami as alice in readers has no line matching %s:\n%s", want, out)
			}
		}
	})
}

func TestRBACEscalation(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.kubectl(t, "create", "namespace", "team")
	// ops may create role bindings in team and holds nothing else.
	s.kubectl(t, "create", "role", "binder", "--verb=create", "--resource=rolebindings", "-n", "team")
	s.kubectl(t, "create", "rolebinding", "ops-binder", "--role=binder", "--user=ops", "-n", "team")
	ops := s.userKubeconfig(t, "ops")
	s.awaitAllowed(t, ops, "create", "rolebindings", "-n", "team")
	grantAdmin := []string{"create", "rolebinding", "x", "--clusterrole=admin", "--user=z", "-n", "team"}

	t.Run("refused", func(t *testing.T) {
		out, err := s.kubectlAs(ops, grantAdmin...)
		// kubectl create rolebinding wraps the server's Forbidden status in its own words.
		want := `error: failed to create rolebinding: rolebindings.rbac.authorization.k8s.io "x" is forbidden: user "ops" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:`
		if exitCode(err) != 1 || !strings.Contains(out, want) {
			t.Fatalf("ops binding admin (exit %d):\n%s\nwant it to contain %s", exitCode(err), out, want)
		}
		// secrets is one of the many rules of admin that ops lacks.
		if !regexp.MustCompile(`(?m)^\{APIGroups:\[""\], Resources:\["secrets"\], Verbs:\[.*"get".*\]\}$`).MatchString(out) {
			t.Errorf("the refusal does not list the missing secrets rule:\n%s", out)
		}
		if out, err := s.kubectlErr("get", "rolebinding", "x", "-n", "team"); err == nil || !strings.Contains(out, "(NotFound)") {
			t.Errorf("the refused rolebinding exists: err %v, output:\n%s", err, out)
		}
	})

	t.Run("allowed with bind", func(t *testing.T) {
		s.kubectl(t, "create", "role", "bind-admin", "--verb=bind", "--resource=clusterroles", "--resource-name=admin", "-n", "team")
		s.kubectl(t, "create", "rolebinding", "ops-bind-admin", "--role=bind-admin", "--user=ops", "-n", "team")
		s.awaitAllowed(t, ops, "bind", "clusterroles/admin", "-n", "team")
		if out, err := s.kubectlAs(ops, grantAdmin...); err != nil || out != "rolebinding.rbac.authorization.k8s.io/x created\n" {
			t.Fatalf("ops binding admin with bind on it: err %v, output:\n%s", err, out)
		}
		if got := s.kubectl(t, "get", "rolebinding", "x", "-n", "team", "-o", "jsonpath={.roleRef.kind}/{.roleRef.name} {.subjects[0].name}"); got != "ClusterRole/admin z" {
			t.Errorf("rolebinding x = %q, want ClusterRole/admin bound to z", got)
		}
		// bind on admin says nothing about edit.
		out, err := s.kubectlAs(ops, "create", "rolebinding", "y", "--clusterrole=edit", "--user=z", "-n", "team")
		if exitCode(err) != 1 || !strings.Contains(out, "attempting to grant RBAC permissions not currently held") {
			t.Errorf("ops binding edit (exit %d):\n%s\nwant an escalation refusal", exitCode(err), out)
		}
	})
}
