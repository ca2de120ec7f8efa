// Package managedfields keeps managed fields out of in-process informer caches.
//
// Server-side apply's managed fields are often the largest part of an object's metadata, and no
// informer consumer in idplane reads them: the caches of the server (authorizers, admission,
// controllers) and of the agent hold every object without them. An object read from such a cache
// and sent back in an Update carries no managed fields, which the server takes as "keep the
// stored ones" (it resets them only for an explicitly empty list), so controllers that update
// cached objects do not erase other managers' ownership.
package managedfields

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// Drop is an informer transform that removes an object's managed fields in place (informers
// hand a transform objects no one else holds yet). Anything without object metadata, such as a
// tombstone, passes unchanged.
func Drop(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

var _ cache.TransformFunc = Drop
