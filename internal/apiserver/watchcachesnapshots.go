package apiserver

import (
	"fmt"

	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// withoutWatchCacheSnapshots turns off the library's ListFromCacheSnapshot (beta, on by
// default since 1.34). With it, every watch cache keeps a copy-on-write snapshot of its store
// for each event still in the cache's event window, and each write after a snapshot copies the
// tree nodes on its path: after the standard populate that was ~60 MB of the heap profile's
// ~350 MB, held until later events push the old ones out. What the snapshots serve, a
// paginated list's later pages and lists at an exact older resourceVersion, is then read from
// etcd, as before 1.34; first pages and consistent lists still come from the cache.
//
// The gate is process-wide; every server in the process sets the same value.
func withoutWatchCacheSnapshots() error {
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(features.ListFromCacheSnapshot): false}); err != nil {
		return fmt.Errorf("turning off watch cache snapshots: %w", err)
	}
	return nil
}
