// Package nodereadable serves node.idplane.io/v1alpha1 nodereadables: for one node, the Secrets and
// ConfigMaps the Node authorizer lets it read now, listed and watched as one stream.
//
// A Hub joins the Node authorizer's graph, which says when a node gains or loses its last path to
// an object, with a feed per kind that says when an object appears, changes or goes (the server's
// ConfigMap informer, and a Secret feed of its own, FeedSecrets). From them it derives each node's
// events (ADDED when a path appears for an existing object or the object is created while a path
// exists, MODIFIED when the object changes, DELETED when the path or the object goes) and numbers
// them on one counter, the stream position clients resume from. Recent events are kept in a
// bounded log; a watch resumed from a position the log no longer covers is told 410 Gone, so its
// client lists again.
//
// The Hub holds no object: per Secret or ConfigMap only its resourceVersion and the nodes with a
// path to it. An ADDED or MODIFIED event carries the object as the Source reads it when the event
// is delivered, and only if the node's path to it stood unbroken throughout that read; an event
// whose path broke is dropped (its DELETED follows in the stream), never served with content the
// node could not GET at that moment. DELETED carries the deleted object's last state, or just its
// name and resourceVersion when the path went. So the Hub costs per path a few words, and an open
// watch its queue and one goroutine, whatever the objects weigh.
package nodereadable

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	nodev1alpha1 "github.com/idplane/idplane/api/node/v1alpha1"
	"github.com/idplane/idplane/internal/authz/node"
)

// ref names a Secret or a ConfigMap.
type ref struct {
	configMap       bool
	namespace, name string
}

func (r ref) itemName() string {
	if r.configMap {
		return nodev1alpha1.ConfigMapPrefix + r.name
	}
	return nodev1alpha1.SecretPrefix + r.name
}

// logEntry is one event of one node's stream. last is set for a DELETED of the object itself (its
// last state) and for a BOOKMARK (the bookmark); ADDED and MODIFIED read the object on delivery.
type logEntry struct {
	seq      uint64
	node     string
	typ      watch.EventType
	ref      ref
	revision uint64
	last     runtime.Object
}

// Source reads a Secret (or with configMap a ConfigMap) as it is now, at least as new as what the
// Hub's feeds have told; found is false when it does not exist.
type Source func(ctx context.Context, configMap bool, namespace, name string) (obj runtime.Object, found bool, err error)

// DefaultLogSize is how many recent events a Hub keeps for watches that resume.
const DefaultLogSize = 16384

// Hub derives every node's stream; see the package comment.
type Hub struct {
	// epoch marks this Hub's positions: a position from another process or replica is never
	// mistaken for one of ours.
	epoch uint64

	source Source

	mu sync.Mutex
	// seq is the position of the last event; paths numbers the paths that appear.
	seq, paths uint64
	// objects holds, per Secret or ConfigMap, its resourceVersion as the feeds last told and the
	// nodes with a path to it; readable lists each node's paths.
	objects  map[ref]*entry
	readable map[string]map[ref]struct{}
	// log is a ring of the last events; first is the index of the oldest, size how many it holds.
	log         []logEntry
	first, size int
	// lastRevision is, per kind (0 secrets, 1 configmaps), the highest resourceVersion the
	// feed has delivered; advanced is closed and replaced whenever one grows.
	lastRevision [2]uint64
	advanced     chan struct{}
	watchers     map[string]map[*watcher]struct{}
	// synced is closed once both feeds have delivered their initial lists.
	synced     chan struct{}
	syncedOnce sync.Once
}

// NewHub returns an empty Hub keeping logSize recent events, reading objects from source.
func NewHub(logSize int, source Source) *Hub {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("reading randomness for the stream epoch: %v", err))
	}
	return &Hub{
		epoch: binary.BigEndian.Uint64(b[:8]) & epochMask,
		// The sequence starts at a random point too, so that even two Hubs that drew the same
		// epoch do not give overlapping positions.
		seq:      binary.BigEndian.Uint64(b[8:]) & (seqMask >> 1),
		source:   source,
		objects:  map[ref]*entry{},
		readable: map[string]map[ref]struct{}{},
		log:      make([]logEntry, logSize),
		advanced: make(chan struct{}),
		watchers: map[string]map[*watcher]struct{}{},
		synced:   make(chan struct{}),
	}
}

