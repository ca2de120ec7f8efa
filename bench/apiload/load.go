package main

import (
	"context"
	"crypto/rand"
	"fmt"
	mathrand "math/rand/v2"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/idplane/idplane/bench/internal/loadclient"
	"github.com/idplane/idplane/bench/internal/loadphase"
	"github.com/idplane/idplane/bench/internal/serverproc"
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

// runLoad creates the secrets in a fresh namespace and then reads them back, one phase per kind
// of request. srv is nil when the tool did not launch the server.
func runLoad(ctx context.Context, cfg config, c *client, srv *server) ([]phaseResult, error) {
	ns, err := loadclient.CreateNamespace(ctx, c.cs, "apiload-")
	if err != nil {
		return nil, err
	}
	if srv == nil {
		// A failed clean-up only warns: the figures are already taken.
		defer func() {
			if err := loadclient.DeleteNamespace(c.cs, ns); err != nil {
				fmt.Fprintf(os.Stderr, "apiload: warning: %v\n", err)
			}
		}()
	}
	secrets := c.cs.CoreV1().Secrets(ns)
	payload := make([]byte, cfg.secretBytes)
	rand.Read(payload)
	readBound := loadphase.Bound{Count: cfg.requests, Limit: cfg.duration}
	if cfg.requests > 0 {
		readBound.Limit = cfg.phaseTimeout
	}

	var phases []phaseResult
	run := func(name string, b loadphase.Bound, op loadphase.Op) error {
		fmt.Fprintf(os.Stderr, "apiload: %s\n", name)
		p, err := runPhase(ctx, name, cfg.concurrency, b, srv, op)
		if err != nil {
			return err
		}
		phases = append(phases, p)
		return ctx.Err()
	}

	created := make([]bool, cfg.secrets)
	err = run("CREATE", loadphase.Bound{Count: cfg.secrets, Limit: cfg.phaseTimeout}, func(ctx context.Context, _ *mathrand.Rand, i int) error {
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

// runPhase runs op on concurrency workers until the bound is reached and summarises the latency
// of every request. It fails only when ctx ends; request errors are counted instead.
func runPhase(ctx context.Context, name string, concurrency int, b loadphase.Bound, srv *server, op loadphase.Op) (phaseResult, error) {
	var serverCPU0 time.Duration
	if srv != nil {
		var err error
		if serverCPU0, err = serverproc.ProcessCPU(srv.pid()); err != nil {
			return phaseResult{}, err
		}
	}
	clientCPU0 := serverproc.SelfCPU()

	r := loadphase.Run(ctx, concurrency, b, op)
	if err := ctx.Err(); err != nil {
		return phaseResult{}, fmt.Errorf("phase %s: %w", name, err)
	}
	p := phaseResult{
		Name:             name,
		Requests:         len(r.Latencies),
		Errors:           r.Errors,
		Seconds:          r.Elapsed.Seconds(),
		RPS:              r.RPS(),
		P50Ms:            ms(r.Percentile(50)),
		P90Ms:            ms(r.Percentile(90)),
		P99Ms:            ms(r.Percentile(99)),
		ClientCPUSeconds: (serverproc.SelfCPU() - clientCPU0).Seconds(),
		TimedOut:         r.TimedOut,
	}
	if r.FirstError != nil {
		p.FirstError = firstLine(r.FirstError.Error())
	}
	if srv != nil {
		serverCPU, err := serverproc.ProcessCPU(srv.pid())
		if err != nil {
			return phaseResult{}, err
		}
		p.ServerCPUSeconds = (serverCPU - serverCPU0).Seconds()
	}
	return p, nil
}
