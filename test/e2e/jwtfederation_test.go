package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// issuerDiscoveryConfig lets relying parties read cluster A's OIDC discovery anonymously.
const issuerDiscoveryConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
anonymous:
  enabled: true
  conditions:
  - path: /.well-known/openid-configuration
  - path: /openid/v1/jwks
`

// federationConfig is cluster B's JWT authenticator for cluster A's service-account tokens, as
// the README shows it, with usernames under prefix.
func federationConfig(issuerURL string, caPEM []byte, prefix, extraRule string) string {
	return `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: ` + issuerURL + `
    audiences: [cluster-b]
    audienceMatchPolicy: MatchAny
    certificateAuthority: |
      ` + strings.ReplaceAll(strings.TrimSpace(string(caPEM)), "\n", "\n      ") + `
  claimValidationRules:
  - expression: "int(claims.exp) - int(claims.iat) <= 3600"
    message: tokens of cluster A for cluster B live an hour at most` + extraRule + `
  claimMappings:
    username:
      claim: sub
      prefix: "` + prefix + `"
    groups:
      expression: "['cluster-a:system:serviceaccounts', 'cluster-a:system:serviceaccounts:' + claims['kubernetes.io'].namespace]"
    uid:
      expression: "claims['kubernetes.io'].serviceaccount.uid"
    extra:
    - key: cluster-a.example.com/pod-name
      valueExpression: "has(claims['kubernetes.io'].pod) ? [claims['kubernetes.io'].pod.name] : []"
  userValidationRules:
  - expression: "!user.username.startsWith('system:')"
    message: usernames of cluster A never take a system name of this cluster
  - expression: "user.groups.all(g, !g.startsWith('system:'))"
    message: groups of cluster A never take a system group of this cluster
`
}

type whoami struct {
	Status struct {
		UserInfo struct {
			Username string
			UID      string
			Groups   []string
			Extra    map[string][]string
		}
	}
}

// TestJWTFederation: cluster B accepts service-account tokens of cluster A through a JWT
// authenticator pointed at A's OIDC discovery; RBAC on B decides what A's workloads may do.
func TestJWTFederation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	aConfig := filepath.Join(dir, "authn-a.yaml")
	if err := os.WriteFile(aConfig, []byte(issuerDiscoveryConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startServer(t, "--authentication-config", aConfig)
	// Relying parties are anonymous: let them read discovery, as upstream's docs advise.
	a.kubectl(t, "create", "clusterrolebinding", "oidc-discovery-anonymous",
		"--clusterrole=system:service-account-issuer-discovery", "--group=system:unauthenticated")
	a.kubectl(t, "create", "namespace", "team")
	a.ensureServiceAccount(t, "team", "bot")

	caA, err := os.ReadFile(filepath.Join(a.dataDir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	bConfig := filepath.Join(dir, "authn-b.yaml")
	writeConfig := func(content string) {
		t.Helper()
		// Written aside and renamed into place, as config management does.
		if err := os.WriteFile(bConfig+".tmp", []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(bConfig+".tmp", bConfig); err != nil {
			t.Fatal(err)
		}
	}
	writeConfig(federationConfig(a.URL, caA, "cluster-a:", ""))
	b := startServer(t, "--authentication-config", bConfig)

	token := strings.TrimSpace(a.kubectl(t, "create", "token", "bot", "-n", "team", "--audience", "cluster-b", "--duration", "10m"))
	asBot := b.tokenKubeconfig(t, token)
	who := func() (whoami, error) {
		var w whoami
		out, err := b.kubectlAs(asBot, "auth", "whoami", "-o", "json")
		if err != nil {
			return w, fmt.Errorf("kubectl auth whoami on B: %v\n%s", err, out)
		}
		return w, json.Unmarshal([]byte(out), &w)
	}

	t.Run("B says who", func(t *testing.T) {
		var w whoami
		// B discovers A in the background from its start.
		eventually(t, 60*time.Second, func() (err error) { w, err = who(); return err })
		u := w.Status.UserInfo
		if u.Username != "cluster-a:system:serviceaccount:team:bot" || u.UID == "" {
			t.Errorf("user = %q (uid %q), want cluster-a:system:serviceaccount:team:bot with the account's UID", u.Username, u.UID)
		}
		want := []string{"cluster-a:system:serviceaccounts", "cluster-a:system:serviceaccounts:team", "system:authenticated"}
		if !slices.Equal(u.Groups, want) {
			t.Errorf("groups = %q, want %q", u.Groups, want)
		}
		if id := u.Extra["authentication.kubernetes.io/credential-id"]; len(id) != 1 || !strings.HasPrefix(id[0], "JTI=") {
			t.Errorf("credential ID = %q", id)
		}
	})

	t.Run("RBAC on B decides", func(t *testing.T) {
		out, err := b.kubectlAs(asBot, "get", "configmaps", "-n", "default")
		if err == nil || !strings.Contains(out, "Forbidden") || !strings.Contains(out, `User "cluster-a:system:serviceaccount:team:bot"`) {
			t.Fatalf("before a RoleBinding: %v\n%s", err, out)
		}
		b.kubectl(t, "create", "rolebinding", "cluster-a-team-view", "-n", "default",
			"--clusterrole=view", "--group=cluster-a:system:serviceaccounts:team")
		eventually(t, 30*time.Second, func() error {
			out, err := b.kubectlAs(asBot, "get", "configmaps", "-n", "default", "-o", "name")
			if err != nil {
				return fmt.Errorf("after the RoleBinding: %v\n%s", err, out)
			}
			return nil
		})
		// The binding reaches no further than it says.
		if out, err := b.kubectlAs(asBot, "get", "secrets", "-n", "default"); err == nil || !strings.Contains(out, "Forbidden") {
			t.Errorf("secrets with view: %v\n%s", err, out)
		}
	})

	t.Run("tokens B must refuse", func(t *testing.T) {
		for name, args := range map[string][]string{
			"A's own audience":  {"create", "token", "bot", "-n", "team"},
			"another audience":  {"create", "token", "bot", "-n", "team", "--audience", "cluster-c"},
			"longer than rules": {"create", "token", "bot", "-n", "team", "--audience", "cluster-b", "--duration", "2h"},
		} {
			tok := strings.TrimSpace(a.kubectl(t, args...))
			out, err := b.kubectlAs(b.tokenKubeconfig(t, tok), "auth", "whoami")
			if err == nil || !strings.Contains(out, "Unauthorized") {
				t.Errorf("%s: whoami on B = %v\n%s", name, err, out)
			}
		}
		// B's own admin still is who it was: the JWT issuer does not shadow B's own tokens.
		own := strings.TrimSpace(b.kubectl(t, "create", "token", "default"))
		if out, err := b.kubectlAs(b.tokenKubeconfig(t, own), "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); err != nil || out != "system:serviceaccount:default:default" {
			t.Errorf("B's own token: %q, %v", out, err)
		}
	})

	// A pod-bound token: A stops honouring it when the pod goes; B cannot see A's pods, so the
	// token works on B until it expires (10 minutes here; the README says so).
	t.Run("deleted pod", func(t *testing.T) {
		a.kubectl(t, "apply", "-n", "team", "-f", manifest(t, `apiVersion: v1
