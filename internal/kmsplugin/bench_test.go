package kmsplugin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/server/options/encryptionconfig"
	storagevalue "k8s.io/apiserver/pkg/storage/value"
)

// secretsTransformer loads an encryption configuration naming the plugin at socket, as the API
// server does, and returns its transformer of secrets: a fresh one has an empty data-key cache.
func secretsTransformer(b *testing.B, ctx context.Context, socket string) storagevalue.Transformer {
	b.Helper()
	path := filepath.Join(b.TempDir(), "encryption.yaml")
	config := fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - kms: {apiVersion: v2, name: bench, endpoint: unix://%s, timeout: 3s}
`, socket)
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		b.Fatal(err)
	}
	cfg, err := encryptionconfig.LoadEncryptionConfig(ctx, path, false, "bench")
	if err != nil {
		b.Fatal(err)
	}
	return encryptionconfig.StaticTransformers(cfg.Transformers).TransformerForResource(schema.GroupResource{Resource: "secrets"})
}

// BenchmarkSecretReadThroughKMS is the KMS part of reading one secret from etcd: with the data
// key already in the server's cache (every read but the first of each data key), and with an
// empty cache, which costs a Decrypt call to the plugin over its socket.
func BenchmarkSecretReadThroughKMS(b *testing.B) {
	keyFile := filepath.Join(b.TempDir(), "keys")
	if err := os.WriteFile(keyFile, []byte("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "kms")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	socket := filepath.Join(dir, "kms.sock")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = Serve(ctx, socket, keyFile) }()
	for {
		if _, err := os.Stat(socket); err == nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}

	secret := make([]byte, 1024) // a secret of about a kilobyte, as stored (protobuf)
	dataCtx := storagevalue.DefaultContext("/registry/secrets/default/s1")
	writer := secretsTransformer(b, ctx, socket)
	stored, err := writer.TransformToStorage(ctx, secret, dataCtx)
	if err != nil {
		b.Fatal(err)
	}

	b.Run("warm-cache", func(b *testing.B) {
		reader := secretsTransformer(b, ctx, socket)
		if _, _, err := reader.TransformFromStorage(ctx, stored, dataCtx); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if _, _, err := reader.TransformFromStorage(ctx, stored, dataCtx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cold-cache", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			b.StopTimer()
			readerCtx, stop := context.WithCancel(ctx)
			reader := secretsTransformer(b, readerCtx, socket)
			b.StartTimer()
			if _, _, err := reader.TransformFromStorage(ctx, stored, dataCtx); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			stop()
			b.StartTimer()
		}
	})
}
