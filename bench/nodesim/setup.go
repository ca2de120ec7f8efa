package main

import (
	"context"
	"fmt"
	mathrand "math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/idplane/idplane/bench/internal/loadphase"
)

// setupWorkers is how many requests the admin has in flight while creating a level's objects.
const setupWorkers = 16

// setupFigures says how long creating a level's objects took.
type setupFigures struct {
	Objects int     `json:"objects"`
	Seconds float64 `json:"seconds"`
}

// createObjects creates, as the admin, every namespace, service account, secret, configmap and
// pod of the plan, in that order: a pod's service account must exist before admission sees it.
func createObjects(ctx context.Context, cs kubernetes.Interface, p plan, payload int, timeout time.Duration) (setupFigures, error) {
	begin := time.Now()
	deadline := begin.Add(timeout)
	var total int
	step := func(what string, n int, op func(ctx context.Context, i int) error) error {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("creating %s: setup took longer than %s", what, timeout)
		}
		r := loadphase.Run(ctx, setupWorkers, loadphase.Bound{Count: n, Limit: left}, func(ctx context.Context, _ *mathrand.Rand, i int) error {
			return op(ctx, i)
		})
		if err := ctx.Err(); err != nil {
			return err
		}
		if r.Errors > 0 {
			return fmt.Errorf("creating %s: %d of %d failed, first: %w", what, r.Errors, n, r.FirstError)
		}
		if r.TimedOut {
			return fmt.Errorf("creating %s: setup took longer than %s", what, timeout)
		}
		total += n
		return nil
	}

	err := step("namespaces", p.namespaces, func(ctx context.Context, i int) error {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.namespace(i)}}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return setupFigures{}, err
	}
	err = step("service accounts", p.namespaces*p.serviceAccounts, func(ctx context.Context, i int) error {
		ns, sa := p.namespace(i/p.serviceAccounts), p.serviceAccount(i%p.serviceAccounts)
		_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return setupFigures{}, err
	}

	type object struct{ ns, name string }
	var objects []object
	for ns := range p.namespaces {
		for _, name := range p.objectNames(ns) {
			objects = append(objects, object{p.namespace(ns), name})
		}
	}
	data := make([]byte, payload)
	for i := range data {
		data[i] = 'a' + byte(i%26)
	}
	err = step("secrets", len(objects), func(ctx context.Context, i int) error {
		o := objects[i]
		_, err := cs.CoreV1().Secrets(o.ns).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: o.name}, Data: map[string][]byte{"password": data},
		}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return setupFigures{}, err
	}
	err = step("configmaps", len(objects), func(ctx context.Context, i int) error {
		o := objects[i]
		_, err := cs.CoreV1().ConfigMaps(o.ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: o.name}, Data: map[string]string{"config": string(data)},
		}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return setupFigures{}, err
	}
	err = step("pods", p.pods(), func(ctx context.Context, k int) error {
		pp := p.pod(k/p.podsPerNode, k%p.podsPerNode)
		_, err := cs.CoreV1().Pods(pp.Namespace).Create(ctx, p.podObject(pp), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return setupFigures{}, err
	}
	return setupFigures{Objects: total, Seconds: time.Since(begin).Seconds()}, nil
}
