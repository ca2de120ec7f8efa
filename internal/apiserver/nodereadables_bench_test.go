package apiserver

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/idplane/idplane/internal/pki"
)

// benchPodsPerNode is how many pods, each with its own secret, each of the 100 nodes runs.
const benchPodsPerNode = 10

// nodeConfigs mints a client configuration per node of the populated server.
func nodeConfigs(b *testing.B, ts *testServer) []*rest.Config {
	b.Helper()
	ca, err := pki.EnsureCA(pki.Files{Dir: filepath.Join(ts.dataDir, "pki")}, "unused", time.Now())
	if err != nil {
		b.Fatal(err)
	}
	out := make([]*rest.Config, memNodes)
	for i := range out {
		certPEM, keyPEM, err := pki.Issue(ca, pki.IssueRequest{
			CommonName: fmt.Sprintf("system:node:node-%d", i), Organization: []string{"system:nodes"},
			Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, Validity: time.Hour, Now: time.Now(),
		})
		if err != nil {
			b.Fatal(err)
		}
		cfg := rest.AnonymousClientConfig(ts.config)
		cfg.CertData, cfg.KeyData = certPEM, keyPEM
		cfg.QPS, cfg.Burst = -1, -1
		out[i] = cfg
	}
	return out
}

// watchReadables opens node n's nodereadables watch and reads its initial events up to the
// bookmark that ends them (client-go's watch-list mode).
func watchReadables(b *testing.B, ctx context.Context, c readablesClient, n int) watch.Interface {
	b.Helper()
	opts := forNode(fmt.Sprintf("node-%d", n))
	opts.SendInitialEvents, opts.AllowWatchBookmarks = ptrTo(true), true
	opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	w, err := c.watch(ctx, "", opts)
	if err != nil {
		b.Fatal(err)
	}
	for e := range w.ResultChan() {
		if e.Type == watch.Bookmark {
			return w
		}
	}
	b.Fatal("watch ended before its initial events did")
	return nil
}

// listThenWatchReadables lists node n's items, then watches from the list's position, as a
// reflector does outside watch-list mode. The watch is registered once the call returns.
func listThenWatchReadables(b *testing.B, ctx context.Context, c readablesClient, n int) watch.Interface {
	b.Helper()
	opts := forNode(fmt.Sprintf("node-%d", n))
	l, err := c.list(ctx, "", opts)
	if err != nil {
		b.Fatal(err)
	}
	if want := benchItems(n); len(l.Items) != want {
		b.Fatalf("node-%d lists %d items, want %d", n, len(l.Items), want)
	}
	opts.ResourceVersion, opts.AllowWatchBookmarks = l.ResourceVersion, true
	w, err := c.watch(ctx, "", opts)
	if err != nil {
		b.Fatal(err)
	}
	return w
}

// benchItems is how many items node n lists after populate and waitGraphCaughtUp: its pods'
// secrets and kube-root-ca.crt, and on the node waitGraphCaughtUp puts its pod on (node-0 in
// BenchmarkWatchMemory: pod app-5000, the last of -membench.objects), that pod's secret too.
func benchItems(n int) int {
	items := benchPodsPerNode + 1
	if n == *memObjects%memNodes {
		items++
	}
	return items
}

func writeHeapProfile(b *testing.B, path string) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

// processMemory is the Go heap and goroutine stacks in use after a full collection.
func processMemory() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse + ms.StackInuse
}

