package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Bounds on waiting: generous against a loaded two-core machine, still far below go test's timeout.
const (
	startTimeout   = 60 * time.Second
	stopTimeout    = 30 * time.Second
	kubectlTimeout = 30 * time.Second
)

var (
	servingLine    = regexp.MustCompile(`^idplane \S+ serving on (https://\S+)$`)
	kubeconfigLine = regexp.MustCompile(`^admin kubeconfig: (.+)$`)
)

// serverSlots bounds how many servers run at once, whatever -parallel says: each one runs etcd
// and the test machines have two cores.
var serverSlots = make(chan struct{}, 3)

// server is one `idplane server` process with its own data directory.
type server struct {
	dataDir  string
	args     []string
	logPath  string
	cacheDir string

	// URL and Kubeconfig are what the running process printed.
	URL        string
	Kubeconfig string

	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
}

// startServer starts idplane on a free port in a fresh data directory and waits until it is
// ready. The process is killed when the test ends; its log is shown if the test failed.
func startServer(t *testing.T, args ...string) *server {
	t.Helper()
	return startServerIn(t, t.TempDir(), args...)
}

// startServerIn is startServer on a data directory the test prepared, such as a replica's that
// holds a copy of another server's pki/.
func startServerIn(t *testing.T, dataDir string, args ...string) *server {
	t.Helper()
	if testing.Short() {
		t.Skip("starts an idplane server process; skipped in -short mode")
	}
	serverSlots <- struct{}{}
	t.Cleanup(func() { <-serverSlots })
	s := &server{
		dataDir:  dataDir,
		args:     args,
		logPath:  filepath.Join(t.TempDir(), "idplane.log"),
		cacheDir: t.TempDir(),
	}
	// Registered after the TempDir calls and the slot, so it runs before they are released.
	t.Cleanup(func() {
		s.kill()
		if t.Failed() {
			t.Logf("idplane log (last lines):\n%s", tailFile(s.logPath, 80))
		}
	})
	s.start(t)
	return s
}

func (s *server) start(t *testing.T) {
	t.Helper()
	logFile, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("opening server log: %v", err)
	}
	args := append([]string{"server", "--data-dir", s.dataDir, "--secure-port=0"}, s.args...)
	cmd := exec.Command(idplaneBin, args...)
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		t.Fatalf("piping server stdout: %v", err)
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("starting %s: %v", idplaneBin, err)
	}
	s.cmd, s.exited, s.URL, s.Kubeconfig = cmd, make(chan struct{}), "", ""

	urls, kubeconfigs := make(chan string, 1), make(chan string, 1)
	go func() {
		defer close(s.exited)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logFile, line)
			if m := servingLine.FindStringSubmatch(line); m != nil {
				urls <- m[1]
			}
			if m := kubeconfigLine.FindStringSubmatch(line); m != nil {
				kubeconfigs <- m[1]
			}
		}
		// Drain so the process never blocks on a full pipe after a scanner error.
		_, _ = io.Copy(io.Discard, stdout)
		s.waitErr = cmd.Wait()
		logFile.Close()
	}()

	deadline := time.After(startTimeout)
	for s.URL == "" || s.Kubeconfig == "" {
		select {
		case s.URL = <-urls:
		case s.Kubeconfig = <-kubeconfigs:
		case <-s.exited:
			t.Fatalf("idplane exited before announcing its address: %v\n%s", s.waitErr, tailFile(s.logPath, 40))
		case <-deadline:
			t.Fatalf("idplane did not announce its address and kubeconfig within %v\n%s", startTimeout, tailFile(s.logPath, 40))
		}
	}
	s.waitReady(t, time.Now().Add(startTimeout))
}

// waitReady polls /readyz with the admin client certificate until it answers 200.
func (s *server) waitReady(t *testing.T, deadline time.Time) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatalf("loading admin kubeconfig %s: %v", s.Kubeconfig, err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatalf("building admin HTTP client: %v", err)
	}
	client.Timeout = 5 * time.Second
	var last string
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			t.Fatalf("idplane exited while waiting for /readyz: %v\n%s", s.waitErr, tailFile(s.logPath, 40))
		default:
		}
		resp, err := client.Get(s.URL + "/readyz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("idplane at %s not ready within %v; last answer: %s", s.URL, startTimeout, last)
}

