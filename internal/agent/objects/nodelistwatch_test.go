package objects

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
)

// recordingPods answers a reflector with no pods and remembers what it asked for.
type recordingPods struct {
	mu      sync.Mutex
	lists   []metav1.ListOptions
	watches []metav1.ListOptions
}

func (r *recordingPods) List(_ context.Context, o metav1.ListOptions) (*corev1.PodList, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lists = append(r.lists, o)
	return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}}, nil
}

func (r *recordingPods) Watch(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watches = append(r.watches, o)
	return watch.NewFake(), nil
}

func (r *recordingPods) asked() (lists, watches []metav1.ListOptions) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]metav1.ListOptions(nil), r.lists...), append([]metav1.ListOptions(nil), r.watches...)
}

// A node's pods are read with a list the server answers from its index, then a watch from the
// list's position: never a watch-list, whose initial events the server builds from every pod.
func TestNodeListWatchListsThenWatches(t *testing.T) {
	pods := &recordingPods{}
	lw := NodeListWatch[*corev1.PodList](pods, "n1")
	// The package's tests turn client-go's watch-list off (the fake clientset cannot serve one),
	// so the reflector below would list first anyway: check what the reflector asks of lw with
	// the feature on, as in the agent.
	if !watchlist.DoesClientNotSupportWatchListSemantics(lw) {
		t.Fatal("a reflector would read a node's pods with a watch-list")
	}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r := cache.NewReflector(lw, &corev1.Pod{}, store, 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.RunWithContext(ctx) }()
	defer func() { cancel(); <-done }()

	eventually(t, "the reflector's watch", func() bool { _, watches := pods.asked(); return len(watches) > 0 })
	lists, watches := pods.asked()
	if len(lists) == 0 {
		t.Fatal("the reflector watched without listing first")
	}
	for _, o := range append(lists, watches...) {
		if o.FieldSelector != "spec.nodeName=n1" {
			t.Errorf("request with field selector %q, want spec.nodeName=n1", o.FieldSelector)
		}
		if o.SendInitialEvents != nil && *o.SendInitialEvents {
			t.Errorf("request asked for initial events (a watch-list): %+v", o)
		}
	}
	if watches[0].ResourceVersion != "7" {
		t.Errorf("watch from %q, want the list's 7", watches[0].ResourceVersion)
	}
}
