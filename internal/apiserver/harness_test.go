package apiserver

import (
	"context"
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
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// testServer is an in-process server on a free port with embedded etcd in a temporary directory.
type testServer struct {
	*Server
	dataDir string
	cancel  context.CancelFunc
	config  *rest.Config
	client  kubernetes.Interface
}

func startTestServer(t testing.TB, dataDir string, configure func(*Options)) *testServer {
	t.Helper()
	o := NewOptions()
	o.DataDir = dataDir
	o.SecurePort = 0
	if configure != nil {
		configure(o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := Start(ctx, o)
	if err != nil {
		cancel()
		t.Fatalf("starting server: %v", err)
	}
	ts := &testServer{Server: srv, dataDir: dataDir, cancel: cancel}
	t.Cleanup(ts.stop)
	ts.config, err = clientcmd.BuildConfigFromFlags("", srv.AdminKubeconfig)
	if err != nil {
		t.Fatalf("loading admin kubeconfig: %v", err)
	}
	ts.config.QPS, ts.config.Burst = -1, -1
	ts.client = kubernetes.NewForConfigOrDie(ts.config)
	waitReady(t, ts.config)
	return ts
}

func (ts *testServer) stop() {
	ts.cancel()
	if err := ts.Wait(); err != nil {
		panic("server stopped with error: " + err.Error())
	}
}

func waitReady(t testing.TB, cfg *rest.Config) {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		resp, err := client.Get(cfg.Host + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("server not ready: %v", err)
	}
}

// ensureServiceAccount creates a service account unless it exists: the ServiceAccount admission
// plugin refuses pods whose account is missing, and a controller may create "default" first.
func ensureServiceAccount(t testing.TB, client kubernetes.Interface, namespace, name string) *corev1.ServiceAccount {
	t.Helper()
	accounts := client.CoreV1().ServiceAccounts(namespace)
	sa, err := accounts.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		sa, err = accounts.Get(context.Background(), name, metav1.GetOptions{})
	}
	if err != nil {
		t.Fatalf("creating service account %s/%s: %v", namespace, name, err)
	}
	return sa
}

// expectStartRefused starts a server with o and requires Start to fail with an error containing want.
func expectStartRefused(t *testing.T, o *Options, want string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	srv, err := Start(ctx, o)
	if err == nil {
		cancel()
		_ = srv.Wait()
		t.Fatalf("the server started; want it refused with %q", want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
}

// writeFile writes content to dir/name, readable only by its owner, and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
