package apiserver

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// startBenchServer is startTestServer for a benchmark: a server on a fresh data directory,
// configured by configure (nil for the defaults), with an admin client whose rate limit is off.
// It returns once /readyz passes and the controllers have made the default service account, and
// stops the server when the benchmark ends.
func startBenchServer(b *testing.B, configure func(*Options)) *testServer {
	b.Helper()
	o := NewOptions()
	o.DataDir = b.TempDir()
	o.SecurePort = 0
	if configure != nil {
		configure(o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := Start(ctx, o)
	if err != nil {
		cancel()
		b.Fatalf("starting server: %v", err)
	}
	ts := &testServer{Server: srv, dataDir: o.DataDir, cancel: cancel}
	b.Cleanup(ts.stop)
	cfg, err := clientcmd.BuildConfigFromFlags("", srv.AdminKubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, -1
	ts.config, ts.client = cfg, kubernetes.NewForConfigOrDie(cfg)
	waitReady(b, cfg)
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := ts.client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		b.Fatalf("server not ready: %v", err)
	}
	return ts
}
