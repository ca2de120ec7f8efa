package nodereadable

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
)

// BenchmarkHubFanOut is the Hub's own cost of an event: 100 nodes × 10 secrets, one watcher per
// node draining its stream; every op changes one secret, which one node may read.
func BenchmarkHubFanOut(b *testing.B) {
	const nodes, perNode = 100, 10
	h := readyHub(DefaultLogSize)
	var delivered atomic.Int64
	for n := range nodes {
		for i := range perNode {
			h.PathChanged(path(fmt.Sprintf("n%d", n), "ns", fmt.Sprintf("s%d-%d", n, i), true))
		}
		w, err := h.open(fmt.Sprintf("n%d", n), "", start{}, false, time.Minute, clock.RealClock{})
		if err != nil {
			b.Fatal(err)
		}
		w.limit = 1 << 30
		go func() {
			for e := range w.ResultChan() {
				if e.Type == watch.Modified || e.Type == watch.Added {
					delivered.Add(1)
				}
			}
		}()
		defer w.Stop()
	}
	i := 0
	for b.Loop() {
		n, s := i%nodes, (i/nodes)%perNode
		h.ObjectChanged(secret("ns", fmt.Sprintf("s%d-%d", n, s), fmt.Sprint(i+1)), false)
		i++
	}
	// The op is done when its event has reached its watcher's client.
	for delivered.Load() < int64(i) {
		runtime.Gosched()
	}
}
