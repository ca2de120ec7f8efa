package node

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/idplane/idplane/internal/authz/rbac/bootstrap"
)

// benchSize is a cluster: pods spread evenly over nodes, except that node "small" runs 10
// pods and node "busy" runs busyPods, to compare a quiet node with a crowded one. Each pod
// uses its own secret and configmap and the namespace's default service account; one pod
// in ten also a claim, bound to a volume that needs a secret of its own.
type benchSize struct {
	nodes, pods, busyPods int
}

func (s benchSize) String() string {
	return fmt.Sprintf("nodes=%d/pods=%d", s.nodes, s.pods)
}

var benchSizes = []benchSize{
	{nodes: 100, pods: 3_000, busyPods: 300},
	{nodes: 1_000, pods: 30_000, busyPods: 1_000},
	{nodes: 5_000, pods: 150_000, busyPods: 3_000},
}

// benchPod describes pod i of the cluster: where it runs and what it uses.
type benchPod struct {
	namespace, name, node, secret, configMap, claim, pv, pvSecret string
}

func (s benchSize) pod(i int) benchPod {
	p := benchPod{
		namespace: "ns-" + strconv.Itoa(i%max(1, s.pods/100)),
		name:      "pod-" + strconv.Itoa(i),
		secret:    "secret-" + strconv.Itoa(i),
		configMap: "cm-" + strconv.Itoa(i),
	}
	switch {
	case i < 10:
		p.node = "small"
	case i < 10+s.busyPods:
		p.node = "busy"
	default:
		p.node = "node-" + strconv.Itoa(i%s.nodes)
	}
	if i%10 == 0 {
		p.claim = "claim-" + strconv.Itoa(i)
		p.pv = "pv-" + strconv.Itoa(i)
		p.pvSecret = "pv-secret-" + strconv.Itoa(i)
	}
	return p
}

// podObject fills pod, reusing its slices, so that building a large graph does not
// allocate a Pod per pod; the graph keeps only the strings.
func (p benchPod) podObject(pod *corev1.Pod) *corev1.Pod {
	pod.Namespace, pod.Name, pod.Spec.NodeName = p.namespace, p.name, p.node
	pod.Spec.ServiceAccountName = "default"
	pod.Spec.Volumes = append(pod.Spec.Volumes[:0],
		corev1.Volume{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: p.secret}}},
		corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: p.configMap}}}},
	)
	if p.claim != "" {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: p.claim}}})
	}
	return pod
}

func (p benchPod) pvObject() *corev1.PersistentVolume {
	return newPV(p.pv, claimRef(p.namespace, p.claim), &corev1.SecretReference{Namespace: p.namespace, Name: p.pvSecret})
}

// build returns the graph of the cluster.
func (s benchSize) build() *Graph {
	g := NewGraph()
	pod := &corev1.Pod{}
	for i := range s.pods {
		p := s.pod(i)
		if p.pv != "" {
			g.AddPV(p.pvObject())
		}
		g.AddPod(p.podObject(pod))
	}
	return g
}

// populate hands the cluster to p as its informers would, one add event per object, each at
// the next revision.
func (s benchSize) populate(p *Populator) {
	pod := &corev1.Pod{}
	rev := 0
	next := func() string {
		rev++
		return strconv.Itoa(rev)
	}
	for i := range s.pods {
		bp := s.pod(i)
		if bp.pv != "" {
			pv := bp.pvObject()
			pv.ResourceVersion = next()
			p.addPV(pv)
		}
		bp.podObject(pod).ResourceVersion = next()
		p.addPod(pod)
	}
}

func heapBytes() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkAuthorize measures the decision path (no freshness wait: the graph is current),
// the graph's memory and build rate (straight into the graph, and through the populator's
// handlers as informer events, with its revision tracking), and pod churn alone and alongside decisions. The
// largest size is skipped with -short. The churn figures need both cores, so run it on an
// otherwise idle machine:
//
//	go test -run '^$' -bench BenchmarkAuthorize -benchtime 2s ./internal/authz/node/
func BenchmarkAuthorize(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(size.String(), func(b *testing.B) {
			if testing.Short() && size.pods > 30_000 {
				b.Skip("large graph skipped in short mode")
			}
			benchmarkSize(b, size)
		})
	}
}

