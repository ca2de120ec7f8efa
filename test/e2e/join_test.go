package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

var joinLine = regexp.MustCompile(`^idplane agent --server (https://\S+) --token ([a-z0-9]{6})\.[a-z0-9]{16} --discovery-token-ca-cert-hash sha256:[0-9a-f]{64} --node-name (\S+)\n$`)

// TestJoinByTokenAndHash follows the README: `idplane token create --print-join-command` prints
// the one line that joins a node; the agent run with it finds and verifies the cluster through
// the signed, anonymously readable cluster-info and becomes the node. An agent given another CA's
// hash refuses the cluster; an anonymous client reads cluster-info and nothing else; a deleted
// token's signature goes.
func TestJoinByTokenAndHash(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	stdout, stderr, err := tokenCreate(t, t.TempDir(), "--kubeconfig", s.Kubeconfig, "--ttl", "1h", "--node-name", "node-j", "--print-join-command")
	if err != nil {
		t.Fatalf("idplane token create --print-join-command: %v\nstderr: %s", err, stderr)
	}
	m := joinLine.FindStringSubmatch(stdout)
	if m == nil || m[1] != s.URL || m[3] != "node-j" {
		t.Fatalf("join command %q: want one line naming %s, a token, the CA hash and node-j", stdout, s.URL)
	}
	id := m[2]
	joinArgs := strings.Fields(stdout)[1:]

	// A client without credentials (plain HTTPS: stock kubectl prompts for a password when its
	// kubeconfig has no user) reads cluster-info, signed with the token, and nothing else.
	ca, err := os.ReadFile(filepath.Join(s.dataDir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	anonymous, err := rest.HTTPClientFor(&rest.Config{Host: s.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}})
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, body string) (int, string) {
		req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if method == http.MethodPatch {
			req.Header.Set("Content-Type", "application/merge-patch+json")
		}
		resp, err := anonymous.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	const clusterInfo = "/api/v1/namespaces/kube-public/configmaps/cluster-info"
	eventually(t, 30*time.Second, func() error {
		if code, body := do(http.MethodGet, clusterInfo, ""); code != http.StatusOK || !strings.Contains(body, `"jws-kubeconfig-`+id+`"`) {
			return fmt.Errorf("anonymous GET of cluster-info: %d %s", code, body)
		}
		return nil
	})
	for _, r := range []struct{ method, path, body string }{
		{http.MethodGet, "/api/v1/namespaces/kube-public/configmaps", ""},
		{http.MethodGet, "/api/v1/namespaces/kube-public/configmaps?watch=1&fieldSelector=metadata.name%3Dcluster-info", ""},
		{http.MethodGet, "/api/v1/namespaces/kube-public/configmaps/kube-root-ca.crt", ""},
		{http.MethodGet, "/api/v1/namespaces/kube-system/secrets/bootstrap-token-" + id, ""},
		{http.MethodDelete, clusterInfo, ""},
		{http.MethodPatch, clusterInfo, `{"data":{"kubeconfig":"planted"}}`},
	} {
		if code, body := do(r.method, r.path, r.body); code != http.StatusUnauthorized {
			t.Errorf("anonymous %s %s: %d %s, want 401", r.method, r.path, code, body)
		}
	}

	// A man in the middle could hand out a cluster-info signed with a stolen token and naming
	// its own CA; an agent pinning the real CA refuses it. Here: a hash of another key.
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	wrong := append([]string{}, joinArgs...)
	for i := range wrong {
		if strings.HasPrefix(wrong[i], "sha256:") {
			wrong[i] = "sha256:" + strings.Repeat("0", 64)
		}
	}
	out, err := exec.CommandContext(ctx, idplaneBin, append(wrong, "--root-dir", t.TempDir(), "--node-ip", "127.0.0.1", "--hostname", "node-j")...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "matches none of the CA certificate hashes given") {
		t.Errorf("agent with another CA's hash: %v\n%s\nwant refused for the CA hash", err, tailString(string(out), 20))
	}
	if out, err := s.kubectlErr("get", "csr", "-o", "name"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("the refusing agent left CSRs: %v\n%s", err, out)
	}

	a := &agent{rootDir: t.TempDir(), manifests: t.TempDir(), logPath: filepath.Join(t.TempDir(), "agent.log")}
	a.args = append(joinArgs, "--root-dir", a.rootDir, "--pod-manifest-path", a.manifests, "--node-ip", "127.0.0.1", "--hostname", "node-j", "-v=2")
	t.Cleanup(func() {
		a.kill()
		if t.Failed() {
			t.Logf("agent node-j log (last lines):\n%s", tailFile(a.logPath, 60))
		}
	})
	a.start(t)
	eventually(t, 60*time.Second, func() error {
		out, err := s.kubectlAs(a.kubeconfig(), "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
		if err != nil || out != "system:node:node-j" {
			return fmt.Errorf("kubectl auth whoami with the node's kubeconfig: %v\n%s", err, out)
		}
		return nil
	})
	eventually(t, 60*time.Second, func() error {
		_, err := s.kubectlErr("get", "node", "node-j")
		return err
	})

	s.kubectl(t, "delete", "secret", "-n", "kube-system", "bootstrap-token-"+id, "--ignore-not-found")
	eventually(t, 30*time.Second, func() error {
		out := s.kubectl(t, "get", "configmap", "cluster-info", "-n", "kube-public", "-o", "jsonpath={.data}")
		if strings.Contains(out, "jws-kubeconfig-"+id) {
			return fmt.Errorf("cluster-info still signed with the deleted token: %s", out)
		}
		return nil
	})
}

func tailString(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
