//go:build linux

package e2e

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idplane/idplane/internal/testing/dirtree"
)

// busyboxApplets are the commands the containers' scripts use, linked to busybox in the rootfs.
var busyboxApplets = []string{"sh", "id", "cat", "wc", "echo", "touch", "rm", "ln", "chmod", "mkdir", "hostname"}

// TestAgentSpecRunsInRunc runs the runtime specs the agent wrote, as they are, with runc — the
// runtime spec's reference runtime — and checks from inside the containers what the agent is
// for: the identity, the service-account token, the secret, and that even a root container
// cannot write into its credentials.
//
// The agent knows no image, so its bundle has config.json and no rootfs; the test copies each
// config.json unchanged into a bundle whose rootfs is a static busybox (a directory: runc refuses
// a rootfs that is a link). Nothing of the spec is
// edited: the volumes are bound from the agent's own directories, so the containers see exactly
// what the agent wrote.
func TestAgentSpecRunsInRunc(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server, agent and containers; skipped in -short mode")
	}
	if os.Geteuid() != 0 {
		t.Skip("runc needs root to create namespaces and mounts; this test runs as uid", os.Geteuid())
	}
	t.Parallel()
	runc, busybox := runtimeTools(t)
	probeRunc(t, runc, busybox)

	s := startServer(t)
	a := startAgent(t, s, "node-runc")
	s.kubectl(t, "create", "namespace", "vault")
	s.ensureServiceAccount(t, "vault", "reader")
	s.kubectl(t, "create", "secret", "generic", "db", "-n", "vault", "--from-literal=password=s3cret")
	// Two users in one pod: the token is then readable through fsGroup only. "$$" is the API's
	// escape for a "$" the shell must see, so "$$(id -u)" reaches the shell as "$(id -u)".
	s.kubectl(t, "apply", "-f", manifest(t, `apiVersion: v1
kind: Pod
metadata: {name: vault, namespace: vault}
spec:
  nodeName: node-runc
  serviceAccountName: reader
  securityContext: {runAsUser: 1000, runAsGroup: 3000, fsGroup: 2000}
  containers:
  - name: app
    image: busybox
    command: [/bin/sh, -c, 'echo uid=$$(id -u) groups=$$(id -G) host=$$(hostname); echo token=$$(wc -c < /var/run/secrets/kubernetes.io/serviceaccount/token); echo pw=$$(cat /etc/db/pw)']
    volumeMounts: [{name: db, mountPath: /etc/db}]
  - name: root
    image: busybox
    securityContext: {runAsUser: 0}
    command:
    - /bin/sh
    - -c
    - |
      echo uid=$$(id -u) pw=$$(cat /etc/db/pw)
      for attempt in 'echo forged > /etc/db/pw' 'echo forged > /etc/db/..data/pw' 'touch /etc/db/new' 'rm /etc/db/pw' 'chmod 666 /etc/db/..data/pw' 'mkdir /etc/db/..data/x' 'ln -s /etc/shadow /etc/db/..data/pw2'; do
        if sh -c "$$attempt" 2>/dev/null; then echo "WROTE: $$attempt"; else echo "refused: $$attempt"; fi
      done
    volumeMounts: [{name: db, mountPath: /etc/db}]
  volumes:
  - name: db
    secret: {secretName: db, items: [{key: password, path: pw, mode: 0440}]}
`))
	uid := s.kubectl(t, "get", "pod", "vault", "-n", "vault", "-o", "jsonpath={.metadata.uid}")
	eventually(t, 60*time.Second, func() error {
		out := s.kubectl(t, "get", "pod", "vault", "-n", "vault", "-o", `jsonpath={.status.conditions[?(@.type=="CredentialsReady")].status}`)
		if out != "True" {
			return fmt.Errorf("CredentialsReady = %q", out)
		}
		return nil
	})
	// The specs are written after the volumes, in the same sync as the condition.
	eventually(t, 10*time.Second, func() error {
		for _, c := range []string{"app", "root"} {
			if _, err := os.Stat(filepath.Join(a.podDir(uid), "containers", c, "config.json")); err != nil {
				return err
			}
		}
		return nil
	})
	secretDir := filepath.Join(a.podDir(uid), "volumes", "db")
	before := dirtree.Snapshot(t, secretDir)

	out := runSpec(t, runc, busybox, filepath.Join(a.podDir(uid), "containers", "app", "config.json"))
	t.Logf("container app:\n%s", out)
	for _, want := range []string{"uid=1000 groups=3000 2000 host=vault", "pw=s3cret"} {
		if !strings.Contains(out, want) {
			t.Errorf("container app printed %q, missing %q", out, want)
		}
	}
	if strings.Contains(out, "token=0") || !strings.Contains(out, "token=") {
		t.Errorf("container app has no service-account token: %q", out)
	}

	out = runSpec(t, runc, busybox, filepath.Join(a.podDir(uid), "containers", "root", "config.json"))
	t.Logf("container root:\n%s", out)
	if !strings.Contains(out, "uid=0 pw=s3cret") {
		t.Errorf("container root printed %q, want uid 0 reading the secret", out)
	}
	if strings.Contains(out, "WROTE") || strings.Count(out, "refused:") != 7 {
		t.Errorf("a root container changed its secret volume:\n%s", out)
	}
	if after := dirtree.Snapshot(t, secretDir); after != before {
		t.Errorf("the secret volume changed under the containers:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// runtimeTools finds runc and a static busybox, installing them from the distribution's
// packages when missing.
func runtimeTools(t *testing.T) (runc, busybox string) {
	t.Helper()
	runc, _ = exec.LookPath("runc")
	busybox = "/bin/busybox"
	if runc != "" && isStatic(busybox) {
		return runc, busybox
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		t.Skipf("runc or a static busybox is missing and there is no apt-get to install them (runc %q, %s static: %v)", runc, busybox, isStatic(busybox))
	}
	install := func() ([]byte, error) {
		cmd := exec.Command("apt-get", "install", "-y", "--no-install-recommends", "runc", "busybox-static")
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		return cmd.CombinedOutput()
	}
	out, err := install()
	if err != nil {
		// The package lists may be missing, as in fresh containers.
		if upd, uerr := exec.Command("apt-get", "update").CombinedOutput(); uerr != nil {
			t.Fatalf("cannot install runc and busybox-static: apt-get update: %v\n%s", uerr, upd)
		}
		out, err = install()
	}
	if err != nil {
		// The project installs what its tests need: a failed install is a failure, not a skip.
		t.Fatalf("cannot install runc and busybox-static: %v\n%s", err, out)
	}
	runc, err = exec.LookPath("runc")
	if err != nil || !isStatic(busybox) {
		t.Fatalf("after installing runc and busybox-static: runc %v, %s static: %v", err, busybox, isStatic(busybox))
	}
	return runc, busybox
}

// isStatic says whether the ELF file at p asks for no dynamic loader, so that it runs alone in a
// rootfs.
func isStatic(p string) bool {
	f, err := elf.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}

// newBundle is a bundle directory whose rootfs holds busybox and the applets the scripts use.
func newBundle(t *testing.T, busybox string) string {
	t.Helper()
	bundle := t.TempDir()
	rootfs := filepath.Join(bundle, "rootfs")
	if err := os.MkdirAll(filepath.Join(rootfs, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(busybox)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "bin", "busybox"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, applet := range busyboxApplets {
		if err := os.Symlink("busybox", filepath.Join(rootfs, "bin", applet)); err != nil {
			t.Fatal(err)
		}
	}
	return bundle
}

// probeRunc runs a trivial container from runc's own example spec; where that fails (no
// namespaces, no cgroups), the test cannot say anything about the agent's spec and skips,
// with runc's words.
func probeRunc(t *testing.T, runc, busybox string) {
	t.Helper()
	bundle := newBundle(t, busybox)
	if out, err := exec.Command(runc, "spec", "--bundle", bundle).CombinedOutput(); err != nil {
		t.Fatalf("runc spec: %v\n%s", err, out)
	}
	var spec map[string]any
	data, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	process := spec["process"].(map[string]any)
	process["terminal"] = false
	process["args"] = []string{"/bin/sh", "-c", "exit 0"}
	data, err = json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := runBundle(t, runc, bundle); err != nil {
		t.Skipf("runc cannot start even a trivial container on this machine: %v\n%s", err, stderr)
	}
}

// runSpec runs config.json, unchanged, in a busybox bundle and returns what the container
// printed.
func runSpec(t *testing.T, runc, busybox, config string) string {
	t.Helper()
	data, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	bundle := newBundle(t, busybox)
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := runBundle(t, runc, bundle)
	if err != nil {
		t.Fatalf("runc run of the agent's %s: %v\nstdout:\n%s\nstderr:\n%s\nconfig.json:\n%s", config, err, stdout, stderr, data)
	}
	return stdout
}

// runBundle runs the bundle's container to its end, with runc's state in a directory of the
// test's own.
func runBundle(t *testing.T, runc, bundle string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := fmt.Sprintf("idplane-e2e-%d-%s", os.Getpid(), filepath.Base(bundle))
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, runc, "--root", filepath.Join(t.TempDir(), "state"), "run", "--bundle", bundle, id)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("the container did not exit within 30s: %w", err)
	}
	return out.String(), errOut.String(), err
}