// stop sends SIGTERM and requires a clean exit (status 0) in time.
func (s *server) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("sending SIGTERM to idplane: %v", err)
	}
	select {
	case <-s.exited:
	case <-time.After(stopTimeout):
		s.kill()
		t.Fatalf("idplane did not exit within %v of SIGTERM", stopTimeout)
	}
	if s.waitErr != nil {
		t.Fatalf("idplane did not exit cleanly on SIGTERM: %v\n%s", s.waitErr, tailFile(s.logPath, 40))
	}
}

// restart stops the server and starts it again on the same data directory.
func (s *server) restart(t *testing.T) {
	t.Helper()
	s.stop(t)
	s.start(t)
}

// kill ends the process if it still runs; for cleanup, where a clean exit is not under test.
func (s *server) kill() {
	if s.cmd == nil {
		return
	}
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	select {
	case <-s.exited:
	case <-time.After(stopTimeout):
	}
}

// kubectl runs kubectl as the admin and returns its stdout, failing the test with stderr on error.
func (s *server) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, err := s.run(s.Kubeconfig, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\nstderr: %s\nstdout: %s", strings.Join(args, " "), err, stderr, stdout)
	}
	return stdout
}

// ensureServiceAccount creates a service account unless it exists: ServiceAccount admission
// refuses pods whose account is missing, and a controller may create "default" first.
func (s *server) ensureServiceAccount(t *testing.T, namespace, name string) {
	t.Helper()
	if out, err := s.kubectlErr("create", "serviceaccount", name, "-n", namespace); err != nil && !strings.Contains(out, "already exists") {
		t.Fatalf("creating service account %s/%s: %v\n%s", namespace, name, err, out)
	}
}

// kubectlErr runs kubectl as the admin and returns its combined output, for commands expected to fail.
func (s *server) kubectlErr(args ...string) (string, error) {
	return s.kubectlAs(s.Kubeconfig, args...)
}

// kubectlAs runs kubectl with the given kubeconfig and returns its combined output.
func (s *server) kubectlAs(kubeconfig string, args ...string) (string, error) {
	stdout, stderr, err := s.run(kubeconfig, args...)
	return stdout + stderr, err
}

func (s *server) run(kubeconfig string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	cmd := s.kubectlCommand(ctx, kubeconfig, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %v: %w", kubectlTimeout, err)
	}
	return out.String(), errOut.String(), err
}

func (s *server) kubectlCommand(ctx context.Context, kubeconfig string, args ...string) *exec.Cmd {
	// A private cache directory keeps discovery caches of earlier servers (same host, other
	// ports, other resources) out of the way and keeps $HOME clean.
	full := append([]string{"--kubeconfig", kubeconfig, "--cache-dir", s.cacheDir}, args...)
	cmd := exec.CommandContext(ctx, kubectlBin, full...)
	cmd.Env = append(os.Environ(), "KUBECONFIG=")
	return cmd
}

// background is a long-running kubectl, such as a watch, whose stdout arrives line by line.
type background struct {
	lines  chan string
	stderr *syncBuffer
	cancel context.CancelFunc
	done   chan struct{}
}

// kubectlBackground starts kubectl as the admin; it is killed when the test ends or stop is called.
func (s *server) kubectlBackground(t *testing.T, args ...string) *background {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	cmd := s.kubectlCommand(ctx, s.Kubeconfig, args...)
	b := &background{lines: make(chan string, 100), stderr: &syncBuffer{}, cancel: cancel, done: make(chan struct{})}
	cmd.Stderr = b.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatalf("piping kubectl stdout: %v", err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting kubectl %s: %v", strings.Join(args, " "), err)
	}
	go func() {
		defer close(b.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case b.lines <- sc.Text():
			case <-ctx.Done():
				// Nobody reads any more; keep draining so the killed process reaches EOF.
			}
		}
		close(b.lines)
		_ = cmd.Wait()
	}()
	t.Cleanup(b.stop)
	return b
}

// next returns the next stdout line, failing the test if none comes in time.
func (b *background) next(t *testing.T, timeout time.Duration) string {
	t.Helper()
	select {
	case line, ok := <-b.lines:
		if !ok {
			t.Fatalf("kubectl ended without the expected output; stderr: %s", b.stderr.String())
		}
		return line
	case <-time.After(timeout):
		t.Fatalf("no output from kubectl within %v; stderr: %s", timeout, b.stderr.String())
	}
	return ""
}

