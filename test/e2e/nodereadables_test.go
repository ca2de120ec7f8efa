package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestNodeReadablesWithKubectl: with stock kubectl, a node lists what it may read through
// nodereadables, printed with the server's columns; another node and the admin are refused; the
// resource is in discovery and explained from OpenAPI.
func TestNodeReadablesWithKubectl(t *testing.T) {
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
	if out := s.kubectl(t, "api-resources", "--api-group", "node.idplane.io", "-o", "wide"); !regexp.MustCompile(`(?m)^nodereadables\s+node\.idplane\.io/v1alpha1\s+true\s+NodeReadable\s+list,watch`).MatchString(out) {
		t.Errorf("api-resources:\n%s", out)
	}
	if out := s.kubectl(t, "explain", "nodereadables.secret"); !strings.Contains(out, "GROUP:      node.idplane.io") {
		t.Errorf("explain nodereadables.secret:\n%s", out)
	}

	node1 := s.userKubeconfig(t, "system:node:node1", "system:nodes")
	node2 := s.userKubeconfig(t, "system:node:node2", "system:nodes")
	var out string
	var err error
	eventually(t, 10*time.Second, func() error {
		out, err = s.kubectlAs(node1, "get", "nodereadables", "-A", "--field-selector", "nodeName=node1")
		if err == nil && !regexp.MustCompile(`(?m)^default\s+secret\.db-password\s+Secret\s+node1$`).MatchString(out) {
			err = fmt.Errorf("node1's list has no line for its pod's secret:\n%s", out)
		}
		return err
	})
	if strings.Contains(out, "secret.other") || !regexp.MustCompile(`(?m)^NAMESPACE\s+NAME\s+KIND\s+NODE$`).MatchString(out) {
		t.Errorf("node1's list:\n%s", out)
	}
	if out, err := s.kubectlAs(node1, "get", "nodereadables", "-n", "default", "--field-selector", "nodeName=node1", "-o", "jsonpath={.items[?(@.secret)].secret.data.p}"); err != nil || out != "eA==" {
		t.Errorf("node1 reading the embedded secret: %q, %v", out, err)
	}
	for _, tc := range []struct {
		name, kubeconfig, want string
		args                   []string
	}{
		{"another node", node2, `cannot list resource "nodereadables"`, []string{"--field-selector", "nodeName=node1"}},
		{"no selector", node1, "field selector nodeName=node1", nil},
		{"the admin", s.Kubeconfig, `may not read the nodereadables of node "node1": only that node itself may`, []string{"--field-selector", "nodeName=node1"}},
	} {
		out, err := s.kubectlAs(tc.kubeconfig, append([]string{"get", "nodereadables", "-A"}, tc.args...)...)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("%s: %v\n%s\nwant it refused saying %q", tc.name, err, out, tc.want)
		}
	}
}
