package nodereadable

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	nodev1alpha1 "github.com/idplane/idplane/api/node/v1alpha1"
	"github.com/idplane/idplane/internal/authz/node"
)

func secret(ns, name, rv string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
}

func path(nodeName, ns, name string, readable bool) node.ReadableChange {
	return node.ReadableChange{Node: nodeName, Namespace: ns, Name: name, Readable: readable}
}

// describe renders events as "ADDED ns/secret.name@objectRV", bookmarks as "BOOKMARK" (with
// "end" for the initial-events marker).
func describe(events []watch.Event) []string {
	var out []string
	for _, e := range events {
		it := e.Object.(*nodev1alpha1.NodeReadable)
		if e.Type == watch.Bookmark {
			s := "BOOKMARK"
			if it.Annotations[metav1.InitialEventsAnnotationKey] == "true" {
				s += " end"
			}
			out = append(out, s)
			continue
		}
		rv := ""
		if it.Secret != nil {
			rv = it.Secret.ResourceVersion
		}
		out = append(out, fmt.Sprintf("%s %s/%s@%s", e.Type, it.Namespace, it.Name, rv))
	}
	return out
}

// drain reads n events from w, failing after a generous bound: events are queued before drain
// is called, so they are there at once.
func drain(t *testing.T, w watch.Interface, n int) []watch.Event {
	t.Helper()
	var out []watch.Event
	for len(out) < n {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed after %d events, want %d", len(out), n)
			}
			out = append(out, e)
		case <-time.After(10 * time.Second):
			t.Fatalf("got %d events, want %d: %q", len(out), n, describe(out))
		}
	}
	return out
}

func readyHub(logSize int) *Hub {
	h := NewHub(logSize)
	h.MarkSynced()
	return h
}

