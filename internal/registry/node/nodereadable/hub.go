// Package nodereadable serves node.idplane.io/v1alpha1 nodereadables: for one node, the Secrets and
// ConfigMaps the Node authorizer lets it read now, listed and watched as one stream.
//
// A Hub joins two feeds: the Node authorizer's graph, which says when a node gains or loses its
// last path to an object, and the server's Secret and ConfigMap informers, which say when an
// object appears, changes or goes. From them it derives each node's events (ADDED when a path
// appears for an existing object or the object is created while a path exists, MODIFIED when the
// object changes, DELETED when the path or the object goes) and numbers them on one counter, the
// stream position clients resume from. Recent events are kept in a bounded log; a watch resumed
// from a position the log no longer covers is told 410 Gone, so its client lists again.
//
// The Hub holds the informers' objects by pointer and each node's paths as keys: an open watch
// costs its queue and one goroutine, never a copy of the objects.
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

// logEntry is one event of one node's stream.
type logEntry struct {
	seq  uint64
	node string
	typ  watch.EventType
	ref  ref
	obj  runtime.Object
}

// DefaultLogSize is how many recent events a Hub keeps for watches that resume.
const DefaultLogSize = 16384

// Hub derives every node's stream; see the package comment.
type Hub struct {
	// epoch marks this Hub's positions: a position from another process or replica is never
	// mistaken for one of ours.
	epoch uint64

	mu sync.Mutex
	// seq is the position of the last event.
	seq uint64
	// objects holds, per Secret or ConfigMap, the object as the informers last told (shared with
	// them) and the nodes with a path to it; readable lists each node's paths.
	objects  map[ref]*entry
	readable map[string]map[ref]struct{}
	// log is a ring of the last events; first is the index of the oldest, size how many it holds.
	log         []logEntry
	first, size int
	// lastRevision is, per kind (0 secrets, 1 configmaps), the highest resourceVersion the
	// informer has delivered; advanced is closed and replaced whenever one grows.
	lastRevision [2]uint64
	advanced     chan struct{}
	watchers     map[string]map[*watcher]struct{}
	// synced is closed once both informers have delivered their initial lists.
	synced     chan struct{}
	syncedOnce sync.Once
}

// NewHub returns an empty Hub keeping logSize recent events.
func NewHub(logSize int) *Hub {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("reading randomness for the stream epoch: %v", err))
	}
	return &Hub{
		epoch: binary.BigEndian.Uint64(b[:8]) & epochMask,
		// The sequence starts at a random point too, so that even two Hubs that drew the same
		// epoch do not give overlapping positions.
		seq:      binary.BigEndian.Uint64(b[8:]) & (seqMask >> 1),
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
		e.readers = append(e.readers, c.Node)
		add(h.readable, c.Node, r)
		if e.obj != nil {
			h.emitLocked(c.Node, watch.Added, r, e.obj)
		}
		return
	}
	if e == nil {
		return
	}
	if i := slices.Index(e.readers, c.Node); i >= 0 {
		e.readers = slices.Delete(e.readers, i, i+1)
	}
	remove(h.readable, c.Node, r)
	if e.obj != nil {
		h.emitLocked(c.Node, watch.Deleted, r, e.obj)
	} else if len(e.readers) == 0 {
		delete(h.objects, r)
	}
}

// entry is one Secret or ConfigMap: the object, nil until the informers deliver it, and the nodes
// with a path to it (usually one; a list is smaller than a set at that size).
type entry struct {
	obj     runtime.Object
	readers []string
}

// ObjectChanged tells the Hub of a Secret or ConfigMap as it is now; deleted says it went, obj
// being its last state. The informers' handlers (handler) call the same paths.
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

// objectUpdated records obj, the object r names as it is now, and tells r's readers.
func (h *Hub) objectUpdated(r ref, obj runtime.Object) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	revision, _ := strconv.ParseUint(m.GetResourceVersion(), 10, 64)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.noteRevisionLocked(r.configMap, revision)
	e := h.objects[r]
	if e == nil {
		e = &entry{}
		h.objects[r] = e
	}
	typ := watch.Added
	if e.obj != nil {
		if om, err := meta.Accessor(e.obj); err == nil && om.GetResourceVersion() == m.GetResourceVersion() {
			return // a resync: nothing changed
		}
		typ = watch.Modified
	}
	e.obj = obj
	for _, n := range e.readers {
		h.emitLocked(n, typ, r, obj)
	}
}

