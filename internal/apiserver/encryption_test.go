package apiserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	encryptioncontroller "k8s.io/apiserver/pkg/server/options/encryptionconfig/controller"
)

// rawEtcdValue reads a key straight from the server's embedded etcd, as someone with a copy of
// the data directory would.
func rawEtcdValue(t *testing.T, ts *testServer, key string) []byte {
	t.Helper()
	client, err := newEtcdClient([]string{ts.etcd.clientURL}, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	resp, err := client.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("reading %s from etcd: %v", key, err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("etcd has %d values at %s, want 1", len(resp.Kvs), key)
	}
	return resp.Kvs[0].Value
}

// plainPrefix starts every object the storage layer writes without encryption (protobuf).
const plainPrefix = "k8s\x00"

func secretKey(ns, name string) string { return "/registry/secrets/" + ns + "/" + name }

func createSecret(t *testing.T, ts *testServer, name, value string) {
	t.Helper()
	_, err := ts.client.CoreV1().Secrets("default").Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{"password": value},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating secret %s: %v", name, err)
	}
}

// expectSecret checks that the API returns the secret's value.
func expectSecret(t *testing.T, ts *testServer, name, value string) {
	t.Helper()
	s, err := ts.client.CoreV1().Secrets("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading secret %s: %v", name, err)
	}
	if got := string(s.Data["password"]); got != value {
		t.Fatalf("secret %s holds %q, want %q", name, got, value)
	}
}

// expectStoredWith checks how a secret is stored: its prefix, and never its value in clear.
func expectStoredWith(t *testing.T, ts *testServer, name, value, prefix string) {
	t.Helper()
	raw := rawEtcdValue(t, ts, secretKey("default", name))
	if !bytes.HasPrefix(raw, []byte(prefix)) {
		t.Fatalf("secret %s stored as %q..., want prefix %q", name, raw[:min(len(raw), 32)], prefix)
	}
	if prefix != plainPrefix && bytes.Contains(raw, []byte(value)) {
		t.Fatalf("secret %s: etcd holds its value %q in clear", name, value)
	}
}

// rewriteSecrets does what `kubectl get secrets -A -o json | kubectl replace -f -` does.
func rewriteSecrets(t *testing.T, ts *testServer) {
	t.Helper()
	ctx := context.Background()
	list, err := ts.client.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		if _, err := ts.client.CoreV1().Secrets(s.Namespace).Update(ctx, &s, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("replacing secret %s/%s: %v", s.Namespace, s.Name, err)
		}
	}
}

type testKey struct{ name, secret string }

func newTestKey(t *testing.T, name string) testKey {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return testKey{name, base64.StdEncoding.EncodeToString(b)}
}

