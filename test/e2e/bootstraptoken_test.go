package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

var bootstrapTokenForm = regexp.MustCompile(`^([a-z0-9]{6})\.[a-z0-9]{16}$`)

// tokenCreate runs `idplane token create args` and returns its stdout and stderr.
func tokenCreate(t *testing.T, dir string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(idplaneBin, append([]string{"token", "create"}, args...)...)
	cmd.Dir = dir
	// kubectl's loading rules apply: no $KUBECONFIG or ~/.kube/config of the developer's.
	cmd.Env = append(withoutEnv(os.Environ(), "KUBECONFIG", "HOME"), "HOME="+dir)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// TestBootstrapTokenCreate: `idplane token create` prints only a bootstrap kubeconfig, with which
// stock kubectl is the bootstrap identity, and that identity may not read secrets.
func TestBootstrapTokenCreate(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	stdout, stderr, err := tokenCreate(t, t.TempDir(), "--kubeconfig", s.Kubeconfig, "--ttl", "1h")
	if err != nil {
		t.Fatalf("idplane token create: %v\nstderr: %s", err, stderr)
	}
	cfg, err := clientcmd.Load([]byte(stdout))
	if err != nil {
		t.Fatalf("stdout is not a kubeconfig: %v\n%s", err, stdout)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || cfg.Clusters[ctx.Cluster] == nil || cfg.AuthInfos[ctx.AuthInfo] == nil {
		t.Fatalf("kubeconfig without a complete current context:\n%s", stdout)
	}
	ca, err := os.ReadFile(filepath.Join(s.dataDir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	cluster, user := cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo]
	if cluster.Server != s.URL || !bytes.Equal(cluster.CertificateAuthorityData, ca) {
		t.Errorf("cluster server %q (want %q), CA from the admin kubeconfig: %v", cluster.Server, s.URL, bytes.Equal(cluster.CertificateAuthorityData, ca))
	}
	m := bootstrapTokenForm.FindStringSubmatch(user.Token)
	if m == nil || len(user.ClientCertificateData) > 0 {
		t.Fatalf("user %+v: want a bootstrap token only", user)
	}
	id := m[1]
	bootstrap := filepath.Join(t.TempDir(), "bootstrap.kubeconfig")
	if err := os.WriteFile(bootstrap, []byte(stdout), 0o600); err != nil {
		t.Fatal(err)
	}

	// The server knows the token once its informer has seen the secret: at once, give or take.
	eventually(t, 15*time.Second, func() error {
		out, err := s.kubectlAs(bootstrap, "auth", "whoami")
		if err != nil || !strings.Contains(out, "system:bootstrap:"+id) || !strings.Contains(out, "system:bootstrappers") {
			return fmt.Errorf("kubectl auth whoami: %v\n%s", err, out)
		}
		return nil
	})
	out, err := s.kubectlAs(bootstrap, "get", "secrets", "-n", "kube-system")
	if err == nil || !strings.Contains(out, "Forbidden") || !strings.Contains(out, "system:bootstrap:"+id) {
		t.Errorf("kubectl get secrets -n kube-system as the bootstrap identity: %v\n%s", err, out)
	}
	// The secret is there for the admin, with the expiration the ttl set.
	exp := s.kubectl(t, "get", "secret", "-n", "kube-system", "bootstrap-token-"+id, "-o", "jsonpath={.data.expiration}")
	if exp == "" {
		t.Error("token secret without expiration")
	}
}

// Errors go to stderr with exit status 1 and nothing on stdout.
func TestBootstrapTokenCreateErrors(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the idplane binary; skipped in -short mode")
	}
	garbage := filepath.Join(t.TempDir(), "garbage.kubeconfig")
	if err := os.WriteFile(garbage, []byte("{not a kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no kubeconfig found", nil, "pass --kubeconfig or set KUBECONFIG"},
		{"bad kubeconfig", []string{"--kubeconfig", garbage}, "loading admin kubeconfig"},
		{"negative ttl", []string{"--kubeconfig", garbage, "--ttl", "-1h"}, "negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, err := tokenCreate(t, t.TempDir(), tc.args...)
			if code := exitCode(err); code != 1 {
				t.Errorf("exit status %d, want 1", code)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if stderr == "" || !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q, want an error naming %q", stderr, tc.want)
			}
		})
	}
}
