package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// agent is one `idplane agent` process.
type agent struct {
	rootDir, manifests, logPath string
	args                        []string
	cmd                         *exec.Cmd
	exited                      chan struct{}
}

// startAgent joins a node to s with a fresh bootstrap token for that node alone, used once, the
// way a careful operator would.
func startAgent(t *testing.T, s *server, node string) *agent {
	t.Helper()
	out, err := exec.Command(idplaneBin, "token", "create", "--kubeconfig", s.Kubeconfig, "--ttl", "1h", "--node-name", node, "--single-use").Output()
	if err != nil {
		t.Fatalf("idplane token create: %v", err)
	}
	bootstrap := filepath.Join(t.TempDir(), "bootstrap.kubeconfig")
	if err := os.WriteFile(bootstrap, out, 0o600); err != nil {
		t.Fatal(err)
	}
	a := &agent{rootDir: t.TempDir(), manifests: t.TempDir(), logPath: filepath.Join(t.TempDir(), "agent.log")}
	a.args = []string{"agent", "--bootstrap-kubeconfig", bootstrap, "--node-name", node,
		"--root-dir", a.rootDir, "--pod-manifest-path", a.manifests, "--node-ip", "127.0.0.1", "--hostname", node, "-v=2"}
	t.Cleanup(func() {
		a.kill()
		if t.Failed() {
			t.Logf("agent %s log (last lines):\n%s", node, tailFile(a.logPath, 60))
		}
	})
	a.start(t)
	return a
}

func (a *agent) start(t *testing.T) {
	t.Helper()
	logFile, err := os.OpenFile(a.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	a.cmd = exec.Command(idplaneBin, a.args...)
	a.cmd.Stdout, a.cmd.Stderr = logFile, logFile
	if err := a.cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("starting the agent: %v", err)
	}
	exited := make(chan struct{})
	a.exited = exited
	go func() {
		_ = a.cmd.Wait()
		logFile.Close()
		close(exited)
	}()
}

// stop ends the agent with SIGTERM, as a service manager would.
func (a *agent) stop(t *testing.T) {
	t.Helper()
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("stopping the agent: %v", err)
	}
	select {
	case <-a.exited:
	case <-time.After(stopTimeout):
		a.kill()
		t.Fatalf("the agent did not exit within %v of SIGTERM", stopTimeout)
	}
}

func (a *agent) kill() {
	if a.cmd == nil {
		return
	}
	_ = a.cmd.Process.Kill()
	<-a.exited
}

// kubeconfig is the node's own kubeconfig, written once TLS bootstrap is done.
func (a *agent) kubeconfig() string { return filepath.Join(a.rootDir, "kubeconfig") }

// podDir is where the agent writes a pod's files.
func (a *agent) podDir(uid string) string { return filepath.Join(a.rootDir, "pods", uid) }

