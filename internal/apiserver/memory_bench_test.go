package apiserver

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

var (
	memObjects     = flag.Int("membench.objects", 5000, "pods, and as many secrets, BenchmarkPopulatedHeap creates")
	memHeapProfile = flag.String("membench.heapprofile", "", "file BenchmarkPopulatedHeap writes the heap profile to after populating")
)

// memNodes is how many nodes the populated pods spread over.
const memNodes = 100

// BenchmarkPopulatedHeap measures what the whole server process (API server, informers,
// controllers, embedded etcd) holds once it stores -membench.objects pods, each using its own
// secret, spread over 100 nodes: Go heap in use after a GC, and RSS. Run it once:
//
//	go test -run '^$' -bench BenchmarkPopulatedHeap -benchtime 1x ./internal/apiserver/
func BenchmarkPopulatedHeap(b *testing.B) {
	ts := startBenchServer(b, nil)
	ctx := b.Context()
	populate(b, ctx, ts.client, *memObjects)
	waitGraphCaughtUp(b, ctx, ts.client)
	for b.Loop() {
		runtime.GC()
		runtime.GC()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-inuse-MiB")
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-live-MiB")
	b.ReportMetric(float64(rssBytes(b))/(1<<20), "rss-MiB")
	b.ReportMetric(0, "ns/op")
	if *memHeapProfile != "" {
		f, err := os.Create(*memHeapProfile)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// populate creates the nodes, n secrets and n pods each mounting its own secret, with 16
// clients' worth of concurrency.
func populate(b *testing.B, ctx context.Context, client kubernetes.Interface, n int) {
	b.Helper()
	for i := range memNodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i), Labels: map[string]string{"kubernetes.io/hostname": fmt.Sprintf("node-%d", i)}}}
		if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			b.Fatalf("creating node: %v", err)
		}
	}
	work := make(chan int)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range work {
				if err := createPodAndSecret(ctx, client, i); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
}

func createPodAndSecret(ctx context.Context, client kubernetes.Interface, i int) error {
	name := fmt.Sprintf("app-%d", i)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Data:       map[string][]byte{"password": []byte(strings.Repeat("s", 256))},
	}
	if _, err := client.CoreV1().Secrets(metav1.NamespaceDefault).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating secret %s: %w", name, err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			NodeName:   fmt.Sprintf("node-%d", i%memNodes),
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1", VolumeMounts: []corev1.VolumeMount{{Name: "s", MountPath: "/s"}}}},
			Volumes:    []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}}},
		},
	}
	if _, err := client.CoreV1().Pods(metav1.NamespaceDefault).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating pod %s: %w", name, err)
	}
	return nil
}

// waitGraphCaughtUp creates one last pod and secret and waits until the Node authorizer lets its
// node read the secret: the pod informer has then seen every pod created before it.
func waitGraphCaughtUp(b *testing.B, ctx context.Context, client kubernetes.Interface) {
	b.Helper()
	last := *memObjects
	if err := createPodAndSecret(ctx, client, last); err != nil {
		b.Fatal(err)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: fmt.Sprintf("system:node:node-%d", last%memNodes), Groups: []string{"system:nodes", "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: metav1.NamespaceDefault, Name: fmt.Sprintf("app-%d", last)},
	}}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		return err == nil && got.Status.Allowed, nil
	})
	if err != nil {
		b.Fatalf("the node graph did not catch up: %v", err)
	}
}

// rssBytes is this process's resident set size.
func rssBytes(b *testing.B) int64 {
	b.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}
