// Package pods keeps the agent's pods on disk: for every pod bound to the node it writes the
// contents of its secret, configMap, downwardAPI and projected volumes and one OCI runtime spec
// per container under DIR/pods/<uid>/, says on the pod's status whether its credentials are
// ready, and removes everything once the pod goes.
package pods

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/idplane/idplane/internal/agent/atomicwriter"
	"github.com/idplane/idplane/internal/agent/objects"
	"github.com/idplane/idplane/internal/agent/podcerts"
	"github.com/idplane/idplane/internal/agent/runtimespec"
	"github.com/idplane/idplane/internal/agent/tokens"
	"github.com/idplane/idplane/internal/agent/volumes"
	"github.com/idplane/idplane/internal/managedfields"
	"github.com/idplane/idplane/internal/podwalk"
)

// ConditionCredentialsReady is the pod condition saying whether the agent wrote all the pod's
// volumes.
const ConditionCredentialsReady corev1.PodConditionType = "CredentialsReady"

// Config is what the manager needs.
type Config struct {
	NodeName string
	// RootDir is the agent's directory; pods live under RootDir/pods.
	RootDir  string
	Client   kubernetes.Interface
	Recorder record.EventRecorder
	Clock    clock.WithTicker
	// Workers is how many pods sync at once.
	Workers int
	// ServiceEnv are the variables every container gets for the kubernetes Service
	// (runtimespec.KubernetesServiceEnv).
	ServiceEnv []corev1.EnvVar
	// Objects choose how secrets and configmaps are read (objects.Open); the zero value is one
	// watch per object.
	Objects objects.Options
}

// Manager syncs the node's pods to disk.
type Manager struct {
	c       Config
	podsDir string
	tokens  *tokens.Manager
	objects *objects.Cache
	certs   *podcerts.Manager

	informer cache.SharedIndexInformer
	lister   corelisters.PodLister
	queue    workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// written maps a pod key to the UID whose directory the manager keeps.
	written map[string]types.UID
	// adopted are the pods whose tokens on disk were offered to the token manager.
	adopted map[types.UID]bool
	// reported is the CredentialsReady condition last written per pod: the cached pod may not
	// show it yet when the pod syncs again.
	reported map[types.UID]corev1.PodCondition
	// announced is the outcome last logged per pod (see announce).
	announced map[types.UID]string
}

// New returns a manager; Run starts it.
func New(c Config) *Manager {
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Workers <= 0 {
		c.Workers = 8
	}
	m := &Manager{
		c:         c,
		podsDir:   filepath.Join(c.RootDir, "pods"),
		tokens:    tokens.New(tokenRequester{c.Client}, c.Clock),
		written:   map[string]types.UID{},
		adopted:   map[types.UID]bool{},
		reported:  map[types.UID]corev1.PodCondition{},
		announced: map[types.UID]string{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 2*time.Minute),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "agent-pods", Clock: c.Clock}),
	}
	m.informer = cache.NewSharedIndexInformer(objects.NodeListWatch(c.Client.CoreV1().Pods(metav1.NamespaceAll), c.NodeName),
		&corev1.Pod{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	// The agent never reads managed fields; status updates made from cached pods without them
	// keep the server's.
	_ = m.informer.SetTransform(managedfields.Drop)
	m.lister = corelisters.NewPodLister(m.informer.GetIndexer())
	return m
}

// Run syncs pods until ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	defer m.queue.ShutDown()
	if err := os.MkdirAll(m.podsDir, 0o750); err != nil {
		return fmt.Errorf("creating %s: %w", m.podsDir, err)
	}
	certs, err := m.startPodCertificates(ctx)
	if err != nil {
		return err
	}
	defer certs.Close()
	m.objects = objects.Open(ctx, m.c.Client, m.c.Objects, func(users []string) {
		for _, u := range users {
			m.queue.Add(u)
		}
	})
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			m.queue.Add(key)
		}
	}
	_, err = m.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	})
	if err != nil {
		return fmt.Errorf("watching pods: %w", err)
	}
	go m.informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), m.informer.HasSynced) {
		return ctx.Err()
	}
	m.removeOrphans(ctx)
	var wg sync.WaitGroup
	for range m.c.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m.processNext(ctx) {
			}
		}()
	}
	<-ctx.Done()
	m.queue.ShutDown()
	wg.Wait()
	return nil
}

