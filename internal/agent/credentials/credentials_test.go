package credentials

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/certificate"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/idplane/idplane/internal/kubeconfig"
	"github.com/idplane/idplane/internal/pki"
)

func TestRotationDeadline(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	end := start.Add(100 * time.Hour)
	cases := []struct {
		random float64
		want   time.Duration
	}{
		{0, 70 * time.Hour},
		{0.5, 80 * time.Hour},
		{0.999999, 90*time.Hour - 72*time.Millisecond},
	}
	for _, tc := range cases {
		got := rotationDeadline(start, end, tc.random).Sub(start)
		if diff := got - tc.want; diff < -time.Millisecond || diff > time.Millisecond {
			t.Errorf("random %v: deadline at %v of the lifetime, want %v", tc.random, got, tc.want)
		}
	}
}

func TestSatisfies(t *testing.T) {
	template := &x509.CertificateRequest{
		Subject:     pkix.Name{CommonName: "system:node:a", Organization: []string{"system:nodes"}},
		DNSNames:    []string{"a.example"},
		IPAddresses: []net.IP{net.ParseIP("192.0.2.1")},
	}
	full := func() *x509.Certificate {
		return &x509.Certificate{
			Subject:     pkix.Name{CommonName: "system:node:a", Organization: []string{"system:nodes", "extra"}},
			DNSNames:    []string{"a.example", "more.example"},
			IPAddresses: []net.IP{net.ParseIP("192.0.2.1").To4()},
		}
	}
	cases := []struct {
		name   string
		change func(*x509.Certificate)
		want   bool
	}{
		{"everything asked and more", func(*x509.Certificate) {}, true},
		{"other node", func(c *x509.Certificate) { c.Subject.CommonName = "system:node:b" }, false},
		{"no group", func(c *x509.Certificate) { c.Subject.Organization = nil }, false},
		{"missing DNS name", func(c *x509.Certificate) { c.DNSNames = []string{"more.example"} }, false},
		{"missing IP", func(c *x509.Certificate) { c.IPAddresses = []net.IP{net.ParseIP("192.0.2.2")} }, false},
	}
	for _, tc := range cases {
		c := full()
		tc.change(c)
		if got := satisfies(c, template); got != tc.want {
			t.Errorf("%s: satisfies = %v, want %v", tc.name, got, tc.want)
		}
	}
	if satisfies(nil, template) {
		t.Error("no certificate satisfies")
	}
}

func TestServingTemplate(t *testing.T) {
	if servingTemplate("a", "", nil) != nil {
		t.Error("a serving request without any name")
	}
	got := servingTemplate("a", "a.example", []net.IP{net.ParseIP("192.0.2.1")})
	if got.Subject.CommonName != "system:node:a" || got.Subject.Organization[0] != "system:nodes" ||
		got.DNSNames[0] != "a.example" || !got.IPAddresses[0].Equal(net.ParseIP("192.0.2.1")) {
		t.Errorf("serving template %+v", got)
	}
	// A loopback address is never the node's to serve under; with nothing else left, the host
	// name alone, and no request at all without one.
	got = servingTemplate("a", "a.example", []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")})
	if len(got.IPAddresses) != 0 || !slices.Equal(got.DNSNames, []string{"a.example"}) {
		t.Errorf("serving template with loopback addresses: DNS %v IPs %v", got.DNSNames, got.IPAddresses)
	}
	if got := servingTemplate("a", "", []net.IP{net.ParseIP("127.0.0.1")}); got != nil {
		t.Errorf("serving template from a loopback address alone: %+v", got)
	}
}

// fakeManager issues certificates valid from the clock's now for lifetime, failing the first
// failures requests.
type fakeManager struct {
	certificate.Manager
	clock    *clocktesting.FakeClock
	lifetime time.Duration
	cn       string

	mu       sync.Mutex
	cert     *tls.Certificate
	requests int
	failures int
}

func (m *fakeManager) Current() *tls.Certificate {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cert
}

func (m *fakeManager) RotateCerts() (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests++
	if m.failures > 0 {
		m.failures--
		return false, nil
	}
	now := m.clock.Now()
	m.cert = &tls.Certificate{Leaf: &x509.Certificate{
		SerialNumber: big.NewInt(int64(m.requests)),
		Subject:      pkix.Name{CommonName: m.cn, Organization: []string{"system:nodes"}},
		NotBefore:    now, NotAfter: now.Add(m.lifetime),
	}}
	return true, nil
}

func (m *fakeManager) Stop() {}

func (m *fakeManager) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests
}

func waitFor(t *testing.T, what string, check func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return check(), nil
	}); err != nil {
		t.Fatalf("waiting for %s", what)
	}
}