func TestAgent(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--approve-kubelet-serving")
	a := startAgent(t, s, "node-a")

	eventually(t, 60*time.Second, func() error {
		out, err := s.kubectlErr("get", "node", "node-a", "-o", "jsonpath={.metadata.labels.kubernetes\\.io/hostname} {.status.addresses[*].address}")
		if err != nil {
			return fmt.Errorf("node-a not registered: %v\n%s", err, out)
		}
		if out != "node-a 127.0.0.1 node-a" {
			return fmt.Errorf("node-a labels and addresses: %q", out)
		}
		return nil
	})
	out, err := s.kubectlAs(a.kubeconfig(), "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	if err != nil || out != "system:node:node-a" {
		t.Fatalf("the agent's kubeconfig authenticates as %q (err %v), want system:node:node-a", out, err)
	}
	eventually(t, 30*time.Second, func() error {
		out := s.kubectl(t, "get", "csr", "-o", "jsonpath={range .items[*]}{.spec.signerName} {.status.conditions[0].type} {.status.certificate}{\"\\n\"}{end}")
		for _, signer := range []string{"kubernetes.io/kube-apiserver-client-kubelet", "kubernetes.io/kubelet-serving"} {
			if !strings.Contains(out, signer+" Approved L") {
				return fmt.Errorf("no approved and issued %s CSR:\n%s", signer, out)
			}
		}
		return nil
	})

	s.kubectl(t, "create", "namespace", "shop")
	s.ensureServiceAccount(t, "shop", "cart")
	s.kubectl(t, "create", "secret", "generic", "db", "-n", "shop", "--from-literal=password=s3cret")
	s.kubectl(t, "create", "secret", "generic", "elsewhere", "-n", "shop", "--from-literal=password=not-yours")
	s.kubectl(t, "apply", "-f", manifest(t, `apiVersion: v1
kind: Pod
metadata: {name: cart, namespace: shop}
spec:
  nodeName: node-a
  serviceAccountName: cart
  securityContext: {runAsUser: 1000, runAsGroup: 3000}
  containers:
  - name: app
    image: busybox
    volumeMounts: [{name: db, mountPath: /etc/db, readOnly: true}]
  volumes:
  - name: db
    secret: {secretName: db, items: [{key: password, path: pw, mode: 0400}]}
---
apiVersion: v1
kind: Pod
metadata: {name: other, namespace: shop}
spec:
  nodeName: node-b
  serviceAccountName: cart
  containers: [{name: app, image: busybox}]
  volumes: [{name: s, secret: {secretName: elsewhere}}]
`))
	uid := s.kubectl(t, "get", "pod", "cart", "-n", "shop", "-o", "jsonpath={.metadata.uid}")
	apiVolume := s.kubectl(t, "get", "pod", "cart", "-n", "shop", "-o", "jsonpath={.spec.volumes[1].name}")
	tokenPath := filepath.Join(a.podDir(uid), "volumes", apiVolume, "token")
	var token string
	eventually(t, 30*time.Second, func() error {
		for _, f := range []string{"token", "ca.crt", "namespace"} {
			data, err := os.ReadFile(filepath.Join(a.podDir(uid), "volumes", apiVolume, f))
			if err != nil {
				return err
			}
			if f == "token" {
				token = string(data)
			}
		}
		return nil
	})
	if ns, _ := os.ReadFile(filepath.Join(a.podDir(uid), "volumes", apiVolume, "namespace")); string(ns) != "shop" {
		t.Errorf("namespace file holds %q", ns)
	}
	if info, err := os.Stat(tokenPath); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("token file mode: %v, %v; want 0600 (one runAsUser for every container)", info.Mode(), err)
	}
	if pw, err := os.ReadFile(filepath.Join(a.podDir(uid), "volumes", "db", "pw")); err != nil || string(pw) != "s3cret" {
		t.Errorf("secret volume item: %q, %v", pw, err)
	}
	if c := decodeToken(t, token); c.Kubernetes.Pod == nil || c.Kubernetes.Pod.UID != uid {
		t.Errorf("the token is not bound to the pod: %+v", c)
	}
	review := manifest(t, `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"`+token+`"}}`)
	out = s.kubectl(t, "create", "-f", review, "-o", "jsonpath={.status.authenticated} {.status.user.username}")
	if out != "true system:serviceaccount:shop:cart" {
		t.Errorf("TokenReview of the pod's token: %q", out)
	}
	eventually(t, 10*time.Second, func() error {
		out := s.kubectl(t, "get", "pod", "cart", "-n", "shop", "-o", `jsonpath={.status.conditions[?(@.type=="CredentialsReady")].status}`)
		if out != "True" {
			return fmt.Errorf("CredentialsReady = %q", out)
		}
		return nil
	})
	var spec struct {
		Process struct {
			User struct{ UID, GID uint32 }
		}
		Mounts []struct{ Destination, Source string }
	}
	data, err := os.ReadFile(filepath.Join(a.podDir(uid), "containers", "app", "config.json"))
	if err != nil {
		t.Fatalf("runtime spec: %v", err)
	}
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	if spec.Process.User.UID != 1000 || spec.Process.User.GID != 3000 {
		t.Errorf("runtime spec user: %+v", spec.Process.User)
	}

	t.Run("the node reads only what its pods use", func(t *testing.T) {
		if out, err := s.kubectlAs(a.kubeconfig(), "get", "secret", "db", "-n", "shop"); err != nil {
			t.Errorf("node-a cannot read its pod's secret: %v\n%s", err, out)
		}
		out, err := s.kubectlAs(a.kubeconfig(), "get", "secret", "elsewhere", "-n", "shop")
		if err == nil || !strings.Contains(out, "Forbidden") {
			t.Errorf("node-a read node-b's secret (err %v):\n%s", err, out)
		}
	})

	t.Run("static pods are mirrored", func(t *testing.T) {
		static := "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: default}\nspec:\n  containers: [{name: web, image: nginx}]\n"
		if err := os.WriteFile(filepath.Join(a.manifests, "web.yaml"), []byte(static), 0o644); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, func() error {
			out, err := s.kubectlErr("get", "pod", "web-node-a", "-o", "jsonpath={.spec.nodeName} {.metadata.annotations.kubernetes\\.io/config\\.mirror}")
			if err != nil || !strings.HasPrefix(out, "node-a ") || len(out) <= len("node-a ") {
				return fmt.Errorf("mirror pod: %v %q", err, out)
			}
			return nil
		})
		if err := os.Remove(filepath.Join(a.manifests, "web.yaml")); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, func() error {
			if out, err := s.kubectlErr("get", "pod", "web-node-a"); err == nil {
				return fmt.Errorf("the mirror pod outlived its manifest:\n%s", out)
			}
			return nil
		})
	})

	t.Run("a Windows pod gets its credential spec", func(t *testing.T) {
		s.kubectl(t, "apply", "-f", manifest(t, designExample))
		s.kubectl(t, "apply", "-f", manifest(t, `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: webapp1-credspec-user}
rules:
- {apiGroups: ["windows.k8s.io"], resources: ["gmsacredentialspecs"], verbs: ["use"], resourceNames: ["webapp1-credspec"]}
`))
		s.ensureServiceAccount(t, "shop", "iis")
		s.kubectl(t, "create", "rolebinding", "webapp1", "-n", "shop", "--clusterrole", "webapp1-credspec-user", "--serviceaccount", "shop:iis")
		pod := manifest(t, `apiVersion: v1
kind: Pod
metadata: {name: iis, namespace: shop}
spec:
  nodeName: node-a
  serviceAccountName: iis
  os: {name: windows}
  securityContext:
    windowsOptions: {gmsaCredentialSpecName: webapp1-credspec, runAsUserName: "NT AUTHORITY\\NETWORK SERVICE"}
  containers: [{name: iis, image: mcr.microsoft.com/windows/servercore/iis}]
`)
		eventually(t, 10*time.Second, func() error {
			out, err := s.kubectlErr("create", "-f", pod)
			if err != nil {
				return fmt.Errorf("%v\n%s", err, out)
			}
			return nil
		})
		uid := s.kubectl(t, "get", "pod", "iis", "-n", "shop", "-o", "jsonpath={.metadata.uid}")
		var spec struct {
			Process struct{ User struct{ Username string } }
			Windows *struct {
				CredentialSpec struct {
					DomainJoinConfig struct{ MachineAccountName string }
				}
			}
		}
		eventually(t, 30*time.Second, func() error {
			data, err := os.ReadFile(filepath.Join(a.podDir(uid), "containers", "iis", "config.json"))
			if err != nil {
				return err
			}
			return json.Unmarshal(data, &spec)
		})
		if spec.Windows == nil || spec.Windows.CredentialSpec.DomainJoinConfig.MachineAccountName != "WebApplication1" {
			t.Errorf("config.json windows section: %+v", spec.Windows)
		}
		if spec.Process.User.Username != `NT AUTHORITY\NETWORK SERVICE` {
			t.Errorf("config.json user name: %q", spec.Process.User.Username)
		}
	})

	t.Run("a deleted pod's files and token go", func(t *testing.T) {
		s.kubectl(t, "delete", "pod", "cart", "-n", "shop", "--wait=false")
		eventually(t, 30*time.Second, func() error {
			if _, err := os.Stat(a.podDir(uid)); !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("pod directory still there: %v", err)
			}
			return nil
		})
		out := s.kubectl(t, "create", "-f", review, "-o", "jsonpath={.status.authenticated}")
		if out == "true" {
			t.Error("the deleted pod's token still authenticates")
		}
		eventually(t, 30*time.Second, func() error {
			if out, err := s.kubectlErr("get", "pod", "cart", "-n", "shop"); err == nil {
				return fmt.Errorf("the agent did not finish the terminating pod:\n%s", out)
			}
			return nil
		})
	})
}