kind: Pod
metadata:
  name: worker
spec:
  serviceAccountName: bot
  automountServiceAccountToken: false
  containers:
  - name: c
    image: example.invalid/worker
`))
		podToken := strings.TrimSpace(a.kubectl(t, "create", "token", "bot", "-n", "team", "--bound-object-kind", "Pod",
			"--bound-object-name", "worker", "--audience", "cluster-b", "--audience", a.URL, "--duration", "10m"))
		onA, onB := a.tokenKubeconfig(t, podToken), b.tokenKubeconfig(t, podToken)
		if out, err := a.kubectlAs(onA, "auth", "whoami"); err != nil {
			t.Fatalf("pod token on A while the pod lives: %v\n%s", err, out)
		}
		a.kubectl(t, "delete", "pod", "worker", "-n", "team", "--grace-period=0", "--force", "--wait=false")
		eventually(t, 30*time.Second, func() error {
			if out, err := a.kubectlAs(onA, "auth", "whoami"); err == nil {
				return fmt.Errorf("A still accepts the token of its deleted pod:\n%s", out)
			}
			return nil
		})
		out, err := b.kubectlAs(onB, "auth", "whoami", "-o", "json")
		if err != nil {
			t.Fatalf("B refused the deleted pod's token before its expiry: %v\n%s", err, out)
		}
		var w whoami
		if err := json.Unmarshal([]byte(out), &w); err != nil {
			t.Fatal(err)
		}
		if pod := w.Status.UserInfo.Extra["cluster-a.example.com/pod-name"]; !slices.Equal(pod, []string{"worker"}) {
			t.Errorf("pod-name extra = %q, want [worker]", pod)
		}
	})

	t.Run("reload", func(t *testing.T) {
		failures := func() string {
			return metricLines(t, b, "apiserver_authentication_config_controller_automatic_reloads_total", `status="failure"`)
		}
		// A file that does not validate is refused and counted; B keeps serving the old one.
		writeConfig(federationConfig(a.URL, caA, "cluster-a:", "\n  - expression: \"claims.sub +\"\n    message: broken"))
		eventually(t, 30*time.Second, func() error {
			if failures() == "" {
				return fmt.Errorf("no failed reload counted")
			}
			return nil
		})
		if w, err := who(); err != nil || w.Status.UserInfo.Username != "cluster-a:system:serviceaccount:team:bot" {
			t.Fatalf("after a refused file: %+v, %v", w.Status.UserInfo, err)
		}
		// A valid one is applied without a restart.
		writeConfig(federationConfig(a.URL, caA, "east:", ""))
		eventually(t, 60*time.Second, func() error {
			w, err := who()
			if err != nil {
				return err
			}
			if got := w.Status.UserInfo.Username; got != "east:system:serviceaccount:team:bot" {
				return fmt.Errorf("username %q, want the new prefix", got)
			}
			return nil
		})
		if metricLines(t, b, "apiserver_authentication_config_controller_automatic_reloads_total", `status="success"`) == "" {
			t.Error("no successful reload counted")
		}
		// The library's per-issuer metrics are served.
		for _, name := range []string{
			"apiserver_authentication_jwt_authenticator_jwks_fetch_last_timestamp_seconds",
			"apiserver_authentication_jwt_authenticator_latency_seconds_count",
		} {
			if metricLines(t, b, name, `result="success"`) == "" {
				t.Errorf("no %s{result=\"success\"} on B's /metrics", name)
			}
		}
	})
}

// metricLines returns the lines of s's /metrics for metric that contain label.
func metricLines(t *testing.T, s *server, metric, label string) string {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(s.kubectl(t, "get", "--raw", "/metrics"), "\n") {
		if strings.HasPrefix(l, metric+"{") && strings.Contains(l, label) {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}
