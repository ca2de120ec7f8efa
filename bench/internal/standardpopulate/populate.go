// Package standardpopulate fills a server with the standard populate the load tools measure
// against: by default 47,100 objects (100 namespaces, 1,000 nodes, 20,000 secrets, 20,000 pods
// bound to the nodes and each mounting a secret, 3,000 PVs and 3,000 PVCs).
package standardpopulate

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/idplane/idplane/bench/internal/loadphase"
)

// Config is the size of the populate.
type Config struct {
	Namespaces, Nodes, Secrets, Pods, PVs, PVCs int
	Concurrency                                 int
	Timeout                                     time.Duration
}

// AddFlags registers the populate's flags on fs, with the standard populate as defaults.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.Namespaces, "namespaces", 100, "namespaces of the populate")
	fs.IntVar(&c.Nodes, "nodes", 1000, "nodes")
	fs.IntVar(&c.Secrets, "secrets", 20000, "secrets, spread over the namespaces")
	fs.IntVar(&c.Pods, "pods", 20000, "pods, spread over the namespaces and nodes, each mounting a secret")
	fs.IntVar(&c.PVs, "pvs", 3000, "persistent volumes")
	fs.IntVar(&c.PVCs, "pvcs", 3000, "persistent volume claims, spread over the namespaces")
	fs.IntVar(&c.Concurrency, "concurrency", 16, "workers of the populate")
	fs.DurationVar(&c.Timeout, "populate-timeout", 20*time.Minute, "hard limit of the populate")
}

// Validate refuses sizes the populate cannot spread objects over.
func (c Config) Validate() error {
	if c.Namespaces < 1 || c.Nodes < 1 || c.Concurrency < 1 {
		return errors.New("-namespaces, -nodes and -concurrency must be positive")
	}
	return nil
}

// Namespace is the namespace of the i-th secret, pod or PVC.
func (c Config) Namespace(i int) string { return fmt.Sprintf("ns-%d", i%c.Namespaces) }

// SecretName is the name of the i-th secret.
func SecretName(i int) string { return fmt.Sprintf("s-%d", i) }

// Run creates the objects: namespaces and nodes first, then everything else by c.Concurrency
// workers. It returns the count of objects created and of failures; failures after the
// namespaces are counted, not fatal, and the first is written to errOut.
func Run(ctx context.Context, cs kubernetes.Interface, c Config, errOut io.Writer) (int, int, error) {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	core := cs.CoreV1()
	created := 0
	for i := range c.Namespaces {
		if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns-%d", i)}}, metav1.CreateOptions{}); err != nil {
			return 0, 0, fmt.Errorf("creating namespace %d: %w", i, err)
		}
		created++
	}
	// Pods need their namespace's default service account, which a controller creates.
	for i := range c.Namespaces {
		for {
			if _, err := core.ServiceAccounts(fmt.Sprintf("ns-%d", i)).Get(ctx, "default", metav1.GetOptions{}); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return 0, 0, fmt.Errorf("waiting for the default service account of ns-%d: %w", i, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	payload := make([]byte, 256)
	type step struct {
		count int
		op    func(ctx context.Context, i int) error
	}
	qty := resource.MustParse("1Gi")
	steps := []step{
		{c.Nodes, func(ctx context.Context, i int) error {
			_, err := core.Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)}}, metav1.CreateOptions{})
			return err
		}},
		{c.Secrets, func(ctx context.Context, i int) error {
			_, err := core.Secrets(c.Namespace(i)).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: SecretName(i)}, Data: map[string][]byte{"k": payload}}, metav1.CreateOptions{})
			return err
		}},
		{c.PVs, func(ctx context.Context, i int) error {
			_, err := core.PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pv-%d", i)},
				Spec: corev1.PersistentVolumeSpec{
					Capacity: corev1.ResourceList{corev1.ResourceStorage: qty}, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: fmt.Sprintf("/srv/pv-%d", i)}},
				},
			}, metav1.CreateOptions{})
			return err
		}},
		{c.PVCs, func(ctx context.Context, i int) error {
			_, err := core.PersistentVolumeClaims(c.Namespace(i)).Create(ctx, &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pvc-%d", i)},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: qty}},
				},
			}, metav1.CreateOptions{})
			return err
		}},
		{c.Pods, func(ctx context.Context, i int) error {
			secret := SecretName(i % max(c.Secrets, 1))
			_, err := core.Pods(c.Namespace(i)).Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i)},
				Spec: corev1.PodSpec{
					NodeName:   fmt.Sprintf("node-%d", i%c.Nodes),
					Containers: []corev1.Container{{Name: "c", Image: "busybox", VolumeMounts: []corev1.VolumeMount{{Name: "s", MountPath: "/s"}}}},
					Volumes:    []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}},
				},
			}, metav1.CreateOptions{})
			return err
		}},
	}
	errs := 0
	var firstErr error
	for _, s := range steps {
		if s.count == 0 {
			continue
		}
		r := loadphase.Run(ctx, c.Concurrency, loadphase.Bound{Count: s.count, Limit: c.Timeout}, func(ctx context.Context, _ *mathrand.Rand, i int) error {
			return s.op(ctx, i)
		})
		created += len(r.Latencies) - r.Errors
		errs += r.Errors
		if firstErr == nil {
			firstErr = r.FirstError
		}
		if r.TimedOut || ctx.Err() != nil {
			return created, errs, fmt.Errorf("the populate did not finish in %v", c.Timeout)
		}
	}
	if errs > 0 {
		fmt.Fprintf(errOut, "%d creates failed; the first: %v\n", errs, firstErr)
	}
	return created, errs, nil
}