// TestRotationTiming: the loop renews exactly at the jittered deadline of the clock, retries a
// failed request after a backoff on the same clock, and drops connections after each renewal.
func TestRotationTiming(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	m := &fakeManager{clock: clk, lifetime: 100 * time.Hour, cn: "system:node:a"}
	var dropped atomic.Int32
	r := &rotation{
		name: "test", manager: m, template: nodeTemplate("a"), clock: clk,
		random:  func() float64 { return 0.5 },
		rotated: func() { dropped.Add(1) },
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()

	// No certificate: requested at once.
	waitFor(t, "first certificate", func() bool { return m.count() == 1 && clk.HasWaiters() })
	if dropped.Load() != 1 {
		t.Errorf("connections dropped %d times, want 1", dropped.Load())
	}
	// Due at 80 % (random 0.5): not a moment before.
	clk.SetTime(start.Add(80*time.Hour - time.Second))
	if m.count() != 1 || !clk.HasWaiters() {
		t.Fatal("renewed before the deadline")
	}
	m.mu.Lock()
	m.failures = 1
	m.mu.Unlock()
	clk.SetTime(start.Add(80 * time.Hour))
	waitFor(t, "a failed renewal waiting to retry", func() bool { return m.count() == 2 && clk.HasWaiters() })
	if m.Current().Leaf.SerialNumber.Int64() != 1 || dropped.Load() != 1 {
		t.Fatal("a failed renewal replaced the certificate")
	}
	clk.Step(2200 * time.Millisecond) // the first backoff, 2 s with 10 % jitter
	waitFor(t, "renewal after the backoff", func() bool { return m.count() == 3 && clk.HasWaiters() })
	if m.Current().Leaf.SerialNumber.Int64() != 3 || dropped.Load() != 2 {
		t.Errorf("after the retry serial %v, connections dropped %d times", m.Current().Leaf.SerialNumber, dropped.Load())
	}
}

// TestRotationRenewsForeignCertificate: a certificate for another node is due at once.
func TestRotationRenewsForeignCertificate(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	m := &fakeManager{clock: clk, lifetime: time.Hour, cn: "system:node:other"}
	if _, err := m.RotateCerts(); err != nil {
		t.Fatal(err)
	}
	r := &rotation{manager: m, template: nodeTemplate("a"), clock: clk, random: func() float64 { return 0 }}
	if !r.deadline().Equal(clk.Now()) || r.usable() != nil {
		t.Error("another node's certificate is treated as the node's")
	}
	m.cn = "system:node:a"
	if _, err := m.RotateCerts(); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Hour)
	if r.usable() != nil {
		t.Error("an expired certificate is usable")
	}
}

// nodeKubeconfigFor writes DIR/kubeconfig with a certificate for cn valid from notBefore for validity.
func nodeKubeconfigFor(t *testing.T, dir string, ca *pki.CA, cn string, notBefore time.Time, validity time.Duration) {
	t.Helper()
	certPEM, keyPEM, err := pki.Issue(ca, pki.IssueRequest{
		CommonName: cn, Organization: []string{"system:nodes"},
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, Validity: validity, Now: notBefore,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := kubeconfig.Write(kubeconfigPath(dir), "n", kubeconfig.Credentials{
		Server: "https://192.0.2.1:6443", CAPEM: ca.CertPEM, CertPEM: certPEM, KeyPEM: keyPEM,
	}); err != nil {
		t.Fatal(err)
	}
}

func TestLoadNodeKubeconfig(t *testing.T) {
	now := time.Now()
	ca, err := pki.EnsureCA(pki.Files{Dir: t.TempDir()}, "test-ca", now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		cn        string
		notBefore time.Time
		validity  time.Duration
		wantErr   string
	}{
		{"valid", "system:node:a", now.Add(-time.Minute), time.Hour, ""},
		{"another node's", "system:node:b", now.Add(-time.Minute), time.Hour, `for "system:node:b"`},
		{"expired", "system:node:a", now.Add(-2 * time.Hour), time.Hour, "expired"},
		{"not yet valid", "system:node:a", now.Add(time.Hour), time.Hour, "valid only from"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			nodeKubeconfigFor(t, dir, ca, tc.cn, tc.notBefore, tc.validity)
			got, err := loadNodeKubeconfig(kubeconfigPath(dir), nodeTemplate("a"), "", now)
			if tc.wantErr == "" {
				if err != nil || got.server != "https://192.0.2.1:6443" {
					t.Fatalf("got %+v, %v", got, err)
				}
				return
			}
			if !errors.Is(err, errUnusable) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want unusable: %s", err, tc.wantErr)
			}
		})
	}
	t.Run("server override", func(t *testing.T) {
		dir := t.TempDir()
		nodeKubeconfigFor(t, dir, ca, "system:node:a", now.Add(-time.Minute), time.Hour)
		got, err := loadNodeKubeconfig(kubeconfigPath(dir), nodeTemplate("a"), "https://override:443", now)
		if err != nil || got.server != "https://override:443" {
			t.Errorf("got %+v, %v", got, err)
		}
	})
}

// TestStartRefusals: bad configuration and a node without usable credentials fail clearly,
// before anything is written.
func TestStartRefusals(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"no directory", Config{NodeName: "a"}, "directory is required"},
		{"no node", Config{RootDir: t.TempDir()}, "node name is required"},
		{"bad node name", Config{RootDir: t.TempDir(), NodeName: "A_B"}, "node name"},
		{"unspecified address", Config{RootDir: t.TempDir(), NodeName: "a", Addresses: []net.IP{net.IPv4zero}}, "cannot name the node"},
		{"no credentials", Config{RootDir: t.TempDir(), NodeName: "a"}, "no bootstrap kubeconfig"},
		{"missing bootstrap kubeconfig", Config{RootDir: t.TempDir(), NodeName: "a", BootstrapKubeconfig: filepath.Join(t.TempDir(), "none")}, "bootstrap kubeconfig"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Start(ctx, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one mentioning %q", err, tc.wantErr)
			}
		})
	}
	t.Run("bootstrap kubeconfig without CA", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "bootstrap")
		data := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://192.0.2.1'}}]\n" +
			"users: [{name: u, user: {token: abc}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Start(ctx, Config{RootDir: t.TempDir(), NodeName: "a", BootstrapKubeconfig: path})
		if err == nil || !strings.Contains(err.Error(), "no certificate authority") {
			t.Errorf("error %v, want the missing CA named", err)
		}
	})
}