func (b *background) stop() {
	b.cancel()
	<-b.done
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// kubeconfigServer is the server address the kubeconfig at path points to.
func kubeconfigServer(t *testing.T, path string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatalf("loading kubeconfig %s: %v", path, err)
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		t.Fatalf("kubeconfig %s: current context %q not found", path, cfg.CurrentContext)
	}
	cluster, ok := cfg.Clusters[ctx.Cluster]
	if !ok {
		t.Fatalf("kubeconfig %s: cluster %q not found", path, ctx.Cluster)
	}
	return cluster.Server
}

// testCA is a certificate authority for issuing client certificates.
type testCA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
}

// serverCA loads the CA idplane created in its data directory, the one it trusts for clients.
func (s *server) serverCA(t *testing.T) *testCA {
	t.Helper()
	certPEM, err := os.ReadFile(filepath.Join(s.dataDir, "pki", "ca.crt"))
	if err != nil {
		t.Fatalf("reading server CA certificate: %v", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(s.dataDir, "pki", "ca.key"))
	if err != nil {
		t.Fatalf("reading server CA key: %v", err)
	}
	certBlock, _ := pem.Decode(certPEM)
	if certBlock == nil || certBlock.Type != "CERTIFICATE" {
		t.Fatalf("server CA certificate: no CERTIFICATE PEM block")
	}
	cert, err := x509.ParseCertificate(certBlock.Bytes)
	if err != nil {
		t.Fatalf("parsing server CA certificate: %v", err)
	}
	keyBlock, _ := pem.Decode(keyPEM)
	if keyBlock == nil || keyBlock.Type != "EC PRIVATE KEY" {
		t.Fatalf("server CA key: no EC PRIVATE KEY PEM block")
	}
	key, err := x509.ParseECPrivateKey(keyBlock.Bytes)
	if err != nil {
		t.Fatalf("parsing server CA key: %v", err)
	}
	return &testCA{cert: cert, key: key, certPEM: certPEM}
}

// newCA makes a self-signed CA unrelated to any server.
func newCA(t *testing.T, commonName string) *testCA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serialNumber(t),
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("creating CA certificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("parsing CA certificate: %v", err)
	}
	return &testCA{cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issueClient issues a client certificate; Kubernetes reads the user from the common name and
// the groups from the organizations.
func (ca *testCA) issueClient(t *testing.T, user string, groups ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: serialNumber(t),
		Subject:      pkix.Name{CommonName: user, Organization: groups},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatalf("issuing client certificate for %s: %v", user, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatalf("encoding client key: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// clientKubeconfig writes a kubeconfig for this server that authenticates with the given client
// certificate, and returns its path.
func (s *server) clientKubeconfig(t *testing.T, certPEM, keyPEM []byte) string {
	return s.kubeconfigFor(t, &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM})
}

// tokenKubeconfig writes a kubeconfig for this server that authenticates with a bearer token only.
func (s *server) tokenKubeconfig(t *testing.T, token string) string {
	return s.kubeconfigFor(t, &clientcmdapi.AuthInfo{Token: token})
}

func (s *server) kubeconfigFor(t *testing.T, auth *clientcmdapi.AuthInfo) string {
	t.Helper()
	serverCA, err := os.ReadFile(filepath.Join(s.dataDir, "pki", "ca.crt"))
	if err != nil {
		t.Fatalf("reading server CA certificate: %v", err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: s.URL, CertificateAuthorityData: serverCA}
	cfg.AuthInfos["e2e"] = auth
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "e2e"}
	cfg.CurrentContext = "e2e"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatalf("writing kubeconfig: %v", err)
	}
	return path
}

// userKubeconfig writes a kubeconfig for a user whose client certificate the server's own CA
// signed, so the server authenticates it as user in groups.
func (s *server) userKubeconfig(t *testing.T, user string, groups ...string) string {
	t.Helper()
	cert, key := s.serverCA(t).issueClient(t, user, groups...)
	return s.clientKubeconfig(t, cert, key)
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("generating key: %v", err)
	}
	return key
}

func serialNumber(t *testing.T) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		t.Fatalf("generating serial number: %v", err)
	}
	return n
}

// manifest writes content to a file for `kubectl -f` and returns its path.
func manifest(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatalf("writing manifest: %v", err)
	}
	return path
}

// eventually polls cond until it returns nil or timeout passes, then fails with its last error.
func eventually(t *testing.T, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %v", timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// exitCode is the status of a failed command, or -1 when it did not run to an exit.
func exitCode(err error) int {
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return exitErr.ExitCode()
	}
	return -1
}