func (m *Manager) processNext(ctx context.Context) bool {
	key, quit := m.queue.Get()
	if quit {
		return false
	}
	defer m.queue.Done(key)
	next, err := m.sync(ctx, key)
	switch {
	case err != nil:
		// A pod whose files wait for something was announced once; its retries are detail.
		if isProblem(err) {
			klog.FromContext(ctx).V(2).Info("Pod volumes not written yet, retrying", "pod", key, "err", err)
		} else {
			klog.FromContext(ctx).Error(err, "Syncing pod", "pod", key)
		}
		m.queue.AddRateLimited(key)
	default:
		m.queue.Forget(key)
		if !next.IsZero() {
			m.queue.AddAfter(key, next.Sub(m.c.Clock.Now()))
		}
	}
	return true
}

// removeOrphans removes the directories of pods that went while the agent was not running: a
// restarted agent keeps what is still wanted and drops the rest.
func (m *Manager) removeOrphans(ctx context.Context) {
	entries, err := os.ReadDir(m.podsDir)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Listing pod directories")
		return
	}
	live := map[types.UID]string{}
	pods, _ := m.lister.List(labels.Everything())
	for _, p := range pods {
		live[p.UID] = p.Namespace + "/" + p.Name
	}
	liveUIDs := make(map[types.UID]bool, len(live))
	for uid := range live {
		liveUIDs[uid] = true
	}
	if err := m.certs.Prune(liveUIDs); err != nil {
		klog.FromContext(ctx).Error(err, "Removing the pod certificate state of pods that are gone")
	}
	for _, e := range entries {
		uid := types.UID(e.Name())
		if key, ok := live[uid]; ok {
			m.mu.Lock()
			m.written[key] = uid
			m.mu.Unlock()
			continue
		}
		if err := m.removePodDir(uid); err != nil {
			klog.FromContext(ctx).Error(err, "Removing the directory of a pod that is gone", "uid", uid)
		}
	}
}

// sync brings one pod's directory in step with the pod; it returns when the pod must be synced
// again (a token to refresh), or zero.
func (m *Manager) sync(ctx context.Context, key string) (time.Time, error) {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return time.Time{}, nil
	}
	pod, err := m.lister.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return time.Time{}, m.forget(key)
	}
	if err != nil {
		return time.Time{}, err
	}
	m.mu.Lock()
	old, had := m.written[key]
	m.mu.Unlock()
	if had && old != pod.UID {
		// The pod was deleted and created again under the same name.
		if err := m.forget(key); err != nil {
			return time.Time{}, err
		}
	}
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return time.Time{}, m.finish(ctx, key, pod)
	}
	m.mu.Lock()
	m.written[key] = pod.UID
	m.mu.Unlock()

	m.objects.Use(key, objects.PodRefs(pod), usesTrustBundles(pod))
	problem := m.writePod(ctx, pod)
	if err := m.setCondition(ctx, pod, problem); err != nil {
		return time.Time{}, err
	}
	m.announce(ctx, pod, problem)
	if problem != nil {
		if problem.event {
			m.c.Recorder.Event(pod, corev1.EventTypeWarning, problem.reason, problem.message)
		}
		return time.Time{}, problem
	}
	return earliest(m.tokens.NextRefresh(pod.UID), m.certs.NextRefresh(pod.UID)), nil
}

// problem is why a pod's credentials are not ready.
type problem struct {
	reason, message string
	// event: the problem is worth an Event at every sync (not merely waiting for an object to
	// appear).
	event bool
	// missing: a secret or config map the pod needs does not exist; announce makes it one
	// FailedMount event.
	missing bool
}

func (p *problem) Error() string { return p.reason + ": " + p.message }