// Positions are 62-bit numbers: the epoch in the top 22 bits, the sequence in the low 40.
const (
	seqBits   = 40
	seqMask   = 1<<seqBits - 1
	epochMask = (1<<62 - 1) &^ seqMask
)

func (h *Hub) position(seq uint64) string { return strconv.FormatUint(h.epoch|seq, 10) }

// parsePosition returns the sequence of one of this Hub's positions; ok is false for a
// position it never gave.
func (h *Hub) parsePosition(rv string) (seq uint64, ok bool) {
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil || n&epochMask != h.epoch || n&^(epochMask|seqMask) != 0 {
		return 0, false
	}
	return n & seqMask, true
}

// PathChanged is the graph's subscriber: a node gained or lost its last path to an object.
func (h *Hub) PathChanged(c node.ReadableChange) {
	r := ref{c.ConfigMap, c.Namespace, c.Name}
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.objects[r]
	if c.Readable {
		if e == nil {
			e = &entry{}
			h.objects[r] = e
		}
		h.paths++
		e.readers = append(e.readers, reader{c.Node, h.paths})
		add(h.readable, c.Node, r)
		if e.revision != 0 {
			h.emitLocked(c.Node, watch.Added, r, e.revision, nil)
		}
		return
	}
	if e == nil {
		return
	}
	if i := e.reader(c.Node); i >= 0 {
		e.readers = slices.Delete(e.readers, i, i+1)
	}
	remove(h.readable, c.Node, r)
	if e.revision != 0 {
		h.emitLocked(c.Node, watch.Deleted, r, e.revision, nil)
	} else if len(e.readers) == 0 {
		delete(h.objects, r)
	}
}

// entry is one Secret or ConfigMap: its resourceVersion, 0 while the feeds know of no such object,
// and the nodes with a path to it (usually one; a list is smaller than a set at that size).
type entry struct {
	revision uint64
	readers  []reader
}

// reader is a node with a path to an entry; path numbers the path, so that a path that went and
// came back is told from one that stood.
type reader struct {
	node string
	path uint64
}

func (e *entry) reader(nodeName string) int {
	return slices.IndexFunc(e.readers, func(r reader) bool { return r.node == nodeName })
}

// ObjectChanged tells the Hub of a Secret or ConfigMap as it is now; deleted says it went, obj
// being its last state. The feeds (handler, feed) call the same paths.
func (h *Hub) ObjectChanged(obj runtime.Object, deleted bool) {
	_, isConfigMap := obj.(*corev1.ConfigMap)
	o, r, ok := refOf(isConfigMap, obj)
	if !ok {
		return
	}
	if deleted {
		h.objectDeleted(r, o)
	} else {
		h.objectUpdated(r, o)
	}
}

