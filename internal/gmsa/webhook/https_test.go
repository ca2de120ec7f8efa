package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/idplane/idplane/internal/pki"
)

// testPKI is a CA and the serving certificate files it issues, in a temporary directory.
type testPKI struct {
	ca                *pki.CA
	certFile, keyFile string
}

func newTestPKI(t testing.TB) *testPKI {
	dir := t.TempDir()
	ca, err := pki.EnsureCA(pki.Files{Dir: dir}, "gmsa-webhook-test-ca", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p := &testPKI{ca: ca, certFile: filepath.Join(dir, "tls.crt"), keyFile: filepath.Join(dir, "tls.key")}
	p.issue(t, func(certPEM, keyPEM []byte) {
		writeFile(t, p.certFile, certPEM)
		writeFile(t, p.keyFile, keyPEM)
	})
	return p
}

// issue issues a serving certificate for 127.0.0.1 and hands it to write; it returns its serial.
func (p *testPKI) issue(t testing.TB, write func(certPEM, keyPEM []byte)) string {
	certPEM, keyPEM, err := pki.Issue(p.ca, pki.IssueRequest{
		CommonName:  "gmsa-webhook",
		DNSNames:    []string{"gmsa-webhook.gmsa-webhook.svc"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		Usages:      []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		Validity:    time.Hour,
		Now:         time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	write(certPEM, keyPEM)
	cert, err := pki.ParseCertificate(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	return cert.SerialNumber.String()
}

func (p *testPKI) pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(p.ca.Cert)
	return pool
}

func writeFile(t testing.TB, path string, data []byte) {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// replaceFile writes data beside path and renames it over path, as a Secret volume's update swaps
// files rather than rewriting them.
func replaceFile(t testing.TB, path string, data []byte) {
	tmp := path + ".new"
	writeFile(t, tmp, data)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// startServer serves h over HTTPS on a free port of 127.0.0.1 until the test ends, and returns
// its URL and a client trusting p's CA.
func startServer(t testing.TB, h http.Handler, p *testPKI) (string, *http.Client) {
	srv, err := NewServer(h, p.certFile, p.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(shutdownTimeout):
			t.Error("Serve did not return after its context was cancelled")
		}
	})
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: p.pool()},
		ForceAttemptHTTP2: true,
	}}
	t.Cleanup(client.CloseIdleConnections)
	return "https://" + ln.Addr().String(), client
}

// postHTTPS posts an AdmissionReview to url; the answer comes as a recorder, so that the handler
// tests' checks apply.
func postHTTPS(t testing.TB, client *http.Client, url string, body []byte) *httptest.ResponseRecorder {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rec := httptest.NewRecorder()
	rec.Code = resp.StatusCode
	rec.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	if _, err := io.Copy(rec.Body, resp.Body); err != nil {
		t.Fatal(err)
	}
	return rec
}

// servedSerial is the serial of the certificate the server at addr presents now, on a new
// connection.
func servedSerial(addr string, pool *x509.CertPool) (string, error) {
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool})
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
}

