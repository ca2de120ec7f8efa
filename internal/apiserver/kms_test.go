package apiserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2"
	"k8s.io/client-go/rest"

	"github.com/idplane/idplane/internal/kmsplugin"
)

// kmsPlugin is an idplane kms-plugin run in process on a short socket path (unix socket paths
// are limited to about 100 bytes, which test temporary directories can exceed).
type kmsPlugin struct {
	socket, keyFile string
	stop            func()
}

func newKMSKey(t *testing.T) (b64, id string) {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b), kmsplugin.KeyID(b)
}

func writeKMSKeys(t *testing.T, path string, keys ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(keys, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func startKMSPlugin(t *testing.T, keys ...string) *kmsPlugin {
	t.Helper()
	dir, err := os.MkdirTemp("", "kms")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &kmsPlugin{socket: filepath.Join(dir, "kms.sock"), keyFile: filepath.Join(dir, "keys")}
	writeKMSKeys(t, p.keyFile, keys...)
	p.start(t)
	return p
}

// start serves the plugin and returns once its socket exists.
func (p *kmsPlugin) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- kmsplugin.Serve(ctx, p.socket, p.keyFile) }()
	p.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("kms plugin: %v", err)
		}
		p.stop = func() {}
	}
	t.Cleanup(func() { p.stop() })
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, err := os.Stat(p.socket)
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("kms plugin socket never appeared: %v", err)
	}
}

