package apiserver

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// startBenchServer is startTestServer for a benchmark: a server on a fresh data directory,
// configured by configure (nil for the defaults), with an admin client whose rate limit is off.
// It returns once /readyz passes and the controllers have made the default service account, and
// stops the server when the benchmark ends.
func startBenchServer(b *testing.B, configure func(*Options)) *testServer {
	b.Helper()
	ts := startTestServer(b, b.TempDir(), configure)
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := ts.client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		b.Fatalf("server not ready: %v", err)
	}
	return ts
}