// writePod writes every volume the agent handles and the containers' runtime specs; it returns
// the first problem, after trying every volume, so one bad volume does not hold back the others.
func (m *Manager) writePod(ctx context.Context, pod *corev1.Pod) *problem {
	podDir := filepath.Join(m.podsDir, string(pod.UID))
	m.adoptTokens(pod, podDir)
	src := sources{Cache: m.objects, tokens: m.tokens, certs: m.certs}
	volumeDirs := map[string]string{}
	var first *problem
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		dir := filepath.Join(podDir, "volumes", v.Name)
		switch {
		case v.HostPath != nil:
			// The runtime spec mounts the host's own path.
			continue
		case v.EmptyDir != nil:
			// Any of the pod's users may write to it, as to the kubelet's emptyDir.
			err := os.MkdirAll(dir, 0o777)
			if err == nil {
				err = os.Chmod(dir, 0o777)
			}
			if err != nil && first == nil {
				first = &problem{reason: "FailedMount", message: fmt.Sprintf("volume %q: creating its directory: %v", v.Name, err), event: true}
			}
		}
		volumeDirs[v.Name] = dir
		if !volumes.Supported(v) {
			continue
		}
		if p := m.writeVolume(ctx, pod, v, dir, src); p != nil && first == nil {
			first = p
		}
	}
	if first != nil {
		return first
	}
	for c := range podwalk.Containers(&pod.Spec) {
		env := podEnv{ctx: ctx, objects: m.objects, pod: pod, container: c.Container}
		if err := m.writeSpec(pod, c.Container, podDir, volumeDirs, env); err != nil {
			// A secret or config map the environment names that is not there yet is waited
			// for, like a volume's; its watch brings the pod back when it comes.
			return &problem{reason: "RuntimeSpecFailed", message: fmt.Sprintf("container %q: %v", c.Name, err), event: !apierrors.IsNotFound(err)}
		}
	}
	return nil
}

// adoptTokens offers the token manager, once per pod, the tokens an earlier run of the agent
// wrote: a restarted agent keeps tokens that are not due for refresh instead of rewriting them.
func (m *Manager) adoptTokens(pod *corev1.Pod, podDir string) {
	m.mu.Lock()
	done := m.adopted[pod.UID]
	m.adopted[pod.UID] = true
	m.mu.Unlock()
	if done {
		return
	}
	for p := range podwalk.Projections(&pod.Spec) {
		if p.ServiceAccountToken == nil {
			continue
		}
		path, err := atomicwriter.ValidatePath(p.ServiceAccountToken.Path)
		if err != nil {
			continue
		}
		// Read inside the volume directory only, whatever links were planted in it.
		root, err := os.OpenRoot(filepath.Join(podDir, "volumes", p.Volume.Name))
		if err != nil {
			continue
		}
		data, err := root.ReadFile(path)
		root.Close()
		if err == nil {
			m.tokens.Adopt(pod, p.ServiceAccountToken, data)
		}
	}
}

// maxReasonsShown is how many findings a VolumeTampered event names.
const maxReasonsShown = 3

// writeVolume writes one volume's files, or says why it cannot.
func (m *Manager) writeVolume(ctx context.Context, pod *corev1.Pod, v *corev1.Volume, dir string, src sources) *problem {
	files, err := volumes.Build(ctx, pod, v, src)
	if err != nil {
		// The builder's errors name the pod and the volume.
		if volumes.IsNotReady(err) {
			return &problem{reason: "VolumeNotReady", message: err.Error(), missing: missingObject(err)}
		}
		return &problem{reason: "FailedMount", message: err.Error(), event: true}
	}
	w, err := atomicwriter.New(dir, fmt.Sprintf("%s/%s volume %s", pod.Namespace, pod.Name, v.Name))
	if err != nil {
		return &problem{reason: "FailedMount", message: fmt.Sprintf("volume %q: %v", v.Name, err), event: true}
	}
	w.OnRepair = func(reasons []string) {
		// Someone with access to the node's disk, or a container from before its mount was
		// read-only, changed the volume; it is written again from the API, and said so.
		shown := reasons
		if len(shown) > maxReasonsShown {
			// Whoever planted entries chooses how many; the event stays small.
			shown = append(shown[:maxReasonsShown:maxReasonsShown], fmt.Sprintf("and %d more", len(reasons)-maxReasonsShown))
		}
		klog.FromContext(ctx).Info("Rewriting a tampered volume", "pod", klog.KObj(pod), "volume", v.Name, "found", shown)
		m.c.Recorder.Eventf(pod, corev1.EventTypeWarning, "VolumeTampered",
			"volume %q held entries the agent did not write (%s); rewritten from the API", v.Name, strings.Join(shown, "; "))
	}
	changed, err := w.Write(files)
	if err != nil {
		return &problem{reason: "FailedMount", message: fmt.Sprintf("volume %q: %v", v.Name, err), event: true}
	}
	if changed {
		klog.FromContext(ctx).V(2).Info("Wrote volume", "pod", klog.KObj(pod), "volume", v.Name, "files", len(files))
	}
	return nil
}