// objectUpdated records that the object r names is now at obj's resourceVersion, and tells r's
// readers.
func (h *Hub) objectUpdated(r ref, obj runtime.Object) {
	revision := revisionOf(obj)
	if revision == 0 {
		return // not an object storage has written: nothing a reader could be shown
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.noteRevisionLocked(r.configMap, revision)
	e := h.objects[r]
	if e == nil {
		e = &entry{}
		h.objects[r] = e
	}
	typ := watch.Added
	if e.revision != 0 {
		if e.revision == revision {
			return // a resync: nothing changed
		}
		typ = watch.Modified
	}
	e.revision = revision
	for _, rd := range e.readers {
		h.emitLocked(rd.node, typ, r, revision, nil)
	}
}

// revisionOf is obj's resourceVersion as a number, 0 when it has none.
func revisionOf(obj runtime.Object) uint64 {
	if obj == nil {
		return 0
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return 0
	}
	revision, _ := strconv.ParseUint(m.GetResourceVersion(), 10, 64)
	return revision
}

// objectDeleted forgets the object r names and tells its readers. last is the deleted object as
// its feed knew it, nil when unknown (a tombstone with only a key); readers are sent it when it is
// at least as new as what the Hub knew, else only the object's name and last known version.
func (h *Hub) objectDeleted(r ref, last runtime.Object) {
	revision := revisionOf(last)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.noteRevisionLocked(r.configMap, revision)
	e := h.objects[r]
	if e == nil || e.revision == 0 {
		return
	}
	known := e.revision
	if revision < known {
		last, revision = nil, known // stale: what it holds is not the object's last state
	}
	if e.revision = 0; len(e.readers) == 0 {
		delete(h.objects, r)
	}
	for _, rd := range e.readers {
		h.emitLocked(rd.node, watch.Deleted, r, revision, last)
	}
}

func (h *Hub) noteRevisionLocked(configMap bool, revision uint64) {
	i := 0
	if configMap {
		i = 1
	}
	if revision > h.lastRevision[i] {
		h.lastRevision[i] = revision
		close(h.advanced)
		h.advanced = make(chan struct{})
	}
}

// MarkSynced says both feeds have delivered their initial lists; requests wait for it.
func (h *Hub) MarkSynced() { h.syncedOnce.Do(func() { close(h.synced) }) }

// emitLocked numbers an event of node's stream, logs it and hands it to node's watchers. last is
// the object's last state, for a DELETED of the object itself.
func (h *Hub) emitLocked(nodeName string, typ watch.EventType, r ref, revision uint64, last runtime.Object) {
	h.seq++
	e := logEntry{seq: h.seq, node: nodeName, typ: typ, ref: r, revision: revision, last: last}
	if len(h.log) > 0 {
		if h.size == len(h.log) {
			h.log[h.first] = e
			h.first = (h.first + 1) % len(h.log)
		} else {
			h.log[(h.first+h.size)%len(h.log)] = e
			h.size++
		}
	}
	for w := range h.watchers[nodeName] {
		if w.namespace == "" || w.namespace == r.namespace {
			w.enqueueLocked(e)
		}
	}
}

// event turns a logged event into the watch event a client receives; ok is false for an ADDED or
// MODIFIED that must not be sent: the object is gone, or the node has no path to it, or its path
// broke during the read (a DELETED follows in the stream in each case).
func (h *Hub) event(ctx context.Context, e logEntry) (ev watch.Event, ok bool, err error) {
	switch e.typ {
	case watch.Bookmark:
		return watch.Event{Type: watch.Bookmark, Object: e.last}, true, nil
	case watch.Deleted:
		last := e.last
		if last == nil {
			last = nameOnly(e.ref, e.revision)
		}
		return watch.Event{Type: e.typ, Object: h.item(e.node, e.ref, last, e.seq)}, true, nil
	}
	obj, ok, err := h.readFor(ctx, e.node, e.ref)
	if !ok {
		return watch.Event{}, false, err
	}
	return watch.Event{Type: e.typ, Object: h.item(e.node, e.ref, obj, e.seq)}, true, nil
}

// readFor reads the object r names for node, if node has had a path to it throughout the read:
// the path must stand, unbroken, both before and after the Source answers, so that what is read
// is what a GET by node would have been given at some moment of the read.
func (h *Hub) readFor(ctx context.Context, nodeName string, r ref) (runtime.Object, bool, error) {
	before, ok := h.pathOf(nodeName, r)
	if !ok {
		return nil, false, nil
	}
	obj, found, err := h.source(ctx, r.configMap, r.namespace, r.name)
	if err != nil {
		return nil, false, fmt.Errorf("reading %s/%s for node %q: %w", r.namespace, r.itemName(), nodeName, err)
	}
	if !found {
		return nil, false, nil
	}
	if o, got, ok := refOf(r.configMap, obj); !ok || got != r {
		return nil, false, fmt.Errorf("reading %s/%s for node %q: the source answered with another object (%T)", r.namespace, r.itemName(), nodeName, o)
	}
	if after, ok := h.pathOf(nodeName, r); !ok || after != before {
		return nil, false, nil
	}
	return obj, true, nil
}

// pathOf is the number of node's path to r, if it has one.
func (h *Hub) pathOf(nodeName string, r ref) (uint64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.objects[r]; e != nil {
		if i := e.reader(nodeName); i >= 0 {
			return e.readers[i].path, true
		}
	}
	return 0, false
}

// nameOnly is the object r names with only its name and resourceVersion: what a DELETED says when
// the node may no longer see the object's content.
func nameOnly(r ref, revision uint64) runtime.Object {
	m := metav1.ObjectMeta{Namespace: r.namespace, Name: r.name, ResourceVersion: strconv.FormatUint(revision, 10)}
	if r.configMap {
		return &corev1.ConfigMap{ObjectMeta: m}
	}
	return &corev1.Secret{ObjectMeta: m}
}

// item is the NodeReadable for obj in node's stream at position seq. It holds a shallow copy of
// obj without managed fields: the Source's objects may be shared with its cache and are not
// changed.
func (h *Hub) item(nodeName string, r ref, obj runtime.Object, seq uint64) *nodev1alpha1.NodeReadable {
	it := &nodev1alpha1.NodeReadable{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.namespace, Name: r.itemName(), ResourceVersion: h.position(seq)},
		NodeName:   nodeName,
	}
	switch o := obj.(type) {
	case *corev1.Secret:
		c := *o
		c.ManagedFields = nil
		it.Secret = &c
	case *corev1.ConfigMap:
		c := *o
		c.ManagedFields = nil
		it.ConfigMap = &c
	}
	return it
}

