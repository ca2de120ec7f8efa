package apiserver

import (
	"context"
	"crypto/x509"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/idplane/idplane/internal/pki"
)

// TestExternalEtcdWithTLS runs the server against an etcd it did not start, which demands client
// certificates, and checks the data lives there: a second server with a fresh data directory (a
// new CA, no local etcd) sees the first one's objects.
func TestExternalEtcdWithTLS(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.EnsureCA(pki.Files{Dir: filepath.Join(dir, "etcd-pki")}, "etcd-ca", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := pki.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sock := filepath.Join(dir, "etcd.sock")
	// The etcd client names a unix endpoint's TLS server by the socket's base name.
	serverCert, serverKey, err := pki.Issue(ca, pki.IssueRequest{
		CommonName: "etcd", DNSNames: []string{filepath.Base(sock)}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, Validity: time.Hour, Now: time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	clientCert, clientKey, err := pki.Issue(ca, pki.IssueRequest{
		CommonName: "idplane", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, Validity: time.Hour, Now: time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	caFile := write("etcd-ca.crt", ca.CertPEM)

	cfg := embed.NewConfig()
	cfg.Name = "external"
	cfg.Dir = filepath.Join(dir, "etcd-data")
	clientURL := url.URL{Scheme: "unixs", Path: sock}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	peer := filepath.Join(dir, "peer.sock")
	cfg.ListenPeerUrls = []url.URL{{Scheme: "unix", Host: peer}}
	cfg.AdvertisePeerUrls = []url.URL{{Scheme: "unix", Path: peer}}
	cfg.InitialCluster = cfg.Name + "=" + cfg.AdvertisePeerUrls[0].String()
	cfg.TickMs, cfg.ElectionMs = 10, 100
	cfg.LogLevel = "fatal"
	cfg.ClientTLSInfo.CertFile = write("etcd.crt", serverCert)
	cfg.ClientTLSInfo.KeyFile = write("etcd.key", serverKey)
	cfg.ClientTLSInfo.TrustedCAFile = caFile
	cfg.ClientTLSInfo.ClientCertAuth = true
	etcd, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	select {
	case <-etcd.Server.ReadyNotify():
	case <-time.After(time.Minute):
		t.Fatal("external etcd not ready")
	}

	external := func(o *Options) {
		o.EtcdServers = []string{clientURL.String()}
		o.EtcdCAFile = caFile
		o.EtcdCertFile = write("client.crt", clientCert)
		o.EtcdKeyFile = write("client.key", clientKey)
	}
	ctx := context.Background()
	first := startTestServer(t, filepath.Join(dir, "first"), external)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shared"}, Data: map[string][]byte{"k": []byte("v")}}
	if _, err := first.client.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first.stop()

	// `idplane snapshot save` reaches the external etcd with the server's flags, and only with them.
	o := SnapshotSaveOptions{DataDir: filepath.Join(dir, "first"), EtcdServers: []string{clientURL.String()}, EtcdCAFile: caFile,
		EtcdCertFile: filepath.Join(dir, "client.crt"), EtcdKeyFile: filepath.Join(dir, "client.key"), Path: filepath.Join(dir, "backup.tar")}
	if m, err := SaveSnapshot(ctx, o); err != nil || m.Etcd.Revision == 0 {
		t.Errorf("snapshot save from the external etcd: %+v, %v", m, err)
	}
	o.EtcdCertFile, o.EtcdKeyFile, o.Path = "", "", filepath.Join(dir, "refused.tar")
	if _, err := SaveSnapshot(ctx, o); err == nil {
		t.Error("snapshot save without the client certificate the external etcd demands succeeded")
	}

	// Servers sharing an etcd share the key that encrypts secrets in it.
	key, err := os.ReadFile(filepath.Join(dir, "first", "pki", generatedEncryptionConfig))
	if err != nil {
		t.Fatal(err)
	}
	write(filepath.Join("second", "pki", generatedEncryptionConfig), key)
	second := startTestServer(t, filepath.Join(dir, "second"), external)
	got, err := second.client.CoreV1().Secrets("default").Get(ctx, "shared", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("second server does not see the first one's secret: %v", err)
	}
	if string(got.Data["k"]) != "v" {
		t.Errorf("secret data %q", got.Data)
	}
}