// writeSpec writes one container's config.json, unless it already holds the same spec.
func (m *Manager) writeSpec(pod *corev1.Pod, c *corev1.Container, podDir string, volumeDirs map[string]string, env runtimespec.EnvSource) error {
	spec, err := runtimespec.Spec(runtimespec.Params{Pod: pod, Container: c, VolumeDirs: volumeDirs, Env: env, ServiceEnv: m.c.ServiceEnv})
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding runtime spec: %w", err)
	}
	dir := filepath.Join(podDir, "containers", c.Name)
	path := filepath.Join(dir, "config.json")
	if old, err := os.ReadFile(path); err == nil && string(old) == string(data) {
		return nil
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, ".config.json.")
	if err != nil {
		return fmt.Errorf("writing runtime spec: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing runtime spec: %w", err)
	}
	if err := tmp.Chmod(0o640); err != nil {
		tmp.Close()
		return fmt.Errorf("writing runtime spec: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing runtime spec: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing runtime spec: %w", err)
	}
	return nil
}

// setCondition records on the pod's status whether its credentials are ready; it writes only
// when the condition changes.
func (m *Manager) setCondition(ctx context.Context, pod *corev1.Pod, p *problem) error {
	want := corev1.PodCondition{Type: ConditionCredentialsReady, Status: corev1.ConditionTrue}
	if p != nil {
		want.Status, want.Reason, want.Message = corev1.ConditionFalse, p.reason, p.message
	}
	same := func(c corev1.PodCondition) bool {
		return c.Type == want.Type && c.Status == want.Status && c.Reason == want.Reason && c.Message == want.Message
	}
	m.mu.Lock()
	last, ok := m.reported[pod.UID]
	m.mu.Unlock()
	if ok && same(last) {
		return nil
	}
	for _, c := range pod.Status.Conditions {
		if same(c) {
			return nil
		}
	}
	want.LastTransitionTime = metav1.NewTime(m.c.Clock.Now())
	// The UID makes the patch fail on a pod that was recreated under the same name.
	// A strategic merge patch merges the condition into the one of its type: a reason or message
	// left out would keep the last one (a True condition still saying why it was False), so an
	// empty one is sent as null, which removes it.
	orNull := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pod.UID},
		"status": map[string]any{"conditions": []map[string]any{{
			"type": want.Type, "status": want.Status, "lastTransitionTime": want.LastTransitionTime,
			"reason": orNull(want.Reason), "message": orNull(want.Message),
		}}},
	})
	if err != nil {
		return fmt.Errorf("encoding the %s condition: %w", want.Type, err)
	}
	_, err = m.c.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("setting the %s condition of pod %s/%s: %w", want.Type, pod.Namespace, pod.Name, err)
	}
	m.mu.Lock()
	m.reported[pod.UID] = want
	m.mu.Unlock()
	return nil
}

// finish removes a terminating or finished pod's files; a terminating pod is then deleted for
// good, since no container of it runs here to be stopped first.
func (m *Manager) finish(ctx context.Context, key string, pod *corev1.Pod) error {
	if err := m.forget(key); err != nil {
		return err
	}
	if err := m.removePodDir(pod.UID); err != nil {
		return err
	}
	if pod.DeletionTimestamp == nil {
		return nil
	}
	err := m.c.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64),
		Preconditions:      metav1.NewUIDPreconditions(string(pod.UID)),
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting terminated pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// forget drops what the manager keeps for a pod key: its directory, tokens and watches.
func (m *Manager) forget(key string) error {
	m.mu.Lock()
	uid, ok := m.written[key]
	delete(m.written, key)
	m.mu.Unlock()
	m.objects.Use(key, nil, false)
	if !ok {
		return nil
	}
	m.mu.Lock()
	delete(m.adopted, uid)
	delete(m.reported, uid)
	delete(m.announced, uid)
	m.mu.Unlock()
	m.tokens.Forget(uid)
	return errors.Join(m.certs.Forget(uid), m.removePodDir(uid))
}

