package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// idplaneRun runs the idplane binary and returns its stdout, stderr and exit code.
func idplaneRun(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, idplaneBin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err == nil {
		return out.String(), errOut.String(), 0
	}
	return out.String(), errOut.String(), exitCode(err)
}

// objectJSON is an object as kubectl prints it, without its resourceVersion.
func (s *server) objectJSON(t *testing.T, args ...string) string {
	t.Helper()
	out, err := s.kubectlErr(append(args, "-o", "json")...)
	if err != nil {
		t.Fatalf("kubectl get %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatal(err)
	}
	delete(obj["metadata"].(map[string]any), "resourceVersion")
	b, _ := json.MarshalIndent(obj, "", "  ")
	return string(b)
}

// nodeClientCertificate has the built-in kubelet client signer issue a certificate for node,
// through a CSR the admin approves, and returns the CSR's name, the certificate and its key.
func (s *server) nodeClientCertificate(t *testing.T, node string) (csrName string, certPEM, keyPEM []byte) {
	t.Helper()
	key := newKey(t)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}}}, key)
	if err != nil {
		t.Fatal(err)
	}
	csrName = "node-client-" + node
	request := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
	s.kubectl(t, "create", "-f", manifest(t, fmt.Sprintf(`apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: %s}
spec:
  request: %s
  signerName: kubernetes.io/kube-apiserver-client-kubelet
  usages: ["digital signature", "client auth"]
`, csrName, request)))
	s.kubectl(t, "certificate", "approve", csrName)
	var issued string
	eventually(t, 30*time.Second, func() error {
		issued = s.kubectl(t, "get", "csr", csrName, "-o", "jsonpath={.status.certificate}")
		if issued == "" {
			return fmt.Errorf("CSR %s not issued yet", csrName)
		}
		return nil
	})
	certPEM, err = base64.StdEncoding.DecodeString(issued)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return csrName, certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// whoami is the user name the server authenticates kubeconfig as.
