package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// kmsPluginProcess is one `idplane kms-plugin` process.
type kmsPluginProcess struct {
	socket, keyFile, logPath string
	cmd                      *exec.Cmd
	exited                   chan struct{}
}

func startKMSPluginProcess(t *testing.T, socket, keyFile string) *kmsPluginProcess {
	t.Helper()
	p := &kmsPluginProcess{socket: socket, keyFile: keyFile, logPath: filepath.Join(t.TempDir(), "kms-plugin.log")}
	log, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(idplaneBin, "kms-plugin", "--socket", socket, "--key-file", keyFile)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting kms-plugin: %v", err)
	}
	p.exited = make(chan struct{})
	go func() { _ = p.cmd.Wait(); log.Close(); close(p.exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	eventually(t, 30*time.Second, func() error {
		select {
		case <-p.exited:
			t.Fatalf("kms-plugin exited:\n%s", tailFile(p.logPath, 20))
		default:
		}
		_, err := os.Stat(socket)
		return err
	})
	return p
}

func (p *kmsPluginProcess) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(stopTimeout):
		t.Fatal("kms-plugin did not exit on SIGTERM")
	}
	if !p.cmd.ProcessState.Success() {
		t.Fatalf("kms-plugin exited with %v:\n%s", p.cmd.ProcessState, tailFile(p.logPath, 20))
	}
}

// localKMSKey returns a new key for the plugin's key file and the key ID the plugin gives it
// (derived as the plugin documents, so the test notices a plugin that names keys otherwise).
func localKMSKey(t *testing.T) (b64, id string) {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append([]byte("idplane-kms-plugin-key-id\x00"), b...))
	return base64.StdEncoding.EncodeToString(b), "local-aes-gcm:" + hex.EncodeToString(sum[:12])
}

// rawEtcd reads a key from a running server's embedded etcd through its unix socket, as
// someone with access to the data directory would.
func (s *server) rawEtcd(t *testing.T, key string) []byte {
	t.Helper()
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{"unix://" + filepath.Join(s.dataDir, "etcd", "client.sock")},
		DialTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := client.Get(ctx, key)
	if err != nil {
		t.Fatalf("reading %s from etcd: %v", key, err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("etcd holds %d values at %s", len(resp.Kvs), key)
	}
	return resp.Kvs[0].Value
}

// TestKMSPluginEncryptsSecrets runs the server with a kms provider served by `idplane
// kms-plugin`: secrets are stored under the KMS v2 prefix, a key added on top of the plugin's key
// file is used for new writes after the server's next status poll, and /readyz follows the
// plugin going away and coming back. (Writes failing once the cached data key expires, three
// minutes after the last good poll, are tested in process, where the library's clock is driven.)
func TestKMSPluginEncryptsSecrets(t *testing.T) {
	t.Parallel()
	sockDir, err := os.MkdirTemp("", "kms")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	socket, keyFile := filepath.Join(sockDir, "kms.sock"), filepath.Join(sockDir, "keys")
	keyA, idA := localKMSKey(t)
	keyB, idB := localKMSKey(t)
	if err := os.WriteFile(keyFile, []byte(keyA+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plugin := startKMSPluginProcess(t, socket, keyFile)
	config := manifest(t, fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - kms: {apiVersion: v2, name: local, endpoint: unix://%s, timeout: 3s}
  - identity: {}
`, socket))
	s := startServer(t, "--encryption-provider-config", config)

	s.kubectl(t, "create", "secret", "generic", "s1", "--from-literal=password=kms-protected-value")
	raw := s.rawEtcd(t, "/registry/secrets/default/s1")
	if !bytes.HasPrefix(raw, []byte("k8s:enc:kms:v2:local:")) || bytes.Contains(raw, []byte("kms-protected-value")) || !bytes.Contains(raw, []byte(idA)) {
		t.Fatalf("etcd holds s1 as %q", raw)
	}
	if got := s.kubectl(t, "get", "secret", "s1", "-o", "jsonpath={.data.password}"); got != base64.StdEncoding.EncodeToString([]byte("kms-protected-value")) {
		t.Fatalf("kubectl reads s1 as %q", got)
	}
	if out := s.kubectl(t, "get", "--raw", "/readyz?verbose"); !strings.Contains(out, "[+]kms-providers ok") {
		t.Fatalf("/readyz does not list the kms-providers check:\n%s", out)
	}

	// Rotation: B on top of the file; the server's next status poll (its /readyz check polls
	// once its cached answer is 20 seconds old) moves new writes to B.
	if err := os.WriteFile(keyFile, []byte(keyB+"\n"+keyA+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := 0
	eventually(t, 90*time.Second, func() error {
		_, _ = s.kubectlErr("get", "--raw", "/readyz/kms-providers")
		n++
		name := fmt.Sprintf("rotated-%d", n)
		if _, err := s.kubectlErr("create", "secret", "generic", name, "--from-literal=password=v"); err != nil {
			return err
		}
		if !bytes.Contains(s.rawEtcd(t, "/registry/secrets/default/"+name), []byte(idB)) {
			return fmt.Errorf("%s is not stored under the new key", name)
		}
		return nil
	})
	if got := s.kubectl(t, "get", "secret", "s1", "-o", "jsonpath={.data.password}"); got != base64.StdEncoding.EncodeToString([]byte("kms-protected-value")) {
		t.Fatalf("after rotation kubectl reads s1 as %q", got)
	}

	// The plugin goes away: /readyz fails and the check says which provider and why.
	plugin.stop(t)
	eventually(t, 90*time.Second, func() error {
		out, err := s.kubectlErr("get", "--raw", "/readyz/kms-providers")
		if err == nil {
			return fmt.Errorf("/readyz/kms-providers still answers %q", out)
		}
		if !strings.Contains(out+err.Error(), "KMS Provider local") {
			return fmt.Errorf("/readyz/kms-providers fails without saying why: %s %v", out, err)
		}
		return nil
	})
	if out, err := s.kubectlErr("get", "--raw", "/readyz"); err == nil || !strings.Contains(out+err.Error(), "kms-providers failed") {
		t.Fatalf("/readyz with the plugin down: %s %v", out, err)
	}

	// The plugin comes back: ready again, secrets read and write.
	startKMSPluginProcess(t, socket, keyFile)
	eventually(t, 90*time.Second, func() error {
		_, err := s.kubectlErr("get", "--raw", "/readyz")
		return err
	})
	s.kubectl(t, "create", "secret", "generic", "after", "--from-literal=password=after-return")
	if raw := s.rawEtcd(t, "/registry/secrets/default/after"); !bytes.Contains(raw, []byte(idB)) {
		t.Fatal("after the plugin returned, a secret is not stored under the current key")
	}
}
