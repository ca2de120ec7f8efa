package podview

import (
	"sync"
	"weak"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

const (
	// maxShapes bounds how many distinct projected volume sources the table shares. A cluster
	// has a handful (the kube-api-access volume that admission adds to every pod is one per
	// token lifetime and audience), so a full table means someone is creating shapes; the
	// shapes past it are simply not shared.
	maxShapes = 256
	// maxShapeBytes bounds a shareable source's protobuf encoding, the table's key. The
	// kube-api-access source encodes to about 60 bytes; a large source is rare, and keeping its
	// key would cost more than sharing it saves.
	maxShapeBytes = 512
)

// projectedShapes is the table Slim shares projected volume sources through.
var projectedShapes = newShapeTable(maxShapes)

// shapeTable holds one copy of each projected volume source shape that the informer's pods
// share, keyed by its protobuf encoding. It holds the copies weakly: once no pod holds a shape,
// the collector frees it and its place in the table can be taken by another.
type shapeTable struct {
	limit int

	mu    sync.Mutex
	byKey map[string]weak.Pointer[corev1.ProjectedVolumeSource]
}

func newShapeTable(limit int) *shapeTable {
	return &shapeTable{limit: limit, byKey: make(map[string]weak.Pointer[corev1.ProjectedVolumeSource])}
}

// share returns the table's copy of a source equal to p, or p itself when the table has none:
// it then records p as the copy if there is room. p must not be changed afterwards, by the
// caller or anyone else: pods of its shape may share it.
func (t *shapeTable) share(p *corev1.ProjectedVolumeSource) *corev1.ProjectedVolumeSource {
	n := p.Size()
	if n > maxShapeBytes {
		return p
	}
	var buf [maxShapeBytes]byte
	key := buf[:n]
	if _, err := p.MarshalToSizedBuffer(key); err != nil {
		return p
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if w, ok := t.byKey[string(key)]; ok {
		if shared := w.Value(); shared != nil {
			// Equal encodings decode to equal sources; the comparison makes sharing depend on
			// equality alone, not on the encoding covering every field.
			if shared == p || apiequality.Semantic.DeepEqual(shared, p) {
				return shared
			}
			return p
		}
		// The last pod of this shape is gone: p takes its place.
		t.byKey[string(key)] = weak.Make(p)
		return p
	}
	if len(t.byKey) >= t.limit && !t.sweep() {
		return p
	}
	t.byKey[string(key)] = weak.Make(p)
	return p
}

// sweep drops the shapes the collector has freed and says whether that made room. The table
// is small, so a full one costs a walk of a few hundred entries per source it cannot share.
func (t *shapeTable) sweep() bool {
	for k, w := range t.byKey {
		if w.Value() == nil {
			delete(t.byKey, k)
		}
	}
	return len(t.byKey) < t.limit
}