func (m *Manager) removePodDir(uid types.UID) error {
	if uid == "" || strings.ContainsAny(string(uid), `/\`) || string(uid) == "." || string(uid) == ".." {
		return fmt.Errorf("refusing to remove the directory of pod UID %q", uid)
	}
	dir := filepath.Join(m.podsDir, string(uid))
	volumesDir := filepath.Join(dir, "volumes")
	entries, err := os.ReadDir(volumesDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing pod directory %s: %w", dir, err)
	}
	for _, e := range entries {
		if err := atomicwriter.Remove(filepath.Join(volumesDir, e.Name())); err != nil {
			return fmt.Errorf("removing pod directory %s: %w", dir, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing pod directory %s: %w", dir, err)
	}
	return nil
}

func usesTrustBundles(pod *corev1.Pod) bool {
	for r := range podwalk.References(pod) {
		if r.Kind == podwalk.ClusterTrustBundle {
			return true
		}
	}
	return false
}

// sources gives the volume builder the objects from the cache, tokens from the token manager
// and pod certificates from the certificate manager.
type sources struct {
	*objects.Cache
	tokens *tokens.Manager
	certs  *podcerts.Manager
}

func (s sources) ServiceAccountToken(ctx context.Context, pod *corev1.Pod, source *corev1.ServiceAccountTokenProjection) ([]byte, error) {
	return s.tokens.Token(ctx, pod, source)
}

// tokenRequester asks the API server for tokens through the node's client.
type tokenRequester struct{ client kubernetes.Interface }

func (r tokenRequester) CreateToken(ctx context.Context, namespace, serviceAccount string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	return r.client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, serviceAccount, req, metav1.CreateOptions{})
}

// podEnv resolves a container's valueFrom and envFrom from the objects its pod registered and
// from the pod itself, as the kubelet does; the node's allocatable resources are not known to
// the agent, so a resourceFieldRef to a limit the container does not set is refused.
type podEnv struct {
	ctx       context.Context
	objects   *objects.Cache
	pod       *corev1.Pod
	container *corev1.Container
}

func (e podEnv) Value(src *corev1.EnvVarSource) (string, bool, error) {
	switch {
	case src.FieldRef != nil:
		v, err := volumes.EnvFieldValue(e.pod, src.FieldRef)
		return v, err == nil, err
	case src.ResourceFieldRef != nil:
		v, err := volumes.ResourceValue(e.pod, e.container, src.ResourceFieldRef, func() (corev1.ResourceList, error) {
			return nil, errors.New("the agent does not know the node's allocatable resources")
		})
		return v, err == nil, err
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		obj, err := e.objects.Secret(e.ctx, e.pod.Namespace, ref.Name)
		if err != nil {
			return optionalMissing(err, ref.Optional, fmt.Sprintf("secret %q", ref.Name))
		}
		v, ok := obj.Data[ref.Key]
		if !ok {
			return keyMissing(ref.Optional, "secrets", ref.Name, ref.Key)
		}
		return string(v), true, nil
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		obj, err := e.objects.ConfigMap(e.ctx, e.pod.Namespace, ref.Name)
		if err != nil {
			return optionalMissing(err, ref.Optional, fmt.Sprintf("configMap %q", ref.Name))
		}
		v, ok := obj.Data[ref.Key]
		if !ok {
			return keyMissing(ref.Optional, "configmaps", ref.Name, ref.Key)
		}
		return v, true, nil
	}
	return "", false, errors.New("valueFrom names no source the agent knows")
}

func (e podEnv) Object(src *corev1.EnvFromSource) (map[string]string, bool, error) {
	switch {
	case src.SecretRef != nil:
		obj, err := e.objects.Secret(e.ctx, e.pod.Namespace, src.SecretRef.Name)
		if err != nil {
			_, ok, err := optionalMissing(err, src.SecretRef.Optional, fmt.Sprintf("secret %q", src.SecretRef.Name))
			return nil, ok, err
		}
		data := make(map[string]string, len(obj.Data))
		for k, v := range obj.Data {
			data[k] = string(v)
		}
		return data, true, nil
	case src.ConfigMapRef != nil:
		obj, err := e.objects.ConfigMap(e.ctx, e.pod.Namespace, src.ConfigMapRef.Name)
		if err != nil {
			_, ok, err := optionalMissing(err, src.ConfigMapRef.Optional, fmt.Sprintf("configMap %q", src.ConfigMapRef.Name))
			return nil, ok, err
		}
		return obj.Data, true, nil
	}
	return nil, false, errors.New("envFrom names no source the agent knows")
}

// optionalMissing turns a failed read into "left out" when the object is optional and does not
// exist, and into an error naming it otherwise.
func optionalMissing(err error, optional *bool, what string) (string, bool, error) {
	if apierrors.IsNotFound(err) && optional != nil && *optional {
		return "", false, nil
	}
	return "", false, fmt.Errorf("%s: %w", what, err)
}

func keyMissing(optional *bool, resource, name, key string) (string, bool, error) {
	if optional != nil && *optional {
		return "", false, nil
	}
	return "", false, apierrors.NewNotFound(corev1.Resource(resource), fmt.Sprintf("%s (key %q)", name, key))
}
