package apiserver

import (
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// A term's controllers share the server's informers: the handlers a term adds go with it, the
// informers stay, an index asked for again by the next term is kept, and the term's own
// informers stop with it.
func TestTermInformers(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "first"}})
	shared := newSharedInformers(newInformerFactory(client))
	serverStop := make(chan struct{})
	defer shared.factory.Shutdown()
	defer close(serverStop)
	shared.factory.Core().V1().Secrets().Informer()
	shared.run(serverStop)

	running, ok := shared.running(ctx)
	if !ok || running != (<-chan struct{})(serverStop) {
		t.Fatal("running does not report the server's stop channel")
	}

	index := cache.Indexers{"by-name": func(obj any) ([]string, error) { return []string{obj.(metav1.Object).GetName()}, nil }}
	var firstTermEvents, secondTermEvents atomic.Int32
	startTerm := func(events *atomic.Int32, seen chan<- string) (*termInformers, chan struct{}) {
		term := newTermInformers(client, shared.factory)
		secrets := term.ServiceAccountTokenSecrets().Informer()
		if err := secrets.AddIndexers(index); err != nil {
			t.Fatalf("adding the index: %v", err)
		}
		_, err := secrets.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
			events.Add(1)
			seen <- obj.(*corev1.Secret).Name
		}})
		if err != nil {
			t.Fatal(err)
		}
		term.ConfigMaps().Informer()
		stop := make(chan struct{})
		term.start(stop, serverStop)
		return term, stop
	}
	waitFor := func(seen <-chan string, name string) {
		t.Helper()
		for got := range seen {
			if got == name {
				return
			}
		}
	}

	seen1 := make(chan string, 10)
	term1, stop1 := startTerm(&firstTermEvents, seen1)
	waitFor(seen1, "first")
	own1 := term1.ConfigMaps().Informer()
	close(stop1)
	term1.end()
	if !own1.IsStopped() {
		t.Error("the term's own config map informer still runs after its end")
	}
	if shared.factory.Core().V1().Secrets().Informer().IsStopped() {
		t.Fatal("the shared secret informer stopped with the term")
	}

	seen2 := make(chan string, 10)
	_, stop2 := startTerm(&secondTermEvents, seen2)
	defer close(stop2)
	waitFor(seen2, "first")
	if _, err := client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "second"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(seen2, "second")
	if n := firstTermEvents.Load(); n != 1 {
		t.Errorf("the first term's handler saw %d events, want 1: it was not removed at the term's end", n)
	}
	byName, err := shared.factory.Core().V1().Secrets().Informer().GetIndexer().ByIndex("by-name", "second")
	if err != nil || len(byName) != 1 {
		t.Errorf("the index the terms asked for: %v, %v", byName, err)
	}
}