// snapshotLocked lists node's paths in namespace ("" for all) to objects that exist.
func (h *Hub) snapshotLocked(nodeName, namespace string) []ref {
	var out []ref
	for r := range h.readable[nodeName] {
		if e := h.objects[r]; e != nil && e.revision != 0 && (namespace == "" || r.namespace == namespace) {
			out = append(out, r)
		}
	}
	return out
}

// items reads the objects refs name for node, at position seq; an object gone or no longer
// readable by node is left out.
func (h *Hub) items(ctx context.Context, nodeName string, refs []ref, seq uint64) ([]nodev1alpha1.NodeReadable, error) {
	items := make([]nodev1alpha1.NodeReadable, 0, len(refs))
	for _, r := range refs {
		obj, ok, err := h.readFor(ctx, nodeName, r)
		if err != nil {
			return nil, err
		}
		if ok {
			items = append(items, *h.item(nodeName, r, obj, seq))
		}
	}
	return items, nil
}

// missingLocked are node's paths (in namespace, "" for all) to objects the feeds have not
// delivered.
func (h *Hub) missingLocked(nodeName, namespace string) []ref {
	var out []ref
	for r := range h.readable[nodeName] {
		if e := h.objects[r]; (e == nil || e.revision == 0) && (namespace == "" || r.namespace == namespace) {
			out = append(out, r)
		}
	}
	return out
}

// waitRevision waits until the feed of r's kind has delivered revision, or ctx ends.
func (h *Hub) waitRevision(ctx context.Context, configMap bool, revision uint64) error {
	i := 0
	if configMap {
		i = 1
	}
	for {
		h.mu.Lock()
		reached, advanced := h.lastRevision[i] >= revision, h.advanced
		h.mu.Unlock()
		if reached {
			return nil
		}
		select {
		case <-advanced:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func add[K, V comparable](m map[K]map[V]struct{}, k K, v V) {
	s := m[k]
	if s == nil {
		s = map[V]struct{}{}
		m[k] = s
	}
	s[v] = struct{}{}
}

func remove[K, V comparable](m map[K]map[V]struct{}, k K, v V) {
	if s := m[k]; s != nil {
		delete(s, v)
		if len(s) == 0 {
			delete(m, k)
		}
	}
}

// start says where a watch begins.
type start struct {
	// initial queues the node's items first, as ADDED; endMarker then a bookmark saying they
	// ended (sendInitialEvents).
	initial, endMarker bool
	// resume replays the logged events after position from.
	resume bool
	from   uint64
}

// open registers a watch of node's stream in namespace ("" for all) beginning as s says. A resume
// the log no longer covers, or from a position this Hub never gave, is 410 Gone.
func (h *Hub) open(nodeName, namespace string, s start, bookmarks bool, interval time.Duration, clk clock.WithTicker) (*watcher, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{
		hub: h, node: nodeName, namespace: namespace, bookmarks: bookmarks, interval: interval, clock: clk,
		result: make(chan watch.Event), wake: make(chan struct{}, 1),
		ctx: ctx, cancel: cancel,
	}
	if s.resume {
		if s.from > h.seq || s.from+uint64(h.size) < h.seq {
			cancel()
			return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %s (%s)", h.position(s.from), h.position(h.seq)))
		}
		for i := range h.size {
			e := h.log[(h.first+i)%len(h.log)]
			if e.seq > s.from && e.node == nodeName && (namespace == "" || e.ref.namespace == namespace) {
				w.queue = append(w.queue, e)
			}
		}
	}
	if s.initial {
		for _, r := range h.snapshotLocked(nodeName, namespace) {
			w.queue = append(w.queue, logEntry{seq: h.seq, node: nodeName, typ: watch.Added, ref: r})
		}
	}
	if s.endMarker {
		w.queue = append(w.queue, logEntry{typ: watch.Bookmark, last: bookmark(h.position(h.seq), true)})
	}
	w.limit = len(w.queue) + maxBacklog
	add(h.watchers, nodeName, w)
	go w.run()
	return w, nil
}
