package apiserver

import (
	"fmt"

	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// withoutMemoryHungryGates turns off two of the library's beta features, on by default, that
// each keep a copy of state per stored object for something idplane can do without. The gates
// are process-wide; every server in the process sets the same values.
func withoutMemoryHungryGates() error {
	off := map[string]bool{
		// ListFromCacheSnapshot (on since 1.34): every watch cache keeps a copy-on-write
		// snapshot of its store for each event still in the cache's event window, and each
		// write after a snapshot copies the tree nodes on its path: after the standard populate
		// that was ~60 MB of the heap profile's ~350 MB, held until later events push the old
		// ones out. What the snapshots serve, a paginated list's later pages and lists at an
		// exact older resourceVersion, is then read from etcd, as before 1.34; first pages and
		// consistent lists still come from the cache.
		string(features.ListFromCacheSnapshot): false,
		// SizeBasedListCostEstimate (on since 1.34): the etcd store of every resource keeps the
		// encoded size of each of its keys, with a copy of the key (~4 MB after the standard
		// populate), so that priority and fairness can cost a list by the bytes it would load.
		// Off, a list is costed by the number of objects it would touch, 100 to a seat and at
		// most 10 seats, as before 1.34; the periodic object count that feeds it and
		// apiserver_resource_objects becomes one count request to etcd per resource a
		// minute. Lists from the watch cache, most of them, cost at most 10 seats either way;
		// a list read from etcd also costs at most 10 where its bytes could cost up to 100
		// (within its priority level's own bound), so a page of large objects read from etcd
		// (secrets near the 1 MiB limit) is charged less. Nothing else reads the sizes but the
		// apiserver_resource_size_estimate_bytes metric, which is then not reported.
		string(features.SizeBasedListCostEstimate): false,
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(off); err != nil {
		return fmt.Errorf("turning off the watch cache snapshots and size-based list costs: %w", err)
	}
	return nil
}