func (s *server) whoami(t *testing.T, kubeconfig string) string {
	t.Helper()
	out, err := s.kubectlAs(kubeconfig, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	if err != nil {
		t.Fatalf("kubectl auth whoami: %v\n%s", err, out)
	}
	return out
}

// TestSnapshotSaveRestore is the backup story end to end: objects of every kind idplane keeps
// secrets for, `snapshot save` of the running server, more writes, stop, `snapshot restore` into
// a new data directory, start: everything from before is there as it was (resourceVersions
// aside), nothing from after, secrets decrypt, and the credentials issued before authenticate.
func TestSnapshotSaveRestore(t *testing.T) {
	t.Parallel()
	// Tokens name their issuer; a restored server on another address keeps accepting them only
	// when the issuer is configured, not derived from the address.
	const issuer = "https://idplane.snapshot.test"
	s := startServer(t, "--service-account-issuer", issuer)

	s.kubectl(t, "create", "namespace", "team-a")
	s.kubectl(t, "create", "secret", "generic", "db", "-n", "team-a", "--from-literal=password=s3cret")
	s.ensureServiceAccount(t, "team-a", "bot")
	s.kubectl(t, "apply", "-f", manifest(t, `apiVersion: v1
kind: Pod
metadata: {name: p, namespace: team-a}
spec:
  serviceAccountName: bot
  nodeName: node1
  containers: [{name: c, image: busybox}]
`))
	token := strings.TrimSpace(s.kubectl(t, "create", "token", "bot", "-n", "team-a", "--bound-object-kind", "Pod", "--bound-object-name", "p"))
	csrName, nodeCert, nodeKey := s.nodeClientCertificate(t, "node1")
	if got := s.whoami(t, s.clientKubeconfig(t, nodeCert, nodeKey)); got != "system:node:node1" {
		t.Fatalf("the node certificate authenticates as %q", got)
	}
	objects := [][]string{
		{"get", "namespace", "team-a"},
		{"get", "secret", "db", "-n", "team-a"},
		{"get", "serviceaccount", "bot", "-n", "team-a"},
		{"get", "pod", "p", "-n", "team-a"},
		{"get", "csr", csrName},
		{"get", "clusterrole", "admin"},
	}
	before := map[string]string{}
	for _, o := range objects {
		before[strings.Join(o, " ")] = s.objectJSON(t, o...)
	}
	adminCert, err := os.ReadFile(filepath.Join(s.dataDir, "pki", "admin.crt"))
	if err != nil {
		t.Fatal(err)
	}

	archive := filepath.Join(t.TempDir(), "backup.tar")
	stdout, stderr, code := idplaneRun(t, "snapshot", "save", archive, "--data-dir", s.dataDir)
	if code != 0 || !strings.Contains(stdout, "saved "+archive) {
		t.Fatalf("snapshot save: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if info, err := os.Stat(archive); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("archive: %v, mode %v; want 0600", err, info.Mode().Perm())
	}
	_, stderr, code = idplaneRun(t, "snapshot", "save", archive, "--data-dir", s.dataDir)
	if code != 1 || !strings.Contains(stderr, "exists: refusing to replace it (use --force to)") {
		t.Errorf("snapshot save over the archive: exit %d, stderr %s", code, stderr)
	}

	// Writes after the snapshot, which the restore must not bring back.
	s.kubectl(t, "create", "namespace", "team-b")
	s.kubectl(t, "create", "secret", "generic", "later", "-n", "team-a", "--from-literal=k=v")
	s.kubectl(t, "label", "secret", "db", "-n", "team-a", "changed=after")
	s.stop(t)

	restored := filepath.Join(t.TempDir(), "restored")
	stdout, stderr, code = idplaneRun(t, "snapshot", "restore", archive, "--data-dir", restored)
	if code != 0 || !strings.Contains(stdout, "restored "+archive) {
		t.Fatalf("snapshot restore: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	r := startServerIn(t, restored, "--service-account-issuer", issuer)

	for _, o := range objects {
		if got, want := r.objectJSON(t, o...), before[strings.Join(o, " ")]; got != want {
			t.Errorf("kubectl %s after the restore:\n%s\nbefore the snapshot:\n%s", strings.Join(o, " "), got, want)
		}
	}
	for _, o := range [][]string{{"namespace", "team-b"}, {"secret", "later", "-n", "team-a"}} {
		if out, err := r.kubectlErr(append([]string{"get"}, o...)...); err == nil || !strings.Contains(out, "NotFound") {
			t.Errorf("kubectl get %s after the restore: %v\n%s; want NotFound: it was written after the snapshot", strings.Join(o, " "), err, out)
		}
	}
	if got := r.kubectl(t, "get", "secret", "db", "-n", "team-a", "-o", "jsonpath={.data.password}"); got != base64.StdEncoding.EncodeToString([]byte("s3cret")) {
		t.Errorf("the secret reads %q after the restore", got)
	}
	if got := r.whoami(t, r.tokenKubeconfig(t, token)); got != "system:serviceaccount:team-a:bot" {
		t.Errorf("the pod-bound token issued before the snapshot authenticates as %q", got)
	}
	if got := r.whoami(t, r.clientKubeconfig(t, nodeCert, nodeKey)); got != "system:node:node1" {
		t.Errorf("the node certificate issued before the snapshot authenticates as %q", got)
	}
	if got := r.whoami(t, r.Kubeconfig); got != "idplane-admin" {
		t.Errorf("the restored admin kubeconfig authenticates as %q", got)
	}
	if got, err := os.ReadFile(filepath.Join(restored, "pki", "admin.crt")); err != nil || !bytes.Equal(got, adminCert) {
		t.Errorf("the admin certificate was not restored: %v", err)
	}
	// The pod-bound token lives as long as its pod.
	r.kubectl(t, "delete", "pod", "p", "-n", "team-a", "--grace-period=0", "--force")
	eventually(t, 10*time.Second, func() error {
		out, err := r.kubectlAs(r.tokenKubeconfig(t, token), "auth", "whoami")
		if err == nil || !strings.Contains(out, "Unauthorized") {
			return fmt.Errorf("the token of a deleted pod still works (err %v): %s", err, out)
		}
		return nil
	})
}

// treeDigest is a digest of every path, mode and content under dir, to tell that nothing was
// written there.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && p == dir {
				fmt.Fprint(h, "absent")
				return filepath.SkipDir
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %v %d\n", p, info.Mode(), info.Size())
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestSnapshotRestoreRefusesBadInput: a truncated archive, a flipped byte, and an archive of one
// cluster restored into another's data directory are each refused with a clear message, and
// nothing is written.
func TestSnapshotRestoreRefusesBadInput(t *testing.T) {
	t.Parallel()
	a := startServer(t)
	b := startServer(t)
	dir := t.TempDir()
	archive := filepath.Join(dir, "a.tar")
	if _, stderr, code := idplaneRun(t, "snapshot", "save", archive, "--data-dir", a.dataDir); code != 0 {
		t.Fatalf("snapshot save: exit %d: %s", code, stderr)
	}
	good, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0x20
	bad := map[string][]byte{"truncated": good[:len(good)/2], "flipped byte": flipped}
	for name, data := range bad {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "bad.tar")
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(t.TempDir(), "restored")
			stdout, stderr, code := idplaneRun(t, "snapshot", "restore", p, "--data-dir", target)
			if code != 1 || !strings.Contains(stderr, "the archive is truncated, corrupt or not an idplane snapshot") {
				t.Errorf("restore of a %s archive: exit %d\nstdout: %s\nstderr: %s", name, code, stdout, stderr)
			}
			entries, err := os.ReadDir(filepath.Dir(target))
			if err != nil || len(entries) != 0 {
				t.Errorf("a refused restore left %v behind (%v)", entries, err)
			}
		})
	}

	t.Run("another cluster's data directory", func(t *testing.T) {
		b.stop(t)
		digest := treeDigest(t, b.dataDir)
		_, stderr, code := idplaneRun(t, "snapshot", "restore", archive, "--data-dir", b.dataDir)
		if code != 1 || !strings.Contains(stderr, "refusing to restore into "+b.dataDir+": it is not empty, it holds the data of a control plane") {
			t.Errorf("restore into another cluster's data directory: exit %d, stderr %s", code, stderr)
		}
		if treeDigest(t, b.dataDir) != digest {
			t.Errorf("the refused restore changed %s", b.dataDir)
		}
		if left, _ := filepath.Glob(filepath.Join(filepath.Dir(b.dataDir), ".*")); len(left) != 0 {
			t.Errorf("the refused restore left %v beside the data directory", left)
		}
	})

	t.Run("no server running", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "s.tar")
		_, stderr, code := idplaneRun(t, "snapshot", "save", out, "--data-dir", b.dataDir)
		if code != 1 || !strings.Contains(stderr, "is `idplane server --data-dir "+b.dataDir+"` running?") {
			t.Errorf("snapshot save of a stopped server: exit %d, stderr %s", code, stderr)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("an archive was written: %v", err)
		}
	})
}

