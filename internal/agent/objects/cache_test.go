package objects

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
)

// recorder collects the users the cache reports as changed.
type recorder struct {
	mu    sync.Mutex
	users []string
}

func (r *recorder) changed(users []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.users = append(r.users, users...)
}

func (r *recorder) saw(user string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.users, user)
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.users = nil
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func TestCacheFollowsObjects(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}, Data: map[string][]byte{"k": []byte("v1")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}, Data: map[string]string{"k": "v"}},
	)
	rec := &recorder{}
	c := New(ctx, client, rec.changed)

	if _, err := c.Secret(ctx, "ns", "s"); err == nil {
		t.Fatal("an object no pod registered was read")
	}
	c.Use("ns/p", []Ref{{Secret, "ns", "s"}, {ConfigMap, "ns", "c"}, {Secret, "ns", "missing"}}, false)
	s, err := c.Secret(ctx, "ns", "s")
	if err != nil || string(s.Data["k"]) != "v1" {
		t.Fatalf("Secret = %v, %v; want data v1", s, err)
	}
	if s.ManagedFields != nil {
		t.Errorf("the cache holds managed fields: %v", s.ManagedFields)
	}
	if cm, err := c.ConfigMap(ctx, "ns", "c"); err != nil || cm.Data["k"] != "v" {
		t.Fatalf("ConfigMap = %v, %v", cm, err)
	}
	if _, err := c.Secret(ctx, "ns", "missing"); !apierrors.IsNotFound(err) {
		t.Fatalf("missing secret: err = %v, want NotFound", err)
	}

	rec.reset()
	s.Data["k"] = []byte("v2")
	if _, err := client.CoreV1().Secrets("ns").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the change reported to the pod", func() bool { return rec.saw("ns/p") })
	eventually(t, "the new content", func() bool {
		s, err := c.Secret(ctx, "ns", "s")
		return err == nil && string(s.Data["k"]) == "v2"
	})

	rec.reset()
	if _, err := client.CoreV1().Secrets("ns").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "missing"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the late secret reported", func() bool { return rec.saw("ns/p") })

	// A second pod shares the watch; when the first lets go, the second still reads.
	c.Use("ns/q", []Ref{{Secret, "ns", "s"}}, false)
	c.Use("ns/p", nil, false)
	if _, err := c.Secret(ctx, "ns", "s"); err != nil {
		t.Fatalf("shared secret after one user left: %v", err)
	}
	if _, err := c.ConfigMap(ctx, "ns", "c"); err == nil {
		t.Fatal("the configmap is still read after its only user left")
	}
	rec.reset()
	if err := client.CoreV1().Secrets("ns").Delete(ctx, "s", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deletion reported", func() bool { return rec.saw("ns/q") })
	if rec.saw("ns/p") {
		t.Error("a pod that let go of the secret was told of its deletion")
	}
	eventually(t, "NotFound after deletion", func() bool {
		_, err := c.Secret(ctx, "ns", "s")
		return apierrors.IsNotFound(err)
	})
}

func TestCacheClusterTrustBundles(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(&certificatesv1.ClusterTrustBundle{
		ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: certificatesv1.ClusterTrustBundleSpec{TrustBundle: pemOf(t, "one")},
	})
	rec := &recorder{}
	c := New(ctx, client, rec.changed)
	c.Use("ns/p", nil, true)
	name := "b"
	got, err := c.ClusterTrustBundles(ctx, &corev1.ClusterTrustBundleProjection{Name: &name, Path: "ca.pem"})
	if err != nil || string(got) != pemOf(t, "one") {
		t.Fatalf("ClusterTrustBundles = %q, %v", got, err)
	}
	rec.reset()
	if _, err := client.CertificatesV1().ClusterTrustBundles().Create(ctx, &certificatesv1.ClusterTrustBundle{
		ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: certificatesv1.ClusterTrustBundleSpec{TrustBundle: pemOf(t, "two")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new bundle reported", func() bool { return rec.saw("ns/p") })
}