// kmsEncryptionConfig writes a configuration encrypting secrets through the plugin under a
// provider name unique to the test: the library's clock hook is keyed by it.
func kmsEncryptionConfig(t *testing.T, p *kmsPlugin, name string) string {
	return writeFile(t, t.TempDir(), "encryption.yaml", fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - kms: {apiVersion: v2, name: %s, endpoint: unix://%s, timeout: 2s}
  - identity: {}
`, name, p.socket))
}

// readyzCheck GETs /readyz/<check> and returns its status code and body.
func readyzCheck(t *testing.T, cfg *rest.Config, check string) (int, string) {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(cfg.Host + "/readyz/" + check)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// waitReadyzCheck polls /readyz/<check> until it answers code. The library caches a plugin's
// healthy answer for 20 seconds (real time, no hook), so a change shows within about that long.
func waitReadyzCheck(t *testing.T, cfg *rest.Config, check string, code int) string {
	t.Helper()
	var body string
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		var got int
		got, body = readyzCheck(t, cfg, check)
		return got == code, nil
	})
	if err != nil {
		t.Fatalf("/readyz/%s never answered %d; last: %s", check, code, body)
	}
	return body
}

func etcdHasKey(t *testing.T, ts *testServer, key string) bool {
	t.Helper()
	client, err := newEtcdClient([]string{ts.etcd.clientURL}, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	resp, err := client.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return len(resp.Kvs) > 0
}

// TestKMSv2EnvelopeEncryption runs secrets through idplane's KMS plugin: stored under the KMS
// prefix, a key rotation picked up at the next status poll, the plugin going away (readiness
// says why, writes coast on the cached data key until the library lets it expire, then fail
// with a 500 and write nothing) and coming back.
func TestKMSv2EnvelopeEncryption(t *testing.T) {
	const provider = "idplane-test-kms-envelope"
	keyA, idA := newKMSKey(t)
	keyB, idB := newKMSKey(t)
	plugin := startKMSPlugin(t, keyA)
	ts := startTestServer(t, t.TempDir(), func(o *Options) { o.Encryption.ProviderConfigFile = kmsEncryptionConfig(t, plugin, provider) })

	createSecret(t, ts, "s1", "first-value")
	expectStoredWith(t, ts, "s1", "first-value", "k8s:enc:kms:v2:"+provider+":")
	if raw := rawEtcdValue(t, ts, secretKey("default", "s1")); !bytes.Contains(raw, []byte(idA)) {
		t.Fatalf("s1 is not stored under key %s", idA)
	}
	expectSecret(t, ts, "s1", "first-value")
	if code, body := readyzCheck(t, ts.config, "kms-providers"); code != http.StatusOK {
		t.Fatalf("/readyz/kms-providers answered %d: %s", code, body)
	}

	// Rotation: the new key on top of the file. New writes use it once the library has polled
	// the plugin's Status again; what was written before still reads.
	writeKMSKeys(t, plugin.keyFile, keyB, keyA)
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		readyzCheck(t, ts.config, "kms-providers") // the check is what polls Status
		s, err := ts.client.CoreV1().Secrets("default").Create(context.Background(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "rotated-"}, StringData: map[string]string{"password": "v"},
		}, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		return bytes.Contains(rawEtcdValue(t, ts, secretKey("default", s.Name)), []byte(idB)), nil
	})
	if err != nil {
		t.Fatalf("writes never used the rotated key %s: %v", idB, err)
	}
	createSecret(t, ts, "s2", "second-value")
	expectStoredWith(t, ts, "s2", "second-value", "k8s:enc:kms:v2:"+provider+":")
	if !bytes.Contains(rawEtcdValue(t, ts, secretKey("default", "s2")), []byte(idB)) {
		t.Fatal("s2 is not stored under the rotated key")
	}
	expectSecret(t, ts, "s1", "first-value")

	// The plugin goes away. Readiness says why once the library's cached answer runs out.
	plugin.stop()
	body := waitReadyzCheck(t, ts.config, "kms-providers", http.StatusInternalServerError)
	if !strings.Contains(body, "KMS Provider "+provider) {
		t.Fatalf("/readyz/kms-providers does not say which provider failed: %s", body)
	}
	// Until the cached data key's write window ends, writes go on and cached keys read.
	createSecret(t, ts, "coasting", "written-while-down")
	expectSecret(t, ts, "s2", "second-value")

	// Move the library's clock past that window (3 minutes after the last healthy poll).
	restore := kmsv2.SetNowFuncForTests(provider, func() time.Time { return time.Now().Add(5 * time.Minute) })
	defer restore()
	_, err = ts.client.CoreV1().Secrets("default").Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "refused"}, StringData: map[string]string{"password": "never-stored"},
	}, metav1.CreateOptions{})
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("creating a secret once the data key expired: %v; want a 500 saying it expired", err)
	}
	if etcdHasKey(t, ts, secretKey("default", "refused")) {
		t.Fatal("a refused write reached etcd")
	}
	s1, err := ts.client.CoreV1().Secrets("default").Get(context.Background(), "s1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := rawEtcdValue(t, ts, secretKey("default", "s1"))
	s1.StringData = map[string]string{"password": "changed"}
	if _, err := ts.client.CoreV1().Secrets("default").Update(context.Background(), s1, metav1.UpdateOptions{}); !apierrors.IsInternalError(err) {
		t.Fatalf("updating a secret once the data key expired: %v; want a 500", err)
	}
	if after := rawEtcdValue(t, ts, secretKey("default", "s1")); !bytes.Equal(before, after) {
		t.Fatal("a refused update changed what etcd holds")
	}
	// Other resources are not encrypted and keep working.
	if _, err := ts.client.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a config map while the plugin is down: %v", err)
	}

	// The plugin comes back: the next poll renews the data key's window and writes resume.
	plugin.start(t)
	waitReadyzCheck(t, ts.config, "kms-providers", http.StatusOK)
	createSecret(t, ts, "after", "written-after-return")
	expectSecret(t, ts, "after", "written-after-return")
	expectSecret(t, ts, "s1", "first-value")
	expectSecret(t, ts, "coasting", "written-while-down")

	// A restart while the plugin is down is refused, saying so, rather than serving secrets
	// it cannot read.
	ts.stop()
	plugin.stop()
	o := NewOptions()
	o.DataDir, o.SecurePort, o.Encryption.ProviderConfigFile = ts.dataDir, 0, kmsEncryptionConfig(t, plugin, provider)
	expectStartRefused(t, o, "with a kms provider its plugin must be running")

	// With the plugin back, the start-up check passes and every secret reads.
	plugin.start(t)
	ts = startTestServer(t, ts.dataDir, func(o *Options) { o.Encryption.ProviderConfigFile = kmsEncryptionConfig(t, plugin, provider) })
	expectSecret(t, ts, "s1", "first-value")
	expectSecret(t, ts, "s2", "second-value")
}
