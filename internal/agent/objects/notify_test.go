package objects

import (
	"context"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	nodev1alpha1 "github.com/idplane/idplane/api/node/v1alpha1"
)

// TestNotifyItem: what the bulk informer's handlers tell the pods for what an informer may hand
// them, tombstones of every shape included: a deletion is never lost, a malformed event tells
// nobody and never panics.
func TestNotifyItem(t *testing.T) {
	s, cm := secretItem("ns", "s", "1", "v"), configMapItem("ns", "c", "2", "v")
	for _, tc := range []struct {
		name string
		obj  any
		want []string
	}{
		{"an item", &s, []string{"ns/a"}},
		{"a configmap item", &cm, []string{"ns/b"}},
		{"a tombstone with the item", cache.DeletedFinalStateUnknown{Key: "ns/secret.s", Obj: &s}, []string{"ns/a"}},
		{"a tombstone with only a key", cache.DeletedFinalStateUnknown{Key: "ns/configmap.c"}, []string{"ns/b"}},
		{"a tombstone whose object is another item: the key decides", cache.DeletedFinalStateUnknown{Key: "ns/secret.s", Obj: &cm}, []string{"ns/a"}},
		{"a tombstone without a key", cache.DeletedFinalStateUnknown{Obj: &cm}, []string{"ns/b"}},
		{"a tombstone with a malformed key and nothing else", cache.DeletedFinalStateUnknown{Key: "a/b/c"}, nil},
		{"a tombstone with a key naming no kind", cache.DeletedFinalStateUnknown{Key: "ns/s"}, nil},
		{"an empty tombstone", cache.DeletedFinalStateUnknown{}, nil},
		{"a typed nil", (*nodev1alpha1.NodeReadable)(nil), nil},
		{"nil", nil, nil},
		{"something else", "ns/secret.s", nil},
		{"an item naming no kind", &nodev1alpha1.NodeReadable{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			c := New(context.Background(), fake.NewClientset(), rec.changed)
			c.users[Ref{Secret, "ns", "s"}] = sets.New("ns/a")
			c.users[Ref{ConfigMap, "ns", "c"}] = sets.New("ns/b")
			c.notifyItem(tc.obj)
			rec.mu.Lock()
			got := slices.Sorted(slices.Values(rec.users))
			rec.mu.Unlock()
			if !slices.Equal(got, tc.want) {
				t.Errorf("told %q, want %q", got, tc.want)
			}
		})
	}
}