// objectDeleted forgets the object r names and tells its readers, with the last state the Hub
// holds. last is the deleted object as the informer knew it, nil when unknown (a tombstone with
// only a key): it only advances the informer's revision.
func (h *Hub) objectDeleted(r ref, last runtime.Object) {
	var revision uint64
	if last != nil {
		if m, err := meta.Accessor(last); err == nil {
			revision, _ = strconv.ParseUint(m.GetResourceVersion(), 10, 64)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.noteRevisionLocked(r.configMap, revision)
	e := h.objects[r]
	if e == nil || e.obj == nil {
		return
	}
	old := e.obj
	if e.obj = nil; len(e.readers) == 0 {
		delete(h.objects, r)
	}
	for _, n := range e.readers {
		h.emitLocked(n, watch.Deleted, r, old)
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

// MarkSynced says both informers have delivered their initial lists; requests wait for it.
func (h *Hub) MarkSynced() { h.syncedOnce.Do(func() { close(h.synced) }) }

// emitLocked numbers an event of node's stream, logs it and hands it to node's watchers.
func (h *Hub) emitLocked(nodeName string, typ watch.EventType, r ref, obj runtime.Object) {
	h.seq++
	e := logEntry{seq: h.seq, node: nodeName, typ: typ, ref: r, obj: obj}
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
			w.enqueueLocked(h.event(e))
		}
	}
}

// event turns a logged event into the watch event a client receives.
func (h *Hub) event(e logEntry) watch.Event {
	return watch.Event{Type: e.typ, Object: h.item(e.node, e.ref, e.obj, e.seq)}
}

// item is the NodeReadable for obj in node's stream at position seq. It shares obj.
func (h *Hub) item(nodeName string, r ref, obj runtime.Object, seq uint64) *nodev1alpha1.NodeReadable {
	it := &nodev1alpha1.NodeReadable{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.namespace, Name: r.itemName(), ResourceVersion: h.position(seq)},
		NodeName:   nodeName,
	}
	switch o := obj.(type) {
	case *corev1.Secret:
		it.Secret = o
	case *corev1.ConfigMap:
		it.ConfigMap = o
	}
	return it
}

// snapshotLocked lists node's items in namespace ("" for all) at the current position.
func (h *Hub) snapshotLocked(nodeName, namespace string) []nodev1alpha1.NodeReadable {
	var items []nodev1alpha1.NodeReadable
	for r := range h.readable[nodeName] {
		if namespace != "" && r.namespace != namespace {
			continue
		}
		if e := h.objects[r]; e != nil && e.obj != nil {
			items = append(items, *h.item(nodeName, r, e.obj, h.seq))
		}
	}
	return items
}

// missingLocked are node's paths (in namespace, "" for all) to objects the informers have not
// delivered.
func (h *Hub) missingLocked(nodeName, namespace string) []ref {
	var out []ref
	for r := range h.readable[nodeName] {
		if e := h.objects[r]; (e == nil || e.obj == nil) && (namespace == "" || r.namespace == namespace) {
			out = append(out, r)
		}
	}
	return out
}

// waitRevision waits until the informer of r's kind has delivered revision, or ctx ends.
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
	w := &watcher{
		hub: h, node: nodeName, namespace: namespace, bookmarks: bookmarks, interval: interval, clock: clk,
		result: make(chan watch.Event), stop: make(chan struct{}), wake: make(chan struct{}, 1),
	}
	if s.resume {
		if s.from > h.seq || s.from+uint64(h.size) < h.seq {
			return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %s (%s)", h.position(s.from), h.position(h.seq)))
		}
		for i := range h.size {
			e := h.log[(h.first+i)%len(h.log)]
			if e.seq > s.from && e.node == nodeName && (namespace == "" || e.ref.namespace == namespace) {
				w.queue = append(w.queue, h.event(e))
			}
		}
	}
	if s.initial {
		for _, it := range h.snapshotLocked(nodeName, namespace) {
			w.queue = append(w.queue, watch.Event{Type: watch.Added, Object: &it})
		}
	}
	if s.endMarker {
		w.queue = append(w.queue, bookmarkEvent(h.position(h.seq), true))
	}
	w.limit = len(w.queue) + maxBacklog
	add(h.watchers, nodeName, w)
	go w.run()
	return w, nil
}