// TestAgentRestarts checks that the agent keeps what it wrote while the server is away and
// catches up when it returns, and that a restarted agent picks up where it left off without
// rewriting what did not change.
func TestAgentRestarts(t *testing.T) {
	t.Parallel()
	// A fixed port: the agent's kubeconfig names the server's address, which must survive a restart.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s := startServer(t, fmt.Sprintf("--secure-port=%d", port))
	a := startAgent(t, s, "node-r")

	s.kubectl(t, "create", "namespace", "r")
	s.ensureServiceAccount(t, "r", "app")
	s.kubectl(t, "create", "configmap", "settings", "-n", "r", "--from-literal=mode=one")
	podManifest := func(name string) string {
		return manifest(t, `apiVersion: v1
kind: Pod
metadata: {name: `+name+`, namespace: r}
spec:
  nodeName: node-r
  serviceAccountName: app
  containers: [{name: app, image: busybox}]
  volumes: [{name: settings, configMap: {name: settings}}]
`)
	}
	// files waits for a pod's token and settings and returns the token volume's directory.
	files := func(name, mode string) (uid, tokenVolume string) {
		t.Helper()
		eventually(t, 60*time.Second, func() error {
			out, err := s.kubectlErr("get", "pod", name, "-n", "r", "-o", "jsonpath={.metadata.uid} {.spec.volumes[1].name}")
			if err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			f := strings.Fields(out)
			if len(f) != 2 {
				return fmt.Errorf("pod %s: %q", name, out)
			}
			uid, tokenVolume = f[0], filepath.Join(a.podDir(f[0]), "volumes", f[1])
			if _, err := os.Stat(filepath.Join(tokenVolume, "token")); err != nil {
				return err
			}
			got, err := os.ReadFile(filepath.Join(a.podDir(uid), "volumes", "settings", "mode"))
			if err != nil || string(got) != mode {
				return fmt.Errorf("settings of %s: %q, %v; want %q", name, got, err, mode)
			}
			return nil
		})
		return uid, tokenVolume
	}
	s.kubectl(t, "create", "-f", podManifest("before"))
	_, tokenVolume := files("before", "one")
	token, err := os.ReadFile(filepath.Join(tokenVolume, "token"))
	if err != nil {
		t.Fatal(err)
	}
	dataLink, err := os.Readlink(filepath.Join(tokenVolume, "..data"))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("the server goes away and comes back", func(t *testing.T) {
		s.stop(t)
		// The agent keeps what it wrote while it cannot reach the server.
		time.Sleep(2 * time.Second)
		if got, err := os.ReadFile(filepath.Join(tokenVolume, "token")); err != nil || string(got) != string(token) {
			t.Errorf("token while the server is down: %v", err)
		}
		s.start(t)
		s.kubectl(t, "create", "-f", podManifest("during"))
		files("during", "one")
	})

	t.Run("a restarted agent rewrites only what changed", func(t *testing.T) {
		a.stop(t)
		s.kubectl(t, "patch", "configmap", "settings", "-n", "r", "-p", `{"data":{"mode":"two"}}`)
		a.start(t)
		// Once the changed settings are written, the agent has synced the pod again.
		files("before", "two")
		if got, err := os.ReadFile(filepath.Join(tokenVolume, "token")); err != nil || string(got) != string(token) {
			t.Errorf("the restarted agent replaced a token that was not due for refresh (err %v)", err)
		}
		if got, err := os.Readlink(filepath.Join(tokenVolume, "..data")); err != nil || got != dataLink {
			t.Errorf("the token volume was rewritten: ..data %q, was %q (err %v)", got, dataLink, err)
		}
	})
}
