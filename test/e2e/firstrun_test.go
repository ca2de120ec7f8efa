package e2e

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// TestRestartKeepsUsersAndTokens: what a newcomer set up survives a restart on another port
// (--secure-port 0): the user and context they added to admin.kubeconfig with kubectl config,
// and the service-account tokens issued before (the default issuer is recorded in the data
// directory). A token of an issuer the server no longer accepts is refused, and at -v=2 the
// log says why.
func TestRestartKeepsUsersAndTokens(t *testing.T) {
	s := startServer(t)
	s.kubectl(t, "create", "serviceaccount", "bot")
	token := strings.TrimSpace(s.kubectl(t, "create", "token", "bot"))
	// A user and context of the newcomer's own, in the admin kubeconfig. (That a chosen current
	// context stays is internal/kubeconfig's test: the harness reads the current context.)
	s.kubectl(t, "config", "set-credentials", "alice", "--token", "alice-token")
	s.kubectl(t, "config", "set-context", "alice", "--cluster", "idplane", "--user", "alice", "--namespace", "team")
	firstURL := s.URL

	s.restart(t)
	if s.URL == firstURL {
		t.Logf("the restart got the same port again (%s); the test still checks the kubeconfig", s.URL)
	}
	cfg, err := clientcmd.LoadFromFile(s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if u := cfg.AuthInfos["alice"]; u == nil || u.Token != "alice-token" {
		t.Errorf("user alice after the restart: %+v", u)
	}
	if c := cfg.Contexts["alice"]; c == nil || c.Namespace != "team" || c.AuthInfo != "alice" {
		t.Errorf("context alice after the restart: %+v", c)
	}
	if c := cfg.Clusters["idplane"]; c == nil || c.Server != s.URL {
		t.Errorf("cluster idplane after the restart: %+v, want server %s", c, s.URL)
	}
	if out, err := s.kubectlErr("--context", "alice", "auth", "whoami"); !strings.Contains(out, "Unauthorized") {
		t.Errorf("whoami in context alice (a token the server does not know): %v\n%s", err, out)
	}

	whoamiWithToken := func() (string, error) {
		return s.kubectlAs(os.DevNull, "--server", s.URL, "--certificate-authority", filepath.Join(s.dataDir, "pki", "ca.crt"),
			"--token", token, "auth", "whoami")
	}
	if out, err := whoamiWithToken(); err != nil || !strings.Contains(out, "system:serviceaccount:default:bot") {
		t.Errorf("the token issued before the restart: %v\n%s", err, out)
	}

	// Another issuer: the old token is refused, and the log says why at -v=2.
	s.args = append(s.args, "-v=2", "--service-account-issuer", "https://idplane.example.com")
	s.restart(t)
	out, err := whoamiWithToken()
	if err == nil || !strings.Contains(out, "Unauthorized") {
		t.Errorf("the token of the old issuer after the issuer changed: %v\n%s", err, out)
	}
	if log := tailFile(s.logPath, 400); !strings.Contains(log, "issuer is not accepted") {
		t.Errorf("the log at -v=2 does not say why the token was refused:\n%s", log)
	}
}

// TestNodePathErrorsThroughKubectl: kubectl shows the path endpoint's refusals with their
// message, not "the server rejected our request for an unknown reason".
func TestNodePathErrorsThroughKubectl(t *testing.T) {
	s := startServer(t)
	cases := map[string]string{
		"/debug/node-authorizer/path?node=node1&kind=deployment&namespace=default&name=x": `unknown kind "deployment"`,
		"/debug/node-authorizer/path?node=node1&kind=secret&name=x":                       `kind "secret" is namespaced`,
		"/debug/node-authorizer/path?kind=secret&namespace=default&name=x":                "query parameters node, kind and name are required",
	}
	for path, want := range cases {
		out, err := s.kubectlErr("get", "--raw", path)
		if err == nil || !strings.Contains(out, "Error from server (BadRequest)") || !strings.Contains(out, want) {
			t.Errorf("kubectl get --raw %s: %v\n%s\nwant a BadRequest saying %q", path, err, out, want)
		}
	}
	out := s.kubectl(t, "get", "--raw", "/debug/node-authorizer/path?node=node1&kind=secrets&namespace=default&name=x")
	if !strings.Contains(out, `"allowed":false`) {
		t.Errorf("a path that does not exist: %s, want allowed false", out)
	}
}

// TestCommandsOutsideTheClone: `idplane token create` finds the admin kubeconfig through
// $KUBECONFIG from any directory, as kubectl does, and `idplane version` and --version print
// the version the server reports at /version.
func TestCommandsOutsideTheClone(t *testing.T) {
	s := startServer(t)
	elsewhere := t.TempDir()
	idplane := func(env []string, args ...string) (string, error) {
		cmd := exec.Command(idplaneBin, args...)
		cmd.Dir = elsewhere
		cmd.Env = append(withoutEnv(os.Environ(), "KUBECONFIG", "HOME"), append(env, "HOME="+elsewhere)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if err != nil {
			return stdout.String() + stderr.String(), err
		}
		return stdout.String(), nil
	}

	out, err := idplane([]string{"KUBECONFIG=" + s.Kubeconfig}, "token", "create", "--ttl", "10m")
	if err != nil {
		t.Fatalf("token create with $KUBECONFIG: %v\n%s", err, out)
	}
	bootstrap := filepath.Join(elsewhere, "bootstrap.kubeconfig")
	if err := os.WriteFile(bootstrap, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	if who, err := s.kubectlAs(bootstrap, "auth", "whoami"); err != nil || !strings.Contains(who, "system:bootstrap:") {
		t.Errorf("whoami with the new token: %v\n%s", err, who)
	}
	if out, err := idplane(nil, "token", "create"); err == nil || !strings.Contains(out, "pass --kubeconfig or set KUBECONFIG") {
		t.Errorf("token create with no kubeconfig anywhere: %v\n%s", err, out)
	}

	serverVersion := s.kubectl(t, "version", "-o", "json")
	for _, args := range [][]string{{"version"}, {"--version"}, {"agent", "--version"}} {
		out, err := idplane(nil, args...)
		if err != nil {
			t.Fatalf("idplane %v: %v\n%s", args, err, out)
		}
		v, ok := strings.CutPrefix(strings.TrimSpace(out), "idplane ")
		if !ok || !strings.Contains(serverVersion, `"gitVersion": "`+v+`"`) {
			t.Errorf("idplane %v printed %q; the server reports\n%s", args, out, serverVersion)
		}
	}
}

// TestReadyHint: `idplane server` prints its try: hint once it is ready, and a client that
// acts on the hint at once sees a complete cluster: /readyz green, the four system namespaces
// and the default RBAC policy deciding.
func TestReadyHint(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an idplane server process; skipped in -short mode")
	}
	serverSlots <- struct{}{}
	defer func() { <-serverSlots }()
	dataDir, logPath := t.TempDir(), filepath.Join(t.TempDir(), "idplane.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(idplaneBin, "server", "--data-dir", dataDir, "--secure-port=0")
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(stopTimeout):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("idplane log (last lines):\n%s", tailFile(logPath, 60))
		}
	})
	// Each line printed, with the ones before it.
	type output struct{ lines []string }
	hints := make(chan output, 1)
	go func() {
		defer close(exited)
		var lines []string
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if strings.HasPrefix(sc.Text(), "ready; try: ") {
				hints <- output{slices.Clone(lines)}
			}
		}
		_ = cmd.Wait()
	}()
	var printed []string
	select {
	case o := <-hints:
		printed = o.lines
	case <-exited:
		t.Fatalf("idplane exited before its hint")
	case <-time.After(startTimeout):
		t.Fatalf("no hint within %v", startTimeout)
	}
	kubeconfig, ok := strings.CutPrefix(printed[len(printed)-1], "ready; try: kubectl --kubeconfig ")
	kubeconfig, ok2 := strings.CutSuffix(kubeconfig, " get namespaces")
	if !ok || !ok2 {
		t.Fatalf("hint %q, want ready; try: kubectl --kubeconfig <path> get namespaces", printed[len(printed)-1])
	}
	if len(printed) != 3 || !servingLine.MatchString(printed[0]) || !kubeconfigLine.MatchString(printed[1]) {
		t.Errorf("standard output %q, want the address, the kubeconfig, then the hint", printed)
	}

	s := &server{Kubeconfig: kubeconfig, cacheDir: t.TempDir()}
	if out := s.kubectl(t, "get", "--raw", "/readyz"); out != "ok" {
		t.Errorf("/readyz at the hint: %q", out)
	}
	names := strings.Fields(s.kubectl(t, "get", "namespaces", "-o", "name"))
	want := []string{"namespace/default", "namespace/kube-node-lease", "namespace/kube-public", "namespace/kube-system"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("namespaces at the hint: %v, want %v", names, want)
	}
	// The default policy decides: any authenticated user may read /version
	// (system:public-info-viewer), and the aggregated roles exist.
	if out := s.kubectl(t, "auth", "can-i", "get", "/version", "--as", "someone"); strings.TrimSpace(out) != "yes" {
		t.Errorf("can someone get /version at the hint: %q, want yes", out)
	}
	s.kubectl(t, "get", "clusterrole", "cluster-admin", "admin", "edit", "view")
}