// TestScheduledSnapshotKilled kills the server with SIGKILL while its scheduled snapshot is being
// written: no archive is ever under its final name unless it is whole, and the next start
// removes the interrupted snapshot's temporaries, which hold keys.
func TestScheduledSnapshotKilled(t *testing.T) {
	t.Parallel()
	snapDir := filepath.Join(t.TempDir(), "snapshots")
	s := startServer(t, "--snapshot-schedule=1s", "--snapshot-dir", snapDir, "--snapshot-retention=2", "--leader-elect=false")
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	// A store of some tens of megabytes makes each snapshot take long enough to be caught.
	big := strings.Repeat("x", 900<<10)
	for i := range 40 {
		_, err := client.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("big-%02d", i)}, Data: map[string]string{"v": big},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	temporaries := func() []string {
		m, _ := filepath.Glob(filepath.Join(snapDir, ".idplane-snapshot-*.tar.tmp*"))
		return m
	}
	var left []string
	for attempt := 0; len(left) == 0; attempt++ {
		if attempt == 5 {
			t.Fatal("never caught a scheduled snapshot in progress")
		}
		if attempt > 0 {
			s.start(t)
		}
		deadline := time.Now().Add(time.Minute)
		for len(temporaries()) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("no scheduled snapshot began within a minute\n%s", tailFile(s.logPath, 20))
			}
			time.Sleep(time.Millisecond)
		}
		s.kill()
		left = temporaries()
	}
	archives, _ := filepath.Glob(filepath.Join(snapDir, "idplane-snapshot-*.tar"))
	for _, a := range archives {
		target := filepath.Join(t.TempDir(), "restored")
		if _, stderr, code := idplaneRun(t, "snapshot", "restore", a, "--data-dir", target); code != 0 {
			t.Errorf("the archive %s under its final name is not whole: %s", a, stderr)
		}
	}
	t.Logf("killed with %d temporaries and %d whole archives in %s", len(left), len(archives), snapDir)

	s.start(t)
	eventually(t, 30*time.Second, func() error {
		for _, p := range left {
			if _, err := os.Stat(p); err == nil {
				return fmt.Errorf("the interrupted snapshot's %s is still there", p)
			}
		}
		return nil
	})
}
