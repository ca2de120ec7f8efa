package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestNodeAuthorizer checks, with stock kubectl, that a node reads only what its pods use: through
// `auth can-i --as system:node:...`, through the node's own client certificate, and through the
// admin's path endpoint.
func TestNodeAuthorizer(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.ensureServiceAccount(t, "default", "default")
	s.kubectl(t, "create", "secret", "generic", "db-password", "--from-literal=p=x")
	s.kubectl(t, "create", "secret", "generic", "other", "--from-literal=p=y")
	s.kubectl(t, "apply", "-f", manifest(t, `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  nodeName: node1
  containers:
  - name: c
    image: nginx:1.27
    env: [{name: P, valueFrom: {secretKeyRef: {name: db-password, key: p}}}]
`))

	asNode := func(node string) []string {
		return []string{"--as", "system:node:" + node, "--as-group", "system:nodes"}
	}
	cases := []struct {
		name     string
		args     []string
		wantOut  string
		wantCode int
	}{
		{"its pod's secret", append([]string{"get", "secret/db-password"}, asNode("node1")...), "yes\n", 0},
		{"another node", append([]string{"get", "secret/db-password"}, asNode("node2")...), "no - Node: no relationship found between node \"node2\" and secret \"default/db-password\"\n", 1},
		{"a secret no pod uses", append([]string{"get", "secret/other"}, asNode("node1")...), "no - Node: no relationship found between node \"node1\" and secret \"default/other\"\n", 1},
		{"every pod, not just its own", append([]string{"list", "pods", "--all-namespaces"}, asNode("node1")...), "no", 1},
		{"group system:nodes without the name prefix is not a node", []string{"get", "secret/db-password", "--as", "node1", "--as-group", "system:nodes"}, "no\n", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := s.canI(s.Kubeconfig, tc.args...)
			if !strings.HasPrefix(stdout, tc.wantOut) || code != tc.wantCode {
				t.Errorf("auth can-i %s: exit %d, stdout %q (stderr %q); want exit %d, %q",
					strings.Join(tc.args, " "), code, stdout, stderr, tc.wantCode, tc.wantOut)
			}
		})
	}

	node1 := s.userKubeconfig(t, "system:node:node1", "system:nodes")
	if out, err := s.kubectlAs(node1, "get", "secret", "db-password", "-o", "jsonpath={.data.p}"); err != nil || out != "eA==" {
		t.Errorf("node1 reading its pod's secret: %q, %v", out, err)
	}
	if out, err := s.kubectlAs(node1, "get", "secrets"); err == nil || !strings.Contains(out, "forbidden") {
		t.Errorf("node1 listing secrets: %q, %v; want forbidden", out, err)
	}

	path := s.kubectl(t, "get", "--raw", "/debug/node-authorizer/path?node=node1&kind=secret&namespace=default&name=db-password")
	if want := `{"node":"node1","allowed":true,"path":["secret default/db-password","pod default/web","node node1"]}`; strings.TrimSpace(path) != want {
		t.Errorf("path endpoint: %s, want %s", path, want)
	}
}

// TestServerRefusesNodeModeWithoutNodeRestriction: node isolation cannot be switched off by an
// admission flag; the server says why it will not start.
func TestServerRefusesNodeModeWithoutNodeRestriction(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the idplane binary; skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, idplaneBin, "server", "--data-dir", t.TempDir(), "--secure-port=0",
		"--disable-admission-plugins=NodeRestriction")
	out, err := cmd.CombinedOutput()
	if exitCode(err) != 1 || !strings.Contains(string(out), "--authorization-mode Node needs the NodeRestriction admission plugin") {
		t.Fatalf("idplane server with NodeRestriction disabled: exit %d, output:\n%s", exitCode(err), out)
	}
}
