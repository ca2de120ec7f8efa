package apiserver

import (
	"context"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestReadyMeansBootstrapped: /readyz waits for the start-up hooks, so a client that waits for
// it (WaitReady, as `idplane server` does before its hint) sees the four system namespaces and
// the default RBAC policy in force, not a half-made cluster.
func TestReadyMeansBootstrapped(t *testing.T) {
	o := NewOptions()
	o.DataDir = t.TempDir()
	o.SecurePort = 0
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := Start(ctx, o)
	if err != nil {
		cancel()
		t.Fatalf("starting server: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := srv.Wait(); err != nil {
			t.Errorf("server stopped with error: %v", err)
		}
	})
	if err := srv.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", srv.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)

	nss, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ns := range nss.Items {
		names = append(names, ns.Name)
	}
	slices.Sort(names)
	if want := []string{"default", "kube-node-lease", "kube-public", "kube-system"}; !slices.Equal(names, want) {
		t.Errorf("namespaces right after ready: %v, want %v", names, want)
	}
	for _, name := range []string{"cluster-admin", "view", "system:node-bootstrapper", "system:public-info-viewer"} {
		if _, err := client.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("cluster role %s right after ready: %v", name, err)
		}
	}
	// In force, not only stored: RBAC's index already grants the discovery role to everyone.
	sar, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "someone", Groups: []string{"system:authenticated"},
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/version", Verb: "get"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !sar.Status.Allowed {
		t.Errorf("right after ready, an authenticated user may not get /version: %+v", sar.Status)
	}

	// Readiness is made of those hooks: removing one must show here.
	raw, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").Param("verbose", "true").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, check := range []string{"[+]poststarthook/system-namespaces ok", "[+]poststarthook/rbac/bootstrap-roles ok"} {
		if !strings.Contains(string(raw), check) {
			t.Errorf("/readyz?verbose lacks %q:\n%s", check, raw)
		}
	}
}

// TestWaitReadyEndsWithTheServer: once the server has stopped, WaitReady says so instead of
// waiting for a /readyz that will never answer.
func TestWaitReadyEndsWithTheServer(t *testing.T) {
	ts := startTestServer(t, t.TempDir(), nil)
	ts.cancel()
	if err := ts.Wait(); err != nil {
		t.Fatalf("server stopped with error: %v", err)
	}
	if err := ts.WaitReady(context.Background()); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Errorf("WaitReady on a stopped server: %v, want an error saying it stopped", err)
	}
}
