package nodereadable

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"github.com/idplane/idplane/internal/authz/node"
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
		objectChanged(h, secret("ns", fmt.Sprintf("s%d-%d", n, s), fmt.Sprint(i+1)), false)
		i++
	}
	// The op is done when its event has reached its watcher's client.
	for delivered.Load() < int64(i) {
		runtime.Gosched()
	}
}

// BenchmarkHubMemory is what the Hub holds per (node, object) path and per object, without any
// watch: 1,000 nodes × 20 pods, each pod with its own secret (the standard populate's shape),
// plus one configmap every node's pods share.
func BenchmarkHubMemory(b *testing.B) {
	const nodes, perNode = 1000, 20
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	for b.Loop() {
		objects := make([]*corev1.Secret, nodes*perNode)
		for i := range objects {
			objects[i] = secret("ns", fmt.Sprintf("s-%d", i), "1")
		}
		names := make([]string, nodes)
		for n := range names {
			names[n] = fmt.Sprintf("node-%d", n)
		}
		before := heap()
		// The Hub alone: its source, which holds the objects in the server, is not counted.
		h := NewHub(DefaultLogSize, func(context.Context, bool, string, string) (k8sruntime.Object, bool, error) { return nil, false, nil })
		for _, o := range objects {
			h.ObjectChanged(o, false)
		}
		for i, o := range objects {
			h.PathChanged(path(names[i%nodes], "ns", o.Name, true))
		}
		for n := range names {
			h.PathChanged(node.ReadableChange{Node: names[n], Namespace: "ns", Name: "kube-root-ca.crt", ConfigMap: true, Readable: true})
		}
		after := heap()
		b.ReportMetric(float64(after-before)/float64(nodes*(perNode+1)), "B/path")
		b.ReportMetric(float64(after-before)/(1<<20), "MiB")
		runtime.KeepAlive(h)
		runtime.KeepAlive(objects)
	}
}