// writeEncryptionConfig writes an EncryptionConfiguration for secrets with the given aescbc keys
// (none: identity only), identity last.
func writeEncryptionConfig(t *testing.T, path string, keys ...testKey) {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n")
	if len(keys) > 0 {
		b.WriteString("  - aescbc:\n      keys:\n")
		for _, k := range keys {
			fmt.Fprintf(&b, "      - name: %s\n        secret: %s\n", k.name, k.secret)
		}
	}
	b.WriteString("  - identity: {}\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestSecretsAreEncryptedAtRestByDefault(t *testing.T) {
	dir := t.TempDir()
	ts := startTestServer(t, dir, nil)
	configPath := filepath.Join(dir, "pki", "encryption-config.yaml")
	info, err := os.Stat(configPath)
	if err != nil {
		t.Fatalf("generated encryption configuration: %v", err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", configPath, info.Mode().Perm())
	}
	generated, err := os.ReadFile(configPath)
	if err != nil {
		t.Fatal(err)
	}

	createSecret(t, ts, "db", "correct-horse-battery")
	expectStoredWith(t, ts, "db", "correct-horse-battery", "k8s:enc:secretbox:v1:key1:")
	expectSecret(t, ts, "db", "correct-horse-battery")
	// Only secrets are listed: other resources stay as the library writes them.
	if _, err := ts.client.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if raw := rawEtcdValue(t, ts, "/registry/configmaps/default/cm"); !bytes.HasPrefix(raw, []byte(plainPrefix)) {
		t.Errorf("configmap stored as %q..., want unencrypted", raw[:min(len(raw), 32)])
	}
	ts.stop()

	again := startTestServer(t, dir, nil)
	after, err := os.ReadFile(configPath)
	if err != nil || !bytes.Equal(after, generated) {
		t.Fatalf("encryption configuration changed across restarts (err %v)", err)
	}
	expectSecret(t, again, "db", "correct-horse-battery")
}

func TestPlainSecretsOfAnOlderDataDirStayReadable(t *testing.T) {
	dir := t.TempDir()
	// A data directory from before encryption: secrets stored as they come.
	plain := filepath.Join(t.TempDir(), "identity.yaml")
	writeEncryptionConfig(t, plain)
	old := startTestServer(t, dir, func(o *Options) { o.Encryption.ProviderConfigFile = plain })
	createSecret(t, old, "legacy", "stored-in-clear")
	expectStoredWith(t, old, "legacy", "stored-in-clear", plainPrefix)
	old.stop()

	ts := startTestServer(t, dir, nil)
	expectSecret(t, ts, "legacy", "stored-in-clear")
	expectStoredWith(t, ts, "legacy", "stored-in-clear", plainPrefix)
	rewriteSecrets(t, ts)
	expectStoredWith(t, ts, "legacy", "stored-in-clear", "k8s:enc:secretbox:v1:key1:")
	expectSecret(t, ts, "legacy", "stored-in-clear")
}

// TestEncryptionKeyRotation walks upstream's rotation procedure: add the new key second, restart;
// make it first, restart; rewrite every secret; remove the old key, restart.
func TestEncryptionKeyRotation(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(t.TempDir(), "encryption.yaml")
	key1, key2 := newTestKey(t, "key1"), newTestKey(t, "key2")
	start := func(keys ...testKey) *testServer {
		writeEncryptionConfig(t, config, keys...)
		return startTestServer(t, dir, func(o *Options) { o.Encryption.ProviderConfigFile = config })
	}
	const prefix1, prefix2 = "k8s:enc:aescbc:v1:key1:", "k8s:enc:aescbc:v1:key2:"

	ts := start(key1)
	createSecret(t, ts, "s1", "first-value")
	expectStoredWith(t, ts, "s1", "first-value", prefix1)
	ts.stop()

	// The new key is known but not used yet, so a replica still on the old file reads everything.
	ts = start(key1, key2)
	expectSecret(t, ts, "s1", "first-value")
	createSecret(t, ts, "s2", "second-value")
	expectStoredWith(t, ts, "s2", "second-value", prefix1)
	ts.stop()

	ts = start(key2, key1)
	expectSecret(t, ts, "s1", "first-value")
	expectSecret(t, ts, "s2", "second-value")
	createSecret(t, ts, "s3", "third-value")
	expectStoredWith(t, ts, "s3", "third-value", prefix2)
	expectStoredWith(t, ts, "s1", "first-value", prefix1)

	rewriteSecrets(t, ts)
	for name, value := range map[string]string{"s1": "first-value", "s2": "second-value", "s3": "third-value"} {
		expectStoredWith(t, ts, name, value, prefix2)
	}
	ts.stop()

	ts = start(key2)
	for name, value := range map[string]string{"s1": "first-value", "s2": "second-value", "s3": "third-value"} {
		expectSecret(t, ts, name, value)
	}
}

func TestEncryptionConfigAutomaticReload(t *testing.T) {
	saved := encryptioncontroller.EncryptionConfigFileChangePollDuration
	encryptioncontroller.EncryptionConfigFileChangePollDuration = 50 * time.Millisecond
	t.Cleanup(func() { encryptioncontroller.EncryptionConfigFileChangePollDuration = saved })

	config := filepath.Join(t.TempDir(), "encryption.yaml")
	key1, key2 := newTestKey(t, "key1"), newTestKey(t, "key2")
	writeEncryptionConfig(t, config, key1)
	ts := startTestServer(t, t.TempDir(), func(o *Options) {
		o.Encryption.ProviderConfigFile, o.Encryption.AutomaticReload = config, true
	})
	createSecret(t, ts, "before", "written-before-reload")
	expectStoredWith(t, ts, "before", "written-before-reload", "k8s:enc:aescbc:v1:key1:")

	writeEncryptionConfig(t, config, key2, key1)
	n := 0
	eventually(t, "new writes use the reloaded key", func() error {
		n++
		name := fmt.Sprintf("after-%d", n)
		createSecret(t, ts, name, "written-after-reload")
		if raw := rawEtcdValue(t, ts, secretKey("default", name)); !bytes.HasPrefix(raw, []byte("k8s:enc:aescbc:v1:key2:")) {
			return fmt.Errorf("secret %s stored as %q...", name, raw[:min(len(raw), 32)])
		}
		return nil
	})
	expectSecret(t, ts, "before", "written-before-reload")
}

// TestUndecryptableSecretsRefuseStart checks that a server whose configuration cannot read the
// secrets in etcd says so at start instead of never turning ready.
func TestUndecryptableSecretsRefuseStart(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(t.TempDir(), "encryption.yaml")
	key1, key2 := newTestKey(t, "key1"), newTestKey(t, "key2")
	writeEncryptionConfig(t, config, key1)
	ts := startTestServer(t, dir, func(o *Options) { o.Encryption.ProviderConfigFile = config })
	createSecret(t, ts, "s1", "first-value")
	ts.stop()

	for _, tc := range []struct {
		name string
		keys []testKey
	}{
		{"old key removed before the rewrite", []testKey{key2}},
		{"another key under the same name", []testKey{newTestKey(t, "key1")}},
		{"identity only", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			writeEncryptionConfig(t, config, tc.keys...)
			o := NewOptions()
			o.DataDir, o.SecurePort, o.Encryption.ProviderConfigFile = dir, 0, config
			expectStartRefused(t, o, "secrets in etcd (default/s1 first) cannot be decrypted with the encryption configuration "+config)
		})
	}

	writeEncryptionConfig(t, config, key2, key1)
	ts = startTestServer(t, dir, func(o *Options) { o.Encryption.ProviderConfigFile = config })
	expectSecret(t, ts, "s1", "first-value")
}

func TestEncryptionConfigRefused(t *testing.T) {
	dir := t.TempDir()
	kms := writeFile(t, dir, "kms.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - kms: {apiVersion: v1, name: vault, endpoint: unix:///tmp/kms.sock}
  - identity: {}
`)
	shortKey := writeFile(t, dir, "short.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aescbc: {keys: [{name: k, secret: c2hvcnQ=}]}
`)
	garbage := writeFile(t, dir, "garbage.yaml", "not: [an encryption configuration")
	for _, tc := range []struct {
		name      string
		configure func(*Options)
		want      string
	}{
		{"kms v1 provider", func(o *Options) { o.Encryption.ProviderConfigFile = kms }, "KMSv1 is deprecated"},
		{"key of the wrong size", func(o *Options) { o.Encryption.ProviderConfigFile = shortKey }, "short.yaml"},
		{"not YAML", func(o *Options) { o.Encryption.ProviderConfigFile = garbage }, "garbage.yaml"},
		{"missing file", func(o *Options) { o.Encryption.ProviderConfigFile = filepath.Join(dir, "absent.yaml") }, "absent.yaml"},
		{"reload without a file", func(o *Options) { o.Encryption.AutomaticReload = true }, "--encryption-provider-config-automatic-reload needs --encryption-provider-config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			o.DataDir, o.SecurePort = t.TempDir(), 0
			tc.configure(o)
			expectStartRefused(t, o, tc.want)
		})
	}
}
