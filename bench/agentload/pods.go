package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/idplane/idplane/bench/internal/loadphase"
)

const (
	// filePoll is how often a waiting pod's token path is looked at.
	filePoll = 2 * time.Millisecond
	// serviceAccount is the account every pod runs as, one per namespace.
	serviceAccount = "load"
	// tokenVolume names the projected volume of pods that carry their own token lifetime.
	tokenVolume = "bench-token"
	// credentialBundle is the file of the pods' podCertificate source, with -pod-certificate.
	credentialBundle = "credentials.pem"
)

// workload creates the namespaces, service accounts and pods of one run.
type workload struct {
	cs       kubernetes.Interface
	nodeName string
	// podsDir is the agent's <root-dir>/pods.
	podsDir string
	// agentExited is closed when the agent dies, which ends every wait for a file.
	agentExited <-chan struct{}
	cfg         config
}

// prepareNamespaces creates the namespaces and their service accounts and waits until the
// root CA config map every token volume reads is published in each, so that no pod waits for it.
func (w *workload) prepareNamespaces(ctx context.Context) ([]string, error) {
	var names []string
	for i := range w.cfg.namespaces {
		name := fmt.Sprintf("agentload-%d", i)
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := w.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating namespace %s: %w", name, err)
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: serviceAccount}}
		if _, err := w.cs.CoreV1().ServiceAccounts(name).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating service account %s/%s: %w", name, serviceAccount, err)
		}
		names = append(names, name)
	}
	for _, ns := range names {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := w.cs.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
			return err == nil, nil
		})
		if err != nil {
			return nil, fmt.Errorf("config map kube-root-ca.crt not published in namespace %s: %w", ns, err)
		}
	}
	return names, nil
}

// podSpec is pod i, bound to the node at creation. With a token lifetime of its own it carries
// what the ServiceAccount admission plugin would add (token, ca.crt, namespace) under another
// volume name; otherwise the plugin adds its kube-api-access volume.
func (w *workload) podSpec(ns string, i int) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("load-%05d", i), Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName:           w.nodeName,
			ServiceAccountName: serviceAccount,
			Containers:         []corev1.Container{{Name: "app", Image: "busybox"}},
		},
	}
	if w.cfg.tokenSeconds == 0 {
		return pod
	}
	pod.Spec.AutomountServiceAccountToken = ptr.To(false)
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{
		Name: tokenVolume, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true,
	}}
	pod.Spec.Volumes = []corev1.Volume{{Name: tokenVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To(int64(w.cfg.tokenSeconds))}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
				Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
			}}}},
		},
	}}}}
	if w.cfg.podCertificate != "" {
		v := pod.Spec.Volumes[0].Projected
		v.Sources = append(v.Sources, corev1.VolumeProjection{PodCertificate: &corev1.PodCertificateProjection{
			SignerName: w.cfg.podCertificate, KeyType: "ECDSAP256", CredentialBundlePath: credentialBundle,
		}})
	}
	return pod
}

// tokenPath is where the agent writes the token of the created pod: the token file of its first
// projected volume with a service-account token, or the credential bundle of its first
// podCertificate source (a volume is written whole, once every source is ready).
func (w *workload) tokenPath(pod *corev1.Pod) (string, error) {
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.PodCertificate != nil {
				return filepath.Join(w.podsDir, string(pod.UID), "volumes", v.Name, s.PodCertificate.CredentialBundlePath), nil
			}
		}
		for _, s := range v.Projected.Sources {
			if s.ServiceAccountToken != nil {
				return filepath.Join(w.podsDir, string(pod.UID), "volumes", v.Name, s.ServiceAccountToken.Path), nil
			}
		}
	}
	return "", fmt.Errorf("pod %s/%s has no projected service-account token volume", pod.Namespace, pod.Name)
}

// rampResult is what creating the pods measured.
type rampResult struct {
	// latencies are, in ascending order, the times from a create's response to the token file,
	// of the pods whose file appeared.
	latencies  []time.Duration
	errors     int
	firstError error
	elapsed    time.Duration
}

// figures summarises the ramp; the agent's CPU and the requests are left to the caller.
func (r rampResult) figures() rampFigures {
	pods := len(r.latencies) + r.errors
	f := rampFigures{
		Pods:    pods,
		Errors:  r.errors,
		Seconds: r.elapsed.Seconds(),
		P50Ms:   ms(loadphase.Percentile(r.latencies, 50)),
		P90Ms:   ms(loadphase.Percentile(r.latencies, 90)),
		P99Ms:   ms(loadphase.Percentile(r.latencies, 99)),
		MaxMs:   ms(loadphase.Percentile(r.latencies, 100)),
	}
	if r.elapsed > 0 {
		f.PodsPerSecond = float64(pods) / r.elapsed.Seconds()
	}
	if r.firstError != nil {
		f.FirstError = r.firstError.Error()
	}
	return f
}

// createPods creates the pods at the configured rate, at most cfg.inflight of them waiting for
// their file at once, and times each from the create's response to its token file on disk.
func (w *workload) createPods(ctx context.Context, namespaces []string) (rampResult, error) {
	var (
		mu      sync.Mutex
		res     rampResult
		wg      sync.WaitGroup
		slots   = make(chan struct{}, w.cfg.inflight)
		begin   = time.Now()
		failure = func(err error) {
			mu.Lock()
			defer mu.Unlock()
			res.errors++
			if res.firstError == nil {
				res.firstError = err
			}
		}
	)
	interval := time.Duration(float64(time.Second) / w.cfg.rate)
	for i := range w.cfg.pods {
		if err := sleepUntil(ctx, begin.Add(time.Duration(i)*interval)); err != nil {
			break
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			d, err := w.createAndWait(ctx, w.podSpec(namespaces[i%len(namespaces)], i))
			if err != nil {
				failure(err)
				return
			}
			mu.Lock()
			res.latencies = append(res.latencies, d)
			mu.Unlock()
		})
	}
	wg.Wait()
	res.elapsed = time.Since(begin)
	slices.Sort(res.latencies)
	if err := ctx.Err(); err != nil {
		return res, err
	}
	select {
	case <-w.agentExited:
		return res, errors.New("the agent exited while pods were being created")
	default:
	}
	return res, nil
}

// createAndWait creates pod and returns how long after the create's response its token file
// appeared.
func (w *workload) createAndWait(ctx context.Context, pod *corev1.Pod) (time.Duration, error) {
	created, err := w.cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return 0, fmt.Errorf("creating pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	begin := time.Now()
	path, err := w.tokenPath(created)
	if err != nil {
		return 0, err
	}
	tick := time.NewTicker(filePoll)
	defer tick.Stop()
	deadline := time.NewTimer(w.cfg.fileTimeout)
	defer deadline.Stop()
	for {
		if _, err := os.Stat(path); err == nil {
			return time.Since(begin), nil
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return 0, fmt.Errorf("no token file for pod %s/%s within %s of its creation", pod.Namespace, pod.Name, w.cfg.fileTimeout)
		case <-w.agentExited:
			return 0, errors.New("the agent exited")
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// credentialsReady counts the node's pods whose CredentialsReady condition is True.
func (w *workload) credentialsReady(ctx context.Context, namespaces []string) (int, error) {
	n := 0
	for _, ns := range namespaces {
		list, err := w.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, fmt.Errorf("listing pods in %s: %w", ns, err)
		}
		for _, p := range list.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == "CredentialsReady" && c.Status == corev1.ConditionTrue {
					n++
				}
			}
		}
	}
	return n, nil
}

func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