// BenchmarkWatchMemory measures what one open watch costs the process (server and its in-process
// clients: heap and goroutine stacks after a GC, each node's connection already open; both kinds
// list then watch, without client-go's watch-list mode, whose gzip stream costs the client a
// decompressor per watch whatever the resource), for the two ways a node follows its pods'
// secrets: one watch per secret by metadata.name, as a kubelet does, or one nodereadables watch
// for all of them. 100 nodes × 10 pods, each pod with its own secret. Both modes open 1,100
// watches, so that GC noise weighs alike; a node needs 11 of the first kind (10 secrets and
// kube-root-ca.crt) and one of the second. node-0 also runs waitGraphCaughtUp's pod, so its list
// holds 12 items (benchItems); the per-object mode does not watch that pod's secret. Run it once:
//
//	go test -run '^$' -bench BenchmarkWatchMemory -benchtime 1x ./internal/apiserver/
func BenchmarkWatchMemory(b *testing.B) {
	// The secret mode's watches are 10 per node plus kube-root-ca.crt's.
	for _, mode := range []string{"secret-per-object", "nodereadables"} {
		b.Run(mode, func(b *testing.B) {
			ts := startBenchServer(b, nil)
			ctx := b.Context()
			populate(b, ctx, ts.client, memNodes*benchPodsPerNode)
			waitGraphCaughtUp(b, ctx, ts.client)
			configs := nodeConfigs(b, ts)
			kube := make([]kubernetes.Interface, len(configs))
			readables := make([]readablesClient, len(configs))
			for i, cfg := range configs {
				kube[i] = kubernetes.NewForConfigOrDie(cfg)
				readables[i] = newReadablesClient(b, cfg)
				// The node's connection is open before the measure starts: the figures are the
				// watches', not the TLS connections' (each node's watches share its connection).
				if _, err := kube[i].CoreV1().Nodes().Get(ctx, fmt.Sprintf("node-%d", i), metav1.GetOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			var watches []watch.Interface
			defer func() {
				for _, w := range watches {
					w.Stop()
				}
			}()
			before := processMemory()
			for b.Loop() {
				for n := range memNodes {
					if mode == "nodereadables" {
						// As many watches as the other mode opens, so that both measure over the
						// same number (a node needs one of these).
						for range benchPodsPerNode + 1 {
							watches = append(watches, listThenWatchReadables(b, ctx, readables[n], n))
						}
						continue
					}
					// The pods also use kube-root-ca.crt, through their service account volume.
					w, err := kube[n].CoreV1().ConfigMaps(metav1.NamespaceDefault).Watch(ctx, metav1.ListOptions{
						FieldSelector: fields.OneTermEqualSelector("metadata.name", "kube-root-ca.crt").String(),
					})
					if err != nil {
						b.Fatal(err)
					}
					<-w.ResultChan()
					watches = append(watches, w)
					for p := n; p < memNodes*benchPodsPerNode; p += memNodes {
						name := fmt.Sprintf("app-%d", p)
						w, err := kube[n].CoreV1().Secrets(metav1.NamespaceDefault).Watch(ctx, metav1.ListOptions{
							FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
						})
						if err != nil {
							b.Fatal(err)
						}
						<-w.ResultChan()
						watches = append(watches, w)
					}
				}
			}
			after := processMemory()
			if *memHeapProfile != "" {
				writeHeapProfile(b, *memHeapProfile+"."+mode)
			}
			perWatch := float64(after-before) / float64(len(watches)) / 1024
			perNode := perWatch // one nodereadables watch per node
			if mode != "nodereadables" {
				perNode = perWatch * (benchPodsPerNode + 1)
			}
			b.ReportMetric(perWatch, "KiB/watch")
			b.ReportMetric(perNode, "KiB/node")
			b.ReportMetric(float64(len(watches)), "watches")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkNodeReadablesEvents measures events delivered through nodereadables watches: 100
// nodes' watches open, 16 clients update secrets (each used by one pod), and the benchmark ends
// when every update has reached its node as a MODIFIED event.
//
//	go test -run '^$' -bench BenchmarkNodeReadablesEvents -benchtime 5000x ./internal/apiserver/
func BenchmarkNodeReadablesEvents(b *testing.B) {
	ts := startBenchServer(b, nil)
	ctx := b.Context()
	populate(b, ctx, ts.client, memNodes*benchPodsPerNode)
	waitGraphCaughtUp(b, ctx, ts.client)
	configs := nodeConfigs(b, ts)
	var received atomic.Int64
	for n, cfg := range configs {
		w := watchReadables(b, ctx, newReadablesClient(b, cfg), n)
		defer w.Stop()
		go func() {
			for e := range w.ResultChan() {
				if e.Type == watch.Modified {
					received.Add(1)
				}
			}
		}()
	}
	secrets := ts.client.CoreV1().Secrets(metav1.NamespaceDefault)
	var next atomic.Int64
	b.SetParallelism(8) // 16 clients on 2 cores
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			p := i % (memNodes * benchPodsPerNode)
			patch := fmt.Sprintf(`{"stringData":{"password":%q}}`, strings.Repeat("x", 8)+strconv.FormatInt(i, 10))
			if _, err := secrets.Patch(ctx, fmt.Sprintf("app-%d", p), "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	want := next.Load()
	err := wait.PollUntilContextTimeout(ctx, time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return received.Load() >= want, nil
	})
	if err != nil {
		b.Fatalf("%d of %d events delivered", received.Load(), want)
	}
	b.ReportMetric(float64(want)/time.Since(start).Seconds(), "events/s")
}