// TestHubEvents: the events a node's stream gets from the graph's paths and the informers'
// objects, and none for other nodes, other namespaces or resyncs.
func TestHubEvents(t *testing.T) {
	h := readyHub(64)
	w, err := h.open("n1", "", start{}, false, time.Minute, clocktesting.NewFakeClock(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	nsw, err := h.open("n1", "other", start{}, false, time.Minute, clocktesting.NewFakeClock(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	defer nsw.Stop()
	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"object without a path", func() { h.ObjectChanged(secret("ns", "s", "1"), false) }, nil},
		{"path appears for an existing object", func() { h.PathChanged(path("n1", "ns", "s", true)) }, []string{"ADDED ns/secret.s@1"}},
		{"object changes", func() { h.ObjectChanged(secret("ns", "s", "2"), false) }, []string{"MODIFIED ns/secret.s@2"}},
		{"resync of the same version", func() { h.ObjectChanged(secret("ns", "s", "2"), false) }, nil},
		{"another node's path", func() { h.PathChanged(path("n2", "ns", "s", true)) }, nil},
		{"object deleted", func() { h.ObjectChanged(secret("ns", "s", "3"), true) }, []string{"DELETED ns/secret.s@2"}},
		{"object created while the path exists", func() { h.ObjectChanged(secret("ns", "s", "4"), false) }, []string{"ADDED ns/secret.s@4"}},
		{"path goes", func() { h.PathChanged(path("n1", "ns", "s", false)) }, []string{"DELETED ns/secret.s@4"}},
		{"path to a missing object appears and goes", func() {
			h.PathChanged(path("n1", "ns", "missing", true))
			h.PathChanged(path("n1", "ns", "missing", false))
		}, nil},
	}
	for _, s := range steps {
		s.do()
		got := describe(drain(t, w, len(s.want)))
		if !slices.Equal(got, s.want) {
			t.Errorf("%s: got %q, want %q", s.name, got, s.want)
		}
	}
	h.PathChanged(path("n1", "other", "o", true))
	h.ObjectChanged(secret("other", "o", "9"), false)
	if got := describe(drain(t, nsw, 1)); !slices.Equal(got, []string{"ADDED other/secret.o@9"}) {
		t.Errorf("namespaced watch: got %q", got)
	}
	if got := describe(drain(t, w, 1)); !slices.Equal(got, []string{"ADDED other/secret.o@9"}) {
		t.Errorf("all-namespaces watch: got %q", got)
	}
}

// TestHubResume: a watch resumed from a position gets exactly the node's events after it, and a
// position the log no longer covers, from another server or from the future, is 410 Gone.
func TestHubResume(t *testing.T) {
	h := readyHub(4)
	clk := clocktesting.NewFakeClock(time.Now())
	h.PathChanged(path("n1", "ns", "a", true))
	h.PathChanged(path("n2", "ns", "a", true))
	h.ObjectChanged(secret("ns", "a", "1"), false) // seq 1 (n1 or n2), 2
	h.mu.Lock()
	mark := h.seq
	h.mu.Unlock()
	h.ObjectChanged(secret("ns", "a", "2"), false) // seq 3, 4
	w, err := h.open("n1", "", start{resume: true, from: mark}, false, time.Minute, clk)
	if err != nil {
		t.Fatal(err)
	}
	if got := describe(drain(t, w, 1)); !slices.Equal(got, []string{"MODIFIED ns/secret.a@2"}) {
		t.Errorf("resumed: got %q", got)
	}
	w.Stop()
	h.ObjectChanged(secret("ns", "a", "3"), false) // seq 5, 6: seq 1 and 2 leave the log
	h.mu.Lock()
	now := h.seq
	h.mu.Unlock()
	for _, tc := range []struct {
		name string
		from uint64
	}{
		{"a position the log no longer covers", mark - 1},
		{"a position from the future", now + 1},
	} {
		if _, err := h.open("n1", "", start{resume: true, from: tc.from}, false, time.Minute, clk); !apierrors.IsResourceExpired(err) {
			t.Errorf("%s: got %v, want 410", tc.name, err)
		}
	}
	other := NewHub(4)
	if _, ok := h.parsePosition(other.position(other.seq)); ok && other.epoch != h.epoch {
		t.Error("another hub's position was taken for ours")
	}
	if seq, ok := h.parsePosition(h.position(now)); !ok || seq != now {
		t.Errorf("own position: %d, %v", seq, ok)
	}
}

// TestHubInitialEventsAndBookmarks: sendInitialEvents gives the node's items, then the bookmark
// marking their end; an idle watch that allows bookmarks gets one at the current position.
func TestHubInitialEventsAndBookmarks(t *testing.T) {
	h := readyHub(16)
	clk := clocktesting.NewFakeClock(time.Now())
	h.ObjectChanged(secret("ns", "a", "1"), false)
	h.PathChanged(path("n1", "ns", "a", true))
	w, err := h.open("n1", "", start{initial: true, endMarker: true}, true, time.Minute, clk)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if got := describe(drain(t, w, 2)); !slices.Equal(got, []string{"ADDED ns/secret.a@1", "BOOKMARK end"}) {
		t.Errorf("initial events: got %q", got)
	}
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(time.Minute)
	b := drain(t, w, 1)[0]
	h.mu.Lock()
	want := h.position(h.seq)
	h.mu.Unlock()
	if b.Type != watch.Bookmark || b.Object.(*nodev1alpha1.NodeReadable).ResourceVersion != want {
		t.Errorf("bookmark: got %s at %s, want one at %s", b.Type, b.Object.(*nodev1alpha1.NodeReadable).ResourceVersion, want)
	}
}

// TestHubDropsSlowWatchers: a watcher whose client stops reading is closed once its backlog is
// full, and its client can resume from the log.
func TestHubDropsSlowWatchers(t *testing.T) {
	h := readyHub(4 * maxBacklog)
	h.PathChanged(path("n1", "ns", "a", true))
	w, err := h.open("n1", "", start{}, false, time.Minute, clocktesting.NewFakeClock(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := range maxBacklog + 2 {
		h.ObjectChanged(secret("ns", "a", fmt.Sprint(i+1)), false)
	}
	for range w.ResultChan() {
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.watchers["n1"]) != 0 {
		t.Errorf("%d watchers still registered", len(h.watchers["n1"]))
	}
}

// TestRESTRefusesOthers: the storage itself refuses requests without exactly one nodeName
// selector (400) and callers that are not that node (403), whatever the authorizer said.
func TestRESTRefusesOthers(t *testing.T) {
	s := NewREST(readyHub(4), nil, nil, Options{})
	nodeUser := &user.DefaultInfo{Name: "system:node:n1", Groups: []string{user.NodesGroup}}
	admin := &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup}}
	for _, tc := range []struct {
		name     string
		u        user.Info
		selector string
		want     func(error) bool
	}{
		{"own node", nodeUser, "nodeName=n1", func(err error) bool { return err == nil }},
		{"no selector", nodeUser, "", apierrors.IsBadRequest},
		{"another node", nodeUser, "nodeName=n2", apierrors.IsForbidden},
		{"not equals", nodeUser, "nodeName!=n2", apierrors.IsBadRequest},
		{"system:masters", admin, "nodeName=n1", apierrors.IsForbidden},
		{"a node name claimed by a non-node user", &user.DefaultInfo{Name: "system:node:n1"}, "nodeName=n1", apierrors.IsForbidden},
	} {
		ctx := genericapirequest.WithUser(context.Background(), tc.u)
		opts := &metainternalversion.ListOptions{}
		if tc.selector != "" {
			opts.FieldSelector = fields.ParseSelectorOrDie(tc.selector)
		}
		_, err := s.List(ctx, opts)
		if !tc.want(err) {
			t.Errorf("%s, list: %v", tc.name, err)
		}
		opts.SendInitialEvents = ptr.To(true)
		w, err := s.Watch(ctx, opts)
		if !tc.want(err) {
			t.Errorf("%s, watch: %v", tc.name, err)
		}
		if w != nil {
			w.Stop()
		}
	}
}
