package apiserver

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// The server's informers drop managed fields; controllers update objects read from them. An
// Update without managed fields must keep the other managers' entries, and an informer must hold
// the object without them.
func TestInformerObjectsWithoutManagedFields(t *testing.T) {
	ts := startTestServer(t, t.TempDir(), nil)
	ctx := t.Context()
	configMaps := ts.client.CoreV1().ConfigMaps(metav1.NamespaceDefault)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owned"}, Data: map[string]string{"a": "1"}}
	if _, err := configMaps.Create(ctx, cm, metav1.CreateOptions{FieldManager: "creator"}); err != nil {
		t.Fatal(err)
	}

	factory := newInformerFactory(ts.client)
	informer := factory.Core().V1().ConfigMaps()
	lister := informer.Lister()
	informer.Informer()
	stop := make(chan struct{})
	factory.Start(stop)
	defer factory.Shutdown()
	defer close(stop)
	if !cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced) {
		t.Fatal("informer did not sync")
	}
	cached, err := lister.ConfigMaps(metav1.NamespaceDefault).Get("owned")
	if err != nil {
		t.Fatal(err)
	}
	if cached.ManagedFields != nil {
		t.Fatalf("the informer holds managed fields: %v", cached.ManagedFields)
	}

	update := cached.DeepCopy()
	update.Data["b"] = "2"
	updated, err := configMaps.Update(ctx, update, metav1.UpdateOptions{FieldManager: "controller"})
	if err != nil {
		t.Fatal(err)
	}
	if got := managers(updated); !slices.Equal(got, []string{"controller", "creator"}) {
		t.Errorf("managers after an update without managed fields = %v, want [controller creator]", got)
	}
	stored, err := configMaps.Get(context.Background(), "owned", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := managers(stored); !slices.Equal(got, []string{"controller", "creator"}) {
		t.Errorf("stored managers = %v, want [controller creator]", got)
	}
}

func managers(o metav1.Object) []string {
	var names []string
	for _, e := range o.GetManagedFields() {
		names = append(names, e.Manager)
	}
	slices.Sort(names)
	return names
}
