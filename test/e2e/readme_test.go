package e2e

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// README blocks are marked for this test by an HTML comment on the line before their fence:
// "setup" blocks build the binaries (the test links its own builds instead), "run" blocks are run
// in README order as one script, in one shell, as a newcomer pasting them would.
var readmeMarker = regexp.MustCompile("(?m)^<!-- README test: (setup|run)\\b[^>]*-->\n```sh\n((?s:.*?))^```$")

// readmeScriptTimeout bounds the whole walk through the README: a server start, some forty
// kubectl calls and openssl, on a loaded two-core machine.
const readmeScriptTimeout = 4 * time.Minute

type readmeBlocks struct{ setup, run []string }

func readREADME(t *testing.T) readmeBlocks {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var b readmeBlocks
	for _, m := range readmeMarker.FindAllStringSubmatch(string(data), -1) {
		if m[1] == "setup" {
			b.setup = append(b.setup, m[2])
		} else {
			b.run = append(b.run, m[2])
		}
	}
	return b
}

// TestReadme runs the README's quick start and every example marked for it, in order, in a
// fresh directory with the built idplane and stock kubectl on PATH, and checks that each
// example showed what the README says it shows: the README cannot drift from what works.
func TestReadme(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an idplane server process; skipped in -short mode")
	}
	blocks := readREADME(t)
	// The setup block is what the test replaces: it must still build what the test links.
	setup := strings.Join(blocks.setup, "\n")
	for _, want := range []string{"go build -o bin/idplane ./cmd/idplane", "go build -C tools/kubectl -ldflags \"-X k8s.io/component-base/version.gitVersion=" + kubectlVersion + "\" -o \"$PWD/bin/kubectl\" .", "export PATH=\"$PWD/bin:$PATH\""} {
		if !strings.Contains(setup, want) {
			t.Errorf("README's setup block no longer says %q; update this test with it", want)
		}
	}
	if len(blocks.run) < 5 {
		t.Fatalf("found %d README blocks to run, want the quick start and the examples", len(blocks.run))
	}
	serverSlots <- struct{}{}
	defer func() { <-serverSlots }()
	waitForDefaultPort(t)

	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"idplane": idplaneBin, "kubectl": kubectlBin} {
		if err := os.Symlink(target, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	script := "set -euo pipefail\nexport PATH=\"$PWD/bin:$PATH\"\n" + strings.Join(blocks.run, "\n")
	if err := os.WriteFile(filepath.Join(dir, "readme.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), readmeScriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-x", "readme.sh")
	cmd.Dir = dir
	// A newcomer's shell: no KUBECONFIG of the developer's, no ~/.kube/config.
	cmd.Env = append(withoutEnv(os.Environ(), "KUBECONFIG", "HOME"), "HOME="+dir)
	// Its own process group, so that the server the script leaves in the background goes with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopGroup(t, cmd.Process.Pid) })
	err = cmd.Wait()
	if t.Failed() || err != nil {
		t.Logf("server log:\n%s", tailFile(filepath.Join(dir, "idplane.log"), 60))
	}
	if err != nil {
		t.Fatalf("README script failed (%v); its trace:\n%s", err, out.String())
	}

	// What the examples say they show, in their output.
	for _, want := range []string{
		"kube-node-lease", // quick start: the four namespaces
		"idplane-admin",   // quick start: whoami
		`"allowed":true,"path":["secret default/db-password","pod default/web","node node1"]`, // node path
		`no relationship found between node "node2" and secret "default/db-password"`,         // can-i
		"system:serviceaccount:default:bot",                                                   // whoami with the token alone
		"system:bootstrap:",                                                                   // whoami with the bootstrap kubeconfig
		`"CmsPlugins":["ActiveDirectory"]`,                                                    // the GMSA pod's filled credential spec
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("README output lacks %q", want)
		}
	}
	for what, re := range map[string]string{
		"alice's whoami": `(?m)^Username\s+alice$`,
		"the custom signer's certificate (openssl's subject and issuer)": `(?m)^subject=CN ?= ?build-bot\nissuer=CN ?= ?team-ca$`,
	} {
		if !regexp.MustCompile(re).MatchString(out.String()) {
			t.Errorf("README output lacks %s", what)
		}
	}
	// The server's hint, which the README quotes, came once it was ready.
	if log, err := os.ReadFile(filepath.Join(dir, "idplane.log")); err != nil || !strings.Contains(string(log), "ready; try: kubectl --kubeconfig ") {
		t.Errorf("idplane.log lacks the ready hint (%v)", err)
	}
	if t.Failed() {
		t.Logf("README script trace:\n%s", out.String())
	}
}

// defaultPortWait bounds how long TestReadme waits for port 6443: another run of it (a second
// checkout's tests on the same machine) holds the port for the length of its script.
const defaultPortWait = 2 * readmeScriptTimeout

// waitForDefaultPort waits until port 6443 is free: the quick start runs the server on its
// default port, as a newcomer would.
func waitForDefaultPort(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(defaultPortWait)
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:6443")
		if err == nil {
			ln.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the quick start needs port 6443, taken for %v: %v", defaultPortWait, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// stopGroup ends the processes of group pgid (the script's background server): SIGTERM, then
// SIGKILL if they are still there after stopTimeout, and waits until they are gone so the
// temporary directory is not removed under etcd.
func stopGroup(t *testing.T, pgid int) {
	t.Helper()
	if err := syscall.Kill(-pgid, syscall.SIGTERM); errors.Is(err, syscall.ESRCH) {
		return
	}
	deadline := time.Now().Add(stopTimeout)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			deadline = time.Now().Add(stopTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// withoutEnv returns env without the named variables.
func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, n := range names {
			drop = drop || name == n
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}