func benchmarkSize(b *testing.B, size benchSize) {
	// As in the server, graph changes update the metrics.
	RegisterMetrics()
	b.Run("build", func(b *testing.B) {
		var bytes uint64
		for range b.N {
			b.StopTimer()
			before := heapBytes()
			b.StartTimer()
			g := size.build()
			b.StopTimer()
			bytes += heapBytes() - before
			runtime.KeepAlive(g)
			b.StartTimer()
		}
		b.ReportMetric(float64(size.pods)*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
		b.ReportMetric(float64(bytes)/float64(b.N)/(1<<20), "graph-MiB")
	})

	b.Run("populate", func(b *testing.B) {
		var bytes uint64
		for range b.N {
			b.StopTimer()
			before := heapBytes()
			g, p, _ := newPopulator(b, fake.NewClientset())
			b.StartTimer()
			size.populate(p)
			b.StopTimer()
			bytes += heapBytes() - before
			runtime.KeepAlive(g)
			b.StartTimer()
		}
		b.ReportMetric(float64(size.pods)*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
		b.ReportMetric(float64(bytes)/float64(b.N)/(1<<20), "graph+populator-MiB")
	})

	g := size.build()
	a := NewAuthorizer(g, nil, bootstrap.NodeRules())
	rng := rand.New(rand.NewPCG(1, 2))
	typical := func() int { return 10 + size.busyPods + rng.IntN(size.pods-10-size.busyPods) }
	const requests = 4096
	var allowed, denied, small, busy, viaVolume []secretGet
	for range requests {
		p := size.pod(typical())
		allowed = append(allowed, secretGet{"system:node:" + p.node, p.namespace, p.secret})
		other := size.pod(typical())
		for other.node == p.node {
			other = size.pod(typical())
		}
		denied = append(denied, secretGet{"system:node:" + p.node, other.namespace, other.secret})
		// Both nodes are asked about ten secrets of theirs, so that caches favour
		// neither and the figures compare the work a decision does.
		s := size.pod(len(small) % 10)
		small = append(small, secretGet{"system:node:" + s.node, s.namespace, s.secret})
		bp := size.pod(10 + (len(busy)%10)*(size.busyPods/10))
		busy = append(busy, secretGet{"system:node:" + bp.node, bp.namespace, bp.secret})
		v := size.pod(typical() / 10 * 10)
		viaVolume = append(viaVolume, secretGet{"system:node:" + v.node, v.namespace, v.pvSecret})
	}
	for _, c := range []struct {
		name  string
		reqs  []secretGet
		allow bool
	}{
		{"secret-get/allowed", allowed, true},
		{"secret-get/denied", denied, false},
		{"secret-get/allowed/node-with-10-pods", small, true},
		{"secret-get/allowed/node-with-" + strconv.Itoa(size.busyPods) + "-pods", busy, true},
		{"secret-get/allowed/volume-secret", viaVolume, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := newRequester(a)
			r.check(b, c.reqs, c.allow)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				r.authorize(c.reqs[i%requests])
			}
		})
	}
	for _, c := range []struct {
		name string
		reqs []secretGet
	}{{"latency/allowed", allowed}, {"latency/denied", denied}} {
		b.Run(c.name, func(b *testing.B) {
			r := newRequester(a)
			durations := make([]time.Duration, b.N)
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				r.authorize(c.reqs[i%requests])
				durations[i] = time.Since(start)
			}
			b.StopTimer()
			reportPercentiles(b, durations)
		})
	}

	churn := newChurn(size, rng)
	b.Run("churn", func(b *testing.B) {
		churn.fill(g)
		b.ResetTimer()
		for i := range b.N {
			churn.step(g, i)
		}
		b.ReportMetric(2*float64(b.N)/b.Elapsed().Seconds(), "updates/s")
	})
	b.Run("secret-get/allowed/under-churn", func(b *testing.B) {
		churn.fill(g)
		r := newRequester(a)
		decide := func(n int) time.Duration {
			start := time.Now()
			for i := range n {
				r.authorize(allowed[i%requests])
			}
			return time.Since(start)
		}
		// Quiet and churning periods alternate, so that a change in the machine's load
		// during the run weighs on both alike.
		const rounds = 5
		var quiet, busy time.Duration
		updates := 0
		b.ResetTimer()
		b.StopTimer()
		for round := range rounds {
			n := b.N / rounds
			if round == rounds-1 {
				n = b.N - n*(rounds-1)
			}
			quiet += decide(n)

			var (
				stop atomic.Bool
				wg   sync.WaitGroup
			)
			wg.Go(func() {
				for ; !stop.Load(); updates++ {
					churn.step(g, updates)
				}
			})
			b.StartTimer()
			busy += decide(n)
			b.StopTimer()
			stop.Store(true)
			wg.Wait()
		}
		quietRate, busyRate := float64(b.N)/quiet.Seconds(), float64(b.N)/busy.Seconds()
		b.ReportMetric(quietRate, "quiet-decisions/s")
		b.ReportMetric(busyRate, "churn-decisions/s")
		b.ReportMetric(busyRate/quietRate, "churn/quiet")
		b.ReportMetric(2*float64(updates)/busy.Seconds(), "concurrent-updates/s")
	})
}

