package serviceaccount

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// nodeReads answers node reads from the watch cache (ResourceVersion "0") and from storage
// (ResourceVersion ""), and records which were asked.
type nodeReads struct {
	cached, live func() (runtime.Object, error)
	asked        []string
}

func (n *nodeReads) Get(ctx context.Context, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	if ns, _ := genericapirequest.NamespaceFrom(ctx); ns != "" {
		return nil, errors.New("node read in namespace " + ns)
	}
	n.asked = append(n.asked, opts.ResourceVersion)
	if opts.ResourceVersion == "0" {
		return n.cached()
	}
	return n.live()
}

// TestPodNode: the node a pod-bound token names comes from the watch cache, from storage when the
// cache cannot answer, by name alone when no node is registered, and an error of storage fails
// the request rather than naming the node without its UID.
func TestPodNode(t *testing.T) {
	node := func(uid string) func() (runtime.Object, error) {
		return func() (runtime.Object, error) {
			return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: types.UID("uid-n1-" + uid)}}, nil
		}
	}
	fail := func(err error) func() (runtime.Object, error) {
		return func() (runtime.Object, error) { return nil, err }
	}
	notFound := apierrors.NewNotFound(corev1.Resource("nodes"), "n1")
	unavailable := errors.New("etcd unavailable")
	for _, tc := range []struct {
		name         string
		cached, live func() (runtime.Object, error)
		wantUID      string
		wantErr      bool
		wantAsked    []string
	}{
		{"cached", node("cache"), node("live"), "uid-n1-cache", false, []string{"0"}},
		{"cache cannot answer", fail(apierrors.NewTimeoutError("too large resource version", 1)), node("live"), "uid-n1-live", false, []string{"0", ""}},
		{"not in the cache yet", fail(notFound), node("live"), "uid-n1-live", false, []string{"0", ""}},
		{"not registered", fail(notFound), fail(notFound), "", false, []string{"0", ""}},
		{"storage fails", fail(unavailable), fail(unavailable), "", true, []string{"0", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reads := &nodeReads{cached: tc.cached, live: tc.live}
			r := &tokenREST{getters: Getters{Nodes: reads}}
			ctx := genericapirequest.WithNamespace(context.Background(), "pods-ns")
			got, err := r.podNode(ctx, "n1")
			if !slices.Equal(reads.asked, tc.wantAsked) {
				t.Errorf("reads with resourceVersion %q, want %q", reads.asked, tc.wantAsked)
			}
			if tc.wantErr {
				if !apierrors.IsInternalError(err) {
					t.Fatalf("err = %v, want an internal error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != "n1" || string(got.UID) != tc.wantUID {
				t.Fatalf("node %s/%s, want n1/%s", got.Name, got.UID, tc.wantUID)
			}
		})
	}
}

// deadlineOnly is a context whose deadline has passed before its timer ended it: what a handler
// sees for an instant at the deadline.
type deadlineOnly struct {
	context.Context
	deadline time.Time
}

func (d deadlineOnly) Deadline() (time.Time, bool) { return d.deadline, true }

func TestTimedOut(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct {
		name string
		ctx  context.Context
		want bool
	}{
		{"no deadline", context.Background(), false},
		{"deadline ahead", deadlineOnly{context.Background(), now.Add(time.Millisecond)}, false},
		{"deadline reached, timer not yet fired", deadlineOnly{context.Background(), now}, true},
		{"deadline passed, timer not yet fired", deadlineOnly{context.Background(), now.Add(-time.Millisecond)}, true},
		{"context ended", ended, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := timedOut(tt.ctx, now); got != tt.want {
				t.Errorf("timedOut = %v, want %v", got, tt.want)
			}
		})
	}
}