// TestHTTPS sends AdmissionReviews over real HTTPS, then rotates the certificate files, in place
// and by rename, and waits for the new certificates to be served.
func TestHTTPS(t *testing.T) {
	p := newTestPKI(t)
	c := newCluster(t)
	url, client := startServer(t, c.handler(Options{RandomHostname: true}), p)
	addr := url[len("https://"):]

	req := create(newPod(onApp("webapp1", "")))
	resp := responseOf(t, postHTTPS(t, client, url+"/mutate", reviewOf(req)), req.UID)
	if !resp.Allowed {
		t.Fatalf("mutate refused: %+v", resp.Result)
	}
	pod := applyPatch(t, req.Object.Raw, resp.Patch)
	if got := deref(pod.Spec.Containers[0].SecurityContext.WindowsOptions.GMSACredentialSpec); got != webapp1Compact || !dnsLabel15.MatchString(pod.Spec.Hostname) {
		t.Errorf("patched pod has contents %q and hostname %q", got, pod.Spec.Hostname)
	}

	denied := create(newPod(withServiceAccount("other"), onApp("webapp1", webapp1Compact)))
	if resp := responseOf(t, postHTTPS(t, client, url+"/validate", reviewOf(denied)), denied.UID); resp.Allowed || resp.Result.Code != 403 {
		t.Errorf("validate answered %+v, want a 403", resp)
	}

	rec := postHTTPS(t, client, url+"/validate", []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":null}`))
	if rec.Code != http.StatusBadRequest || !bytes.Contains(rec.Body.Bytes(), []byte("has no request")) {
		t.Errorf("null request: HTTP %d %q", rec.Code, rec.Body)
	}

	old := &tls.Config{RootCAs: p.pool(), MaxVersion: tls.VersionTLS11}
	if conn, err := tls.Dial("tcp", addr, old); err == nil {
		conn.Close()
		t.Error("a TLS 1.1 handshake succeeded")
	}

	// In place, as an admin's cp does; the key is written first, so the loader sees a pair that does
	// not match until the certificate follows, and must keep the old one meanwhile.
	serial := p.issue(t, func(certPEM, keyPEM []byte) {
		writeFile(t, p.keyFile, keyPEM)
		writeFile(t, p.certFile, certPEM)
	})
	waitForSerial(t, addr, p, serial)
	// By rename, as the kubelet updates a Secret volume.
	serial = p.issue(t, func(certPEM, keyPEM []byte) {
		replaceFile(t, p.certFile, certPEM)
		replaceFile(t, p.keyFile, keyPEM)
	})
	waitForSerial(t, addr, p, serial)

	client.CloseIdleConnections()
	allowedReq := create(newPod(onApp("webapp1", webapp1Compact)))
	if resp := responseOf(t, postHTTPS(t, client, url+"/validate", reviewOf(allowedReq)), allowedReq.UID); !resp.Allowed {
		t.Errorf("after the rotations, validate answered %+v", resp)
	}
}

func waitForSerial(t *testing.T, addr string, p *testPKI, want string) {
	t.Helper()
	var got string
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		s, err := servedSerial(addr, p.pool())
		if err != nil {
			return false, err
		}
		got = s
		return got == want, nil
	})
	if err != nil {
		t.Fatalf("serving certificate %s, want %s: %v", got, want, err)
	}
}

// TestGracefulShutdown: once its context is done the server finishes the review in flight and
// then returns, closed to new connections.
func TestGracefulShutdown(t *testing.T) {
	p := newTestPKI(t)
	started, release := make(chan struct{}), make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(started)
		<-release
		_, _ = w.Write([]byte("done"))
	})
	srv, err := NewServer(slow, p.certFile, p.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.pool()}}}
	defer client.CloseIdleConnections()
	answered := make(chan string, 1)
	go func() {
		resp, err := client.Get("https://" + ln.Addr().String() + "/")
		if err != nil {
			answered <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answered <- string(b)
	}()
	<-started
	cancel()
	select {
	case err := <-served:
		t.Fatalf("Serve returned %v with a request in flight", err)
	default:
	}
	close(release)
	if got := <-answered; got != "done" {
		t.Errorf("the request in flight got %q", got)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: p.pool()}); err == nil {
		conn.Close()
		t.Error("a connection was accepted after shutdown")
	}
}

// TestNewServerRefusesBadFiles: a missing or mismatched pair fails the start, not every handshake.
func TestNewServerRefusesBadFiles(t *testing.T) {
	p, other := newTestPKI(t), newTestPKI(t)
	for name, files := range map[string][2]string{
		"missing certificate":    {filepath.Join(t.TempDir(), "tls.crt"), p.keyFile},
		"key of another pair":    {p.certFile, other.keyFile},
		"certificate as the key": {p.certFile, p.certFile},
	} {
		if _, err := NewServer(http.NotFoundHandler(), files[0], files[1]); err == nil {
			t.Errorf("%s: no error", name)
		} else if !strings.Contains(err.Error(), "loading the serving certificate") {
			t.Errorf("%s: error %q does not say what it was loading", name, err)
		}
	}
}