// secretGet is a node's request for a secret.
type secretGet struct {
	user, namespace, name string
}

// requester asks as an API server does: it fills one set of attributes per request, from
// the request, rather than keeping thousands of attribute objects around, whose scattered
// reads would be measured instead of the authorizer's.
type requester struct {
	a     *Authorizer
	user  user.DefaultInfo
	attrs authorizer.AttributesRecord
}

func newRequester(a *Authorizer) *requester {
	r := &requester{a: a, user: user.DefaultInfo{Groups: []string{"system:nodes", "system:authenticated"}}}
	r.attrs = authorizer.AttributesRecord{User: &r.user, Verb: "get", Resource: "secrets", ResourceRequest: true}
	return r
}

func (r *requester) authorize(req secretGet) (authorizer.Decision, string) {
	r.user.Name, r.attrs.Namespace, r.attrs.Name = req.user, req.namespace, req.name
	d, reason, _ := r.a.Authorize(context.Background(), &r.attrs)
	return d, reason
}

// check makes sure a benchmark measures the decisions it claims to.
func (r *requester) check(b *testing.B, reqs []secretGet, allow bool) {
	b.Helper()
	for _, req := range reqs {
		if d, reason := r.authorize(req); (d == authorizer.DecisionAllow) != allow {
			b.Fatalf("%+v: %v %q", req, d, reason)
		}
	}
}

// reportPercentiles reports the median and 99th percentile of durations, less the cost
// of reading the clock around each, which on this kind of machine is a good part of a
// decision.
func reportPercentiles(b *testing.B, durations []time.Duration) {
	clock := make([]time.Duration, 10_000)
	for i := range clock {
		start := time.Now()
		clock[i] = time.Since(start)
	}
	slices.Sort(clock)
	slices.Sort(durations)
	at := func(q float64) float64 {
		return float64(max(0, durations[int(q*float64(len(durations)-1))]-clock[len(clock)/2]).Nanoseconds())
	}
	b.ReportMetric(at(0.50), "p50-ns")
	b.ReportMetric(at(0.99), "p99-ns")
	b.ReportMetric(float64(clock[len(clock)/2].Nanoseconds()), "clock-ns")
}

// churn deletes and recreates pods drawn from a fixed pool: the pods are built once, so
// that the measurement is of the graph's work, not of making Pod objects.
type churn struct {
	pods   []*corev1.Pod
	filled bool
}

func newChurn(size benchSize, rng *rand.Rand) *churn {
	c := &churn{}
	for i := range 4096 {
		p := size.pod(rng.IntN(size.pods))
		p.name = "churn-" + strconv.Itoa(i)
		c.pods = append(c.pods, p.podObject(&corev1.Pod{}))
	}
	return c
}

// fill adds the pool's pods once, so that every step deletes a pod and adds it again.
func (c *churn) fill(g *Graph) {
	if c.filled {
		return
	}
	for _, p := range c.pods {
		g.AddPod(p)
	}
	c.filled = true
}

// step is two updates: the deletion of a pod and its creation.
func (c *churn) step(g *Graph, i int) {
	p := c.pods[i%len(c.pods)]
	g.DeletePod(p.Namespace, p.Name)
	g.AddPod(p)
}
