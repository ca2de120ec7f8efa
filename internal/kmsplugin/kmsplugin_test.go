package kmsplugin

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2"
	kmsservice "k8s.io/kms/pkg/service"
)

func newKey(t *testing.T) string {
	t.Helper()
	b := make([]byte, keySize)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

func idOf(t *testing.T, b64 string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	return KeyID(b)
}

func writeKeys(t *testing.T, path string, keys ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("# current key first\n"+strings.Join(keys, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// servePlugin runs Serve on a fresh socket and returns the API server's own client of it.
func servePlugin(t *testing.T, keyFile string) (kmsservice.Service, string, context.CancelFunc) {
	t.Helper()
	dir, err := os.MkdirTemp("", "kms")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "kms.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, socket, keyFile) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := os.Stat(socket); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("Serve: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("socket never appeared")
		}
		time.Sleep(10 * time.Millisecond)
	}
	client, err := kmsv2.NewGRPCService(ctx, "unix://"+socket, "test", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return client, socket, cancel
}

// TestPluginThroughTheAPIServersClient drives the plugin over its socket with the client the
// API server uses: wrap, unwrap, rotation, a broken key file, tampering.
func TestPluginThroughTheAPIServersClient(t *testing.T) {
	ctx := context.Background()
	keyFile := filepath.Join(t.TempDir(), "keys")
	keyA, keyB := newKey(t), newKey(t)
	writeKeys(t, keyFile, keyA)
	client, socket, _ := servePlugin(t, keyFile)

	info, err := os.Stat(socket)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("socket mode %#o, want 0600", perm)
	}

	status, err := client.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if status.Healthz != "ok" || status.Version != "v2" || status.KeyID != idOf(t, keyA) {
		t.Fatalf("status %+v, want ok, v2, key ID of A %s", status, idOf(t, keyA))
	}
	wrappedA, err := client.Encrypt(ctx, "uid1", []byte("data key 1"))
	if err != nil {
		t.Fatal(err)
	}
	if wrappedA.KeyID != idOf(t, keyA) || strings.Contains(string(wrappedA.Ciphertext), "data key 1") {
		t.Fatalf("encrypt answered key ID %q, ciphertext %q", wrappedA.KeyID, wrappedA.Ciphertext)
	}

	// Rotation: B on top; Status reports it, new wraps use it, A's still unwrap.
	writeKeys(t, keyFile, keyB, keyA)
	if status, err = client.Status(ctx); err != nil || status.KeyID != idOf(t, keyB) {
		t.Fatalf("status after rotation %+v, %v; want key ID of B", status, err)
	}
	wrappedB, err := client.Encrypt(ctx, "uid2", []byte("data key 2"))
	if err != nil || wrappedB.KeyID != idOf(t, keyB) {
		t.Fatalf("encrypt after rotation: %+v, %v", wrappedB, err)
	}
	for _, tc := range []struct {
		wrapped *kmsservice.EncryptResponse
		want    string
	}{{wrappedA, "data key 1"}, {wrappedB, "data key 2"}} {
		plain, err := client.Decrypt(ctx, "uid3", &kmsservice.DecryptRequest{Ciphertext: tc.wrapped.Ciphertext, KeyID: tc.wrapped.KeyID})
		if err != nil || string(plain) != tc.want {
			t.Fatalf("decrypt under %s: %q, %v; want %q", tc.wrapped.KeyID, plain, err, tc.want)
		}
	}

	// A ciphertext presented under another key's ID, or altered, does not unwrap.
	if _, err := client.Decrypt(ctx, "uid4", &kmsservice.DecryptRequest{Ciphertext: wrappedA.Ciphertext, KeyID: wrappedB.KeyID}); err == nil {
		t.Error("A's ciphertext unwrapped under B's key ID")
	}
	tampered := append([]byte(nil), wrappedB.Ciphertext...)
	tampered[len(tampered)-1] ^= 1
	if _, err := client.Decrypt(ctx, "uid5", &kmsservice.DecryptRequest{Ciphertext: tampered, KeyID: wrappedB.KeyID}); err == nil {
		t.Error("an altered ciphertext unwrapped")
	}

	// A key file that no longer loads: Status says why, the keys already read keep working.
	if err := os.WriteFile(keyFile, []byte("not base64!\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	status, err = client.Status(ctx)
	if err != nil || !strings.Contains(status.Healthz, "line 1: not base64") || status.KeyID != idOf(t, keyB) {
		t.Fatalf("status with a broken key file: %+v, %v", status, err)
	}
	if plain, err := client.Decrypt(ctx, "uid6", &kmsservice.DecryptRequest{Ciphertext: wrappedA.Ciphertext, KeyID: wrappedA.KeyID}); err != nil || string(plain) != "data key 1" {
		t.Fatalf("decrypt with a broken key file: %q, %v", plain, err)
	}

	// A removed key: its data no longer unwraps, and the error says so.
	writeKeys(t, keyFile, keyB)
	if status, err = client.Status(ctx); err != nil || status.Healthz != "ok" {
		t.Fatalf("status after fixing the file: %+v, %v", status, err)
	}
	if _, err := client.Decrypt(ctx, "uid7", &kmsservice.DecryptRequest{Ciphertext: wrappedA.Ciphertext, KeyID: wrappedA.KeyID}); err == nil || !strings.Contains(err.Error(), "is not in the key file") {
		t.Fatalf("decrypt under a removed key: %v", err)
	}
}

func TestKeyFileRefused(t *testing.T) {
	dir := t.TempDir()
	key := newKey(t)
	short := base64.StdEncoding.EncodeToString([]byte("sixteen byte key"))
	for _, tc := range []struct {
		name, content string
		mode          os.FileMode
		want          string
	}{
		{"readable by others", key + "\n", 0o644, "accessible by group or others (mode 0644)"},
		{"empty", "# nothing\n\n", 0o600, "holds no key"},
		{"not base64", "@@@\n", 0o600, "line 1: not base64"},
		{"AES-128 key", "# c\n" + short + "\n", 0o600, "line 2: key is 16 bytes, want 32"},
		{"duplicate", key + "\n" + key + "\n", 0o600, "line 2: the same key is listed twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			if err := os.WriteFile(path, []byte(tc.content), tc.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tc.mode); err != nil {
				t.Fatal(err)
			}
			_, err := NewService(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := NewService(filepath.Join(dir, "absent")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("missing file: %v", err)
	}
}

// TestSocketPath checks that a stale socket is replaced while a live one or another file is
// left alone.
func TestSocketPath(t *testing.T) {
	dir, err := os.MkdirTemp("", "kms")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)

	regular := filepath.Join(dir, "file")
	if err := os.WriteFile(regular, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := listen(regular); err == nil || !strings.Contains(err.Error(), "is not a socket") {
		t.Fatalf("listening over a regular file: %v", err)
	}

	live := filepath.Join(dir, "live.sock")
	ln, err := net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := listen(live); err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("listening over a live socket: %v", err)
	}

	stale := filepath.Join(dir, "stale.sock")
	l, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	ln2, err := listen(stale)
	if err != nil {
		t.Fatalf("listening over a stale socket: %v", err)
	}
	ln2.Close()
}
