package nodereadable

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/idplane/idplane/internal/authz/node"
)

func configMap(ns, name, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}, Data: map[string]string{"v": rv}}
}

// TestInformerHandlers drives the handlers the server's Secret and ConfigMap informers call, with
// what an informer may hand them: plain deletions, tombstones (DeletedFinalStateUnknown) with the
// object, with a stale or wrong object, with only a key, and malformed events. n1 reads secret
// ns/s (at version 1) and configmap ns/c (at version 2). A deletion is never lost, whatever the
// tombstone holds; nothing panics; an event naming nothing changes nothing.
func TestInformerHandlers(t *testing.T) {
	secrets, configMaps := func(h *Hub) cache.ResourceEventHandlerFuncs { return h.handler(false) },
		func(h *Hub) cache.ResourceEventHandlerFuncs { return h.handler(true) }
	for _, tc := range []struct {
		name string
		do   func(h *Hub)
		// want are n1's events; stays are its items afterwards.
		want, stays []string
	}{
		{"secret deleted", func(h *Hub) { secrets(h).OnDelete(secret("ns", "s", "1")) },
			[]string{"DELETED ns/secret.s@1"}, []string{"ns/configmap.c"}},
		{"tombstone with the object", func(h *Hub) {
			secrets(h).OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/s", Obj: secret("ns", "s", "1")})
		}, []string{"DELETED ns/secret.s@1"}, []string{"ns/configmap.c"}},
		{"tombstone with a stale object: the name only", func(h *Hub) {
			secrets(h).OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/s", Obj: secret("ns", "s", "0")})
		}, []string{"DELETED ns/secret.s@1 (name only)"}, []string{"ns/configmap.c"}},
		{"tombstone with only a key", func(h *Hub) {
			secrets(h).OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/s"})
		}, []string{"DELETED ns/secret.s@1 (name only)"}, []string{"ns/configmap.c"}},
		{"configmap tombstone with only a key", func(h *Hub) {
			configMaps(h).OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/c"})
		}, []string{"DELETED ns/configmap.c@2 (name only)"}, []string{"ns/secret.s"}},
		{"tombstone with an object of the other kind: the informer's kind and the key decide", func(h *Hub) {
			secrets(h).OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/s", Obj: configMap("ns", "s", "5")})
		}, []string{"DELETED ns/secret.s@1 (name only)"}, []string{"ns/configmap.c"}},
		{"tombstone whose object has another name: the key decides", func(h *Hub) {
			secrets(h).OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/s", Obj: secret("ns", "other", "5")})
		}, []string{"DELETED ns/secret.s@1 (name only)"}, []string{"ns/configmap.c"}},
		{"tombstone with a typed nil object and a key", func(h *Hub) {
			secrets(h).OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/s", Obj: (*corev1.Secret)(nil)})
		}, []string{"DELETED ns/secret.s@1 (name only)"}, []string{"ns/configmap.c"}},
		{"tombstone with no key and the object", func(h *Hub) {
			secrets(h).OnDelete(cache.DeletedFinalStateUnknown{Obj: secret("ns", "s", "1")})
		}, []string{"DELETED ns/secret.s@1"}, []string{"ns/configmap.c"}},
		{"tombstone with a malformed key and no object", func(h *Hub) {
			secrets(h).OnDelete(cache.DeletedFinalStateUnknown{Key: "a/b/c"})
		}, nil, []string{"ns/configmap.c", "ns/secret.s"}},
		{"tombstone with nothing", func(h *Hub) { secrets(h).OnDelete(cache.DeletedFinalStateUnknown{}) },
			nil, []string{"ns/configmap.c", "ns/secret.s"}},
		{"tombstone for an object the Hub does not hold", func(h *Hub) {
			secrets(h).OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/unknown"})
		}, nil, []string{"ns/configmap.c", "ns/secret.s"}},
		{"malformed adds, updates and deletes", func(h *Hub) {
			for _, obj := range []any{nil, "ns/s", (*corev1.Secret)(nil), configMap("ns", "s", "9"), secret("ns", "", "9"), &corev1.Pod{}} {
				secrets(h).OnAdd(obj, false)
				secrets(h).OnUpdate(secret("ns", "s", "1"), obj)
				secrets(h).OnDelete(obj)
			}
		}, nil, []string{"ns/configmap.c", "ns/secret.s"}},
		{"a deletion after a key-only tombstone, then the object again", func(h *Hub) {
			secrets(h).OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/s"})
			secrets(h).OnDelete(secret("ns", "s", "1"))
			sourceOf(h).set(secret("ns", "s", "7"), false)
			secrets(h).OnAdd(secret("ns", "s", "7"), false)
		}, []string{"DELETED ns/secret.s@1 (name only)", "ADDED ns/secret.s@7"}, []string{"ns/configmap.c", "ns/secret.s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := readyHub(64)
			h.PathChanged(node.ReadableChange{Node: "n1", Namespace: "ns", Name: "s", Readable: true})
			h.PathChanged(node.ReadableChange{Node: "n1", Namespace: "ns", Name: "c", ConfigMap: true, Readable: true})
			for _, obj := range []runtime.Object{secret("ns", "s", "1"), configMap("ns", "c", "2")} {
				sourceOf(h).set(obj, false)
			}
			secrets(h).OnAdd(secret("ns", "s", "1"), true)
			configMaps(h).OnAdd(configMap("ns", "c", "2"), true)
			w, err := h.open("n1", "", start{}, false, time.Minute, clocktesting.NewFakeClock(time.Now()))
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			tc.do(h)
			// A marker event behind the case's own ones shows that nothing else came.
			h.PathChanged(node.ReadableChange{Node: "n1", Namespace: "ns", Name: "marker", Readable: true})
			objectChanged(h, secret("ns", "marker", "99"), false)
			got := describe(drain(t, w, len(tc.want)+1))
			if want := append(slices.Clone(tc.want), "ADDED ns/secret.marker@99"); !slices.Equal(got, want) {
				t.Errorf("events: got %q, want %q", got, want)
			}
			h.mu.Lock()
			var items []string
			for _, r := range h.snapshotLocked("n1", "") {
				if r.name != "marker" {
					items = append(items, r.namespace+"/"+r.itemName())
				}
			}
			h.mu.Unlock()
			slices.Sort(items)
			if !slices.Equal(items, tc.stays) {
				t.Errorf("items afterwards: got %q, want %q", items, tc.stays)
			}
		})
	}
}
