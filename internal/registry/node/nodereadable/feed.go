package nodereadable

import (
	"context"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// feed is a reflector's store of Secrets that keeps nothing: it tells the Hub of every Secret it
// is given and forgets it. No informer of the server holds every Secret (they keep only the
// token kinds), so the Hub learns of each for the cost of its resourceVersion.
type feed struct {
	hub    *Hub
	synced atomic.Bool
}

var _ cache.ReflectorStore = (*feed)(nil)

func (f *feed) Add(obj any) error    { f.hub.informerUpdate(false, obj); return nil }
func (f *feed) Update(obj any) error { f.hub.informerUpdate(false, obj); return nil }
func (f *feed) Delete(obj any) error { f.hub.informerDelete(false, obj); return nil }
func (f *feed) Resync() error        { return nil }

// Replace is a full list: objects the Hub knows of that the list lacks were deleted while the
// watch was down.
func (f *feed) Replace(items []any, _ string) error {
	listed := make(map[ref]struct{}, len(items))
	for _, it := range items {
		if _, r, ok := refOf(false, it); ok {
			listed[r] = struct{}{}
		}
	}
	f.hub.mu.Lock()
	var gone []ref
	for r, e := range f.hub.objects {
		if _, ok := listed[r]; !ok && !r.configMap && e.revision != 0 {
			gone = append(gone, r)
		}
	}
	f.hub.mu.Unlock()
	for _, r := range gone {
		f.hub.objectDeleted(r, nil)
	}
	for _, it := range items {
		f.hub.informerUpdate(false, it)
	}
	f.synced.Store(true)
	return nil
}

// FeedSecrets feeds the Hub every Secret lw lists and watches, holding none; run runs the feed
// until ctx ends, and synced reports its first full list.
func (h *Hub) FeedSecrets(lw cache.ListerWatcher) (run func(ctx context.Context), synced cache.InformerSynced) {
	f := &feed{hub: h}
	r := cache.NewReflectorWithOptions(lw, &corev1.Secret{}, f, cache.ReflectorOptions{Name: "nodereadables secrets"})
	return r.RunWithContext, f.synced.Load
}
