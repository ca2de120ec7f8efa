package nodereadable

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	nodev1alpha1 "github.com/idplane/idplane/api/node/v1alpha1"
	"github.com/idplane/idplane/internal/authz/node"
)

// secret is a Secret at version rv whose data names that version.
func secret(ns, name, rv string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}, Data: map[string][]byte{"v": []byte(rv)}}
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
		rv, nameOnly := "", true
		if it.Secret != nil {
			rv, nameOnly = it.Secret.ResourceVersion, it.Secret.Data == nil
		}
		if it.ConfigMap != nil {
			rv, nameOnly = it.ConfigMap.ResourceVersion, it.ConfigMap.Data == nil
		}
		d := fmt.Sprintf("%s %s/%s@%s", e.Type, it.Namespace, it.Name, rv)
		if nameOnly {
			d += " (name only)"
		}
		out = append(out, d)
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

// memSource is a Source over a map, which the tests keep as storage would be: objectChanged
// writes it before it tells the Hub, as storage has an object before a feed delivers it.
type memSource struct {
	mu      sync.Mutex
	objects map[ref]runtime.Object
	// reading, when set, is called with each read's ref before the read answers.
	reading func(ref)
	err     error
}

func (m *memSource) read(_ context.Context, configMap bool, namespace, name string) (runtime.Object, bool, error) {
	r := ref{configMap, namespace, name}
	m.mu.Lock()
	hook := m.reading
	m.mu.Unlock()
	if hook != nil {
		hook(r)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, false, m.err
	}
	obj, ok := m.objects[r]
	return obj, ok, nil
}

func (m *memSource) set(obj runtime.Object, deleted bool) {
	_, isConfigMap := obj.(*corev1.ConfigMap)
	_, r, ok := refOf(isConfigMap, obj)
	if !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if deleted {
		delete(m.objects, r)
	} else {
		m.objects[r] = obj
	}
}

// sources are the tests' hubs' sources.
var sources sync.Map

func sourceOf(h *Hub) *memSource {
	m, _ := sources.Load(h)
	return m.(*memSource)
}

// objectChanged changes the object in h's source, then tells h.
func objectChanged(h *Hub, obj runtime.Object, deleted bool) {
	sourceOf(h).set(obj, deleted)
	h.ObjectChanged(obj, deleted)
}

func newTestHub(logSize int) *Hub {
	m := &memSource{objects: map[ref]runtime.Object{}}
	h := NewHub(logSize, m.read)
	sources.Store(h, m)
	return h
}

