package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mathrand "math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/idplane/idplane/bench/internal/loadclient"
)

const (
	// namespaceGoneTimeout bounds the wait for the namespace controller to remove the load's
	// namespace from a server the tool did not launch.
	namespaceGoneTimeout = time.Minute
)

type client struct {
	cs kubernetes.Interface
}

func newClient(kubeconfig string, protobuf bool) (*client, error) {
	cfg, err := loadclient.RESTConfig(kubeconfig, "idplane-apiload")
	if err != nil {
		return nil, err
	}
	if protobuf {
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building client: %w", err)
	}
	return &client{cs: cs}, nil
}

func (c *client) checkReady(ctx context.Context) error {
	body, err := c.cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("server not ready: %w: %s", err, body)
	}
	return nil
}

// phaseBound says when a phase stops: after count operations when count > 0 (limit then only
// guards against a server too slow to finish), otherwise after limit.
type phaseBound struct {
	count int
	limit time.Duration
}

// operation performs the i-th request of a phase; rng belongs to the calling worker.
type operation func(ctx context.Context, rng *mathrand.Rand, i int) error

// runLoad creates the secrets in a fresh namespace and then reads them back, one phase per kind
// of request. srv is nil when the tool did not launch the server.
func runLoad(ctx context.Context, cfg config, c *client, srv *server) ([]phaseResult, error) {
	ns, err := c.createNamespace(ctx)
	if err != nil {
		return nil, err
	}
	if srv == nil {
		defer c.deleteNamespace(ns)
	}
	secrets := c.cs.CoreV1().Secrets(ns)
	payload := make([]byte, cfg.secretBytes)
	rand.Read(payload)
	readBound := phaseBound{count: cfg.requests, limit: cfg.duration}
	if cfg.requests > 0 {
		readBound.limit = cfg.phaseTimeout
	}

	var phases []phaseResult
	run := func(name string, b phaseBound, op operation) error {
		fmt.Fprintf(os.Stderr, "apiload: %s\n", name)
		p, err := runPhase(ctx, name, cfg.concurrency, b, srv, op)
		if err != nil {
			return err
		}
		phases = append(phases, p)
		return ctx.Err()
	}

	created := make([]bool, cfg.secrets)
	err = run("CREATE", phaseBound{count: cfg.secrets, limit: cfg.phaseTimeout}, func(ctx context.Context, _ *mathrand.Rand, i int) error {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: secretName(i)},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{"payload": payload},
		}
		if _, err := secrets.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return err
		}
		// Every index goes to exactly one worker, so the writes never race.
		created[i] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	var names []string
	for i, ok := range created {
		if ok {
			names = append(names, secretName(i))
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no secret was created; first error: %s", phases[0].FirstError)
	}

	err = run("GET", readBound, func(ctx context.Context, rng *mathrand.Rand, _ int) error {
		_, err := secrets.Get(ctx, names[rng.IntN(len(names))], metav1.GetOptions{})
		return err
	})
	if err != nil {
		return nil, err
	}
	err = run("LIST", readBound, func(ctx context.Context, _ *mathrand.Rand, _ int) error {
		list, err := secrets.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		return checkCount(len(list.Items), len(names))
	})
	if err != nil {
		return nil, err
	}
	if cfg.pageSize > 0 {
		// One operation walks all pages, so its latency is what a paginating client waits for the
		// same list the LIST phase fetches in one response.
		name := fmt.Sprintf("LIST limit=%d", cfg.pageSize)
		err = run(name, readBound, func(ctx context.Context, _ *mathrand.Rand, _ int) error {
			opts := metav1.ListOptions{Limit: cfg.pageSize}
			total := 0
			for {
				list, err := secrets.List(ctx, opts)
				if err != nil {
					return err
				}
				total += len(list.Items)
				if list.Continue == "" {
					return checkCount(total, len(names))
				}
				opts.Continue = list.Continue
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return phases, nil
}

func secretName(i int) string { return fmt.Sprintf("apiload-%06d", i) }

func checkCount(got, want int) error {
	if got != want {
		return fmt.Errorf("listed %d secrets, want %d", got, want)
	}
	return nil
}

func (c *client) createNamespace(ctx context.Context) (string, error) {
	suffix := make([]byte, 4)
	rand.Read(suffix)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apiload-" + hex.EncodeToString(suffix)}}
	if _, err := c.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("creating namespace %s: %w", ns.Name, err)
	}
	return ns.Name, nil
}

// deleteNamespace removes the load's namespace from a server that outlives the tool and waits for
// the namespace controller to empty it, so the next run measures an unburdened server. Failing
// here only warns: the figures are already taken.
func (c *client) deleteNamespace(ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), namespaceGoneTimeout)
	defer cancel()
	if err := c.cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		fmt.Fprintf(os.Stderr, "apiload: warning: deleting namespace %s: %v\n", ns, err)
		return
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := c.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			fmt.Fprintf(os.Stderr, "apiload: warning: namespace %s still present after %s\n", ns, namespaceGoneTimeout)
			return
		}
	}
}

// runPhase runs op on concurrency workers until the bound is reached and summarises the latency
// of every request. It fails only when ctx ends; request errors are counted instead.
func runPhase(ctx context.Context, name string, concurrency int, b phaseBound, srv *server, op operation) (phaseResult, error) {
	var serverCPU0 time.Duration
	if srv != nil {
		var err error
		if serverCPU0, err = processCPU(srv.pid()); err != nil {
			return phaseResult{}, err
		}
	}
	clientCPU0 := selfCPU()

	var (
		next      atomic.Int64
		firstErr  error
		errOnce   sync.Once
		wg        sync.WaitGroup
		samples   = make([][]time.Duration, concurrency)
		errCounts = make([]int, concurrency)
		seed      = uint64(time.Now().UnixNano())
	)
	begin := time.Now()
	stopAt := begin.Add(b.limit)
	for w := range concurrency {
		wg.Go(func() {
			rng := mathrand.New(mathrand.NewPCG(seed, uint64(w)))
			for ctx.Err() == nil && time.Now().Before(stopAt) {
				i := int(next.Add(1) - 1)
				if b.count > 0 && i >= b.count {
					return
				}
				start := time.Now()
				err := op(ctx, rng, i)
				samples[w] = append(samples[w], time.Since(start))
				if err != nil {
					errCounts[w]++
					errOnce.Do(func() { firstErr = err })
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(begin)
	if err := ctx.Err(); err != nil {
		return phaseResult{}, fmt.Errorf("phase %s: %w", name, err)
	}

	all := slices.Concat(samples...)
	slices.Sort(all)
	p := phaseResult{
		Name:             name,
		Requests:         len(all),
		Seconds:          elapsed.Seconds(),
		RPS:              float64(len(all)) / elapsed.Seconds(),
		P50Ms:            ms(percentile(all, 50)),
		P90Ms:            ms(percentile(all, 90)),
		P99Ms:            ms(percentile(all, 99)),
		ClientCPUSeconds: (selfCPU() - clientCPU0).Seconds(),
		TimedOut:         b.count > 0 && len(all) < b.count,
	}
	for _, n := range errCounts {
		p.Errors += n
	}
	if firstErr != nil {
		p.FirstError = firstLine(firstErr.Error())
	}
	if srv != nil {
		serverCPU, err := processCPU(srv.pid())
		if err != nil {
			return phaseResult{}, err
		}
		p.ServerCPUSeconds = (serverCPU - serverCPU0).Seconds()
	}
	return p, nil
}
