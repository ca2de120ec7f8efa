package apiserver

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// Events are served from etcd without a watch cache, as kube-apiserver serves them: lists and
// watches still work, and no cache is built for them while other resources have one.
func TestEventsWithoutWatchCache(t *testing.T) {
	s := startTestServer(t, t.TempDir(), nil)
	ctx := t.Context()
	events := s.client.CoreV1().Events(metav1.NamespaceDefault)
	list, err := events.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := events.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "e1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: metav1.NamespaceDefault, Name: "p"},
		Reason:         "Tested", Message: "hello", Type: corev1.EventTypeNormal,
	}
	if _, err := events.Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-w.ResultChan():
		if e, ok := got.Object.(*corev1.Event); got.Type != watch.Added || !ok || e.Name != "e1" {
			t.Fatalf("watch event %v %#v, want ADDED e1", got.Type, got.Object)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event for the created event")
	}
	if list, err := events.List(ctx, metav1.ListOptions{ResourceVersion: "0"}); err != nil || len(list.Items) != 1 {
		t.Fatalf("list of events: %v, %v", list, err)
	}

	metric := scrapeMetrics(t, s)
	const initializations = "apiserver_watch_cache_initializations_total"
	if _, found := metric(initializations, map[string]string{"resource": "secrets"}); !found {
		t.Fatal("no watch cache for secrets: the metric this test relies on is missing")
	}
	if v, found := metric(initializations, map[string]string{"resource": "events"}); found {
		t.Errorf("a watch cache for events was built (%v initializations)", v)
	}
}