func readyHub(logSize int) *Hub {
	h := newTestHub(logSize)
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
		{"object without a path", func() { objectChanged(h, secret("ns", "s", "1"), false) }, nil},
		{"path appears for an existing object", func() { h.PathChanged(path("n1", "ns", "s", true)) }, []string{"ADDED ns/secret.s@1"}},
		{"object changes", func() { objectChanged(h, secret("ns", "s", "2"), false) }, []string{"MODIFIED ns/secret.s@2"}},
		{"resync of the same version", func() { objectChanged(h, secret("ns", "s", "2"), false) }, nil},
		{"another node's path", func() { h.PathChanged(path("n2", "ns", "s", true)) }, nil},
		{"object deleted: its last state", func() { objectChanged(h, secret("ns", "s", "3"), true) }, []string{"DELETED ns/secret.s@3"}},
		{"object created while the path exists", func() { objectChanged(h, secret("ns", "s", "4"), false) }, []string{"ADDED ns/secret.s@4"}},
		{"path goes: the name and last version only", func() { h.PathChanged(path("n1", "ns", "s", false)) }, []string{"DELETED ns/secret.s@4 (name only)"}},
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
	objectChanged(h, secret("other", "o", "9"), false)
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
	objectChanged(h, secret("ns", "a", "1"), false) // seq 1 (n1 or n2), 2
	h.mu.Lock()
	mark := h.seq
	h.mu.Unlock()
	objectChanged(h, secret("ns", "a", "2"), false) // seq 3, 4
	w, err := h.open("n1", "", start{resume: true, from: mark}, false, time.Minute, clk)
	if err != nil {
		t.Fatal(err)
	}
	if got := describe(drain(t, w, 1)); !slices.Equal(got, []string{"MODIFIED ns/secret.a@2"}) {
		t.Errorf("resumed: got %q", got)
	}
	w.Stop()
	objectChanged(h, secret("ns", "a", "3"), false) // seq 5, 6: seq 1 and 2 leave the log
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
	other := newTestHub(4)
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
	objectChanged(h, secret("ns", "a", "1"), false)
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
		objectChanged(h, secret("ns", "a", fmt.Sprint(i+1)), false)
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

// TestHubNeverShowsWhatThePathNoLongerAllows: an event's object is read when it is delivered, so
// an ADDED or MODIFIED whose path broke before or during that read is dropped; the DELETED that
// follows names the object without its content.
func TestHubNeverShowsWhatThePathNoLongerAllows(t *testing.T) {
	t.Run("resumed after the path went and the object changed", func(t *testing.T) {
		h := readyHub(64)
		objectChanged(h, secret("ns", "s", "1"), false)
		h.mu.Lock()
		mark := h.seq
		h.mu.Unlock()
		h.PathChanged(path("n1", "ns", "s", true))
		h.PathChanged(path("n1", "ns", "s", false))
		objectChanged(h, secret("ns", "s", "2"), false)
		w, err := h.open("n1", "", start{resume: true, from: mark}, false, time.Minute, clocktesting.NewFakeClock(time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		h.PathChanged(path("n1", "ns", "marker", true))
		objectChanged(h, secret("ns", "marker", "9"), false)
		want := []string{"DELETED ns/secret.s@1 (name only)", "ADDED ns/secret.marker@9"}
		if got := describe(drain(t, w, 2)); !slices.Equal(got, want) {
			t.Errorf("got %q, want %q", got, want)
		}
	})
	t.Run("the path breaks while the object is read", func(t *testing.T) {
		h := readyHub(64)
		objectChanged(h, secret("ns", "s", "1"), false)
		w, err := h.open("n1", "", start{}, false, time.Minute, clocktesting.NewFakeClock(time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		src := sourceOf(h)
		var once sync.Once
		src.reading = func(r ref) {
			if r.name == "s" {
				once.Do(func() {
					// Storage moves on and the pod goes while the first read is in flight.
					objectChanged(h, secret("ns", "s", "2"), false)
					h.PathChanged(path("n1", "ns", "s", false))
				})
			}
		}
		h.PathChanged(path("n1", "ns", "s", true))
		// Queued: ADDED (its read breaks), MODIFIED and DELETED (from the hook). Only the last
		// may be delivered.
		want := []string{"DELETED ns/secret.s@2 (name only)"}
		if got := describe(drain(t, w, 1)); !slices.Equal(got, want) {
			t.Errorf("got %q, want %q", got, want)
		}
	})
	t.Run("a list leaves out an object whose path broke while it was read", func(t *testing.T) {
		h := readyHub(64)
		objectChanged(h, secret("ns", "s", "1"), false)
		objectChanged(h, secret("ns", "t", "1"), false)
		h.PathChanged(path("n1", "ns", "s", true))
		h.PathChanged(path("n1", "ns", "t", true))
		sourceOf(h).reading = func(r ref) {
			if r.name == "s" {
				h.PathChanged(path("n1", "ns", "s", false))
			}
		}
		h.mu.Lock()
		refs := h.snapshotLocked("n1", "")
		h.mu.Unlock()
		items, err := h.items(context.Background(), "n1", refs, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != 1 || items[0].Name != "secret.t" || string(items[0].Secret.Data["v"]) != "1" {
			t.Errorf("items: %+v", items)
		}
	})
}

// TestHubSourceFailures: a read that fails ends the watch (its client resumes, and the log
// replays what it missed) and fails a list; it never yields an empty or partial answer as if
// nothing were there.
func TestHubSourceFailures(t *testing.T) {
	h := readyHub(64)
	objectChanged(h, secret("ns", "s", "1"), false)
	h.PathChanged(path("n1", "ns", "s", true))
	sourceOf(h).err = fmt.Errorf("storage is down")
	w, err := h.open("n1", "", start{initial: true}, false, time.Minute, clocktesting.NewFakeClock(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case e, ok := <-w.ResultChan():
		if ok {
			t.Errorf("got an event: %s %q", e.Type, describe([]watch.Event{e}))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not end")
	}
	s := NewREST(h, nil, nil, Options{})
	ctx := genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: "system:node:n1", Groups: []string{user.NodesGroup}})
	if _, err := s.List(ctx, &metainternalversion.ListOptions{FieldSelector: fields.OneTermEqualSelector("nodeName", "n1")}); !apierrors.IsInternalError(err) {
		t.Errorf("list: got %v, want 500", err)
	}
}

// TestFeed: the Secret feed keeps nothing but the Hub's versions; a relist tells the Hub of the
// objects deleted while the watch was down and of nothing that did not change.
func TestFeed(t *testing.T) {
	h := readyHub(64)
	f := &feed{hub: h}
	h.PathChanged(path("n1", "ns", "a", true))
	h.PathChanged(path("n1", "ns", "b", true))
	w, err := h.open("n1", "", start{}, false, time.Minute, clocktesting.NewFakeClock(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	list := func(objs ...*corev1.Secret) []any {
		var out []any
		for _, o := range objs {
			sourceOf(h).set(o, false)
			out = append(out, o)
		}
		return out
	}
	steps := []struct {
		name string
		do   func() error
		want []string
	}{
		{"first list", func() error { return f.Replace(list(secret("ns", "a", "1"), secret("ns", "b", "1")), "1") },
			[]string{"ADDED ns/secret.a@1", "ADDED ns/secret.b@1"}},
		{"relist: b went, c came, a unchanged", func() error {
			sourceOf(h).set(secret("ns", "b", "1"), true)
			return f.Replace(list(secret("ns", "a", "1"), secret("ns", "c", "3")), "3")
		}, []string{"DELETED ns/secret.b@1 (name only)"}},
		{"update", func() error { return f.Update(list(secret("ns", "a", "4"))[0]) }, []string{"MODIFIED ns/secret.a@4"}},
		{"delete", func() error { return f.Delete(secret("ns", "a", "5")) }, []string{"DELETED ns/secret.a@5"}},
		{"a configmap of the same name is not a secret", func() error { return f.Add(configMap("ns", "b", "6")) }, nil},
	}
	for i, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		// A config map marks the end of the step's events: a relist of secrets cannot touch it.
		marker := fmt.Sprintf("marker-%d", i)
		h.PathChanged(node.ReadableChange{Node: "n1", Namespace: "ns", Name: marker, ConfigMap: true, Readable: true})
		objectChanged(h, configMap("ns", marker, "99"), false)
		got := describe(drain(t, w, len(s.want)+1))
		want := append(slices.Clone(s.want), "ADDED ns/configmap."+marker+"@99")
		slices.Sort(got[:len(s.want)])
		if !slices.Equal(got, want) {
			t.Errorf("%s: got %q, want %q", s.name, got, want)
		}
	}
	if !f.synced.Load() {
		t.Error("the feed is not synced after its list")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.objects[ref{namespace: "ns", name: "c"}]; e == nil || e.revision != 3 {
		t.Errorf("c: %+v", e)
	}
}
