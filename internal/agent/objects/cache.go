// Package objects gives the agent the secrets, configmaps and cluster trust bundles its pods
// mount, read from watches, so there is no polling: a change reaches the pods that use the object
// as an event. Where the server serves node.idplane.io nodereadables, one watch of those carries
// every secret and configmap the node may read; elsewhere (a stock kube-apiserver) each object is
// read through a watch of that one object (a list and watch with field selector metadata.name),
// which is what the Node authorizer allows a node.
package objects

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	nodev1alpha1 "github.com/idplane/idplane/api/node/v1alpha1"
	"github.com/idplane/idplane/internal/agent/clockwait"
	"github.com/idplane/idplane/internal/managedfields"
)

// Kind is the kind of object a pod reads through the cache.
type Kind string

const (
	Secret    Kind = "secret"
	ConfigMap Kind = "configmap"
)

// Ref names one secret or configmap.
type Ref struct {
	Kind      Kind
	Namespace string
	Name      string
}

func (r Ref) String() string { return string(r.Kind) + " " + r.Namespace + "/" + r.Name }

// resource is the API resource of r's kind.
func (r Ref) resource() string {
	if r.Kind == Secret {
		return "secrets"
	}
	return "configmaps"
}

// Cache reads the objects some pod uses, and tells the agent when one changes.
type Cache struct {
	// ctx bounds every watch: the cache stops with it.
	ctx    context.Context
	client kubernetes.Interface
	// changed is called with the users (pod keys) of an object that was added, changed or removed.
	changed func(users []string)
	// syncWait bounds how long a read waits for a new watch's first list.
	syncWait time.Duration
	// readables is the node's bulk watch; nil when each object has a watch of its own. It is set
	// once, by Open, and cleared under mu when the server refuses it (fallBack); readablesCtx
	// ends then.
	readables     cache.SharedIndexInformer
	readablesCtx  context.Context
	stopReadables context.CancelFunc

	mu sync.Mutex
	// users are the pods that read each object; uses, the objects each pod reads.
	users map[Ref]sets.Set[string]
	uses  map[string]sets.Set[Ref]
	// watches are the per-object watches, when there is no bulk watch.
	watches map[Ref]*objectWatch

	bundlesOnce sync.Once
	bundles     cache.SharedIndexInformer
	bundleUsers sets.Set[string]
}

type objectWatch struct {
	informer cache.SharedIndexInformer
	stop     context.CancelFunc
}

// Options choose how the cache reads secrets and configmaps.
type Options struct {
	// NodeName is the node whose nodereadables the bulk watch lists.
	NodeName string
	// Readables reads node.idplane.io nodereadables (NewReadablesClient); nil means one watch
	// per object.
	Readables Readables
	// PerObject keeps one watch per object even where the server offers the bulk watch, as a
	// stock kubelet does: for benchmarks comparing the two.
	PerObject bool
	// WarmUp is how long discovery refused (401, 403) is asked again, as a server that is
	// still loading its authorization policy refuses it; zero means DefaultWarmUp.
	WarmUp time.Duration
}

// DefaultWarmUp covers a server started with its fleet: it listens, and answers, before its
// authorizers have read their policy, and a node that took that first refusal for an answer would
// hold a watch per object, about twelve times the memory on the server (nodesim,
// "Memory per node, measured"), until it restarts.
const DefaultWarmUp = 30 * time.Second

// New returns an empty cache with one watch per object, whose watches run until ctx ends;
// changed gets the users of an object whenever it changes.
func New(ctx context.Context, client kubernetes.Interface, changed func(users []string)) *Cache {
	return &Cache{
		ctx: ctx, client: client, changed: changed, syncWait: 10 * time.Second,
		users: map[Ref]sets.Set[string]{}, uses: map[string]sets.Set[Ref]{}, watches: map[Ref]*objectWatch{},
		bundleUsers: sets.New[string](),
	}
}

// Open returns a cache that reads every object through one watch of the node's nodereadables
// when the server serves them and o allows it, and otherwise as New does. Discovery refused for
// good also means one watch per object: any conformant server allows those. So does a server
// that lists the bulk watch in discovery and then refuses the node's list or watch (fallBack).
// Discovery that fails for a while (an overloaded or restarting server) is asked again until it
// answers: a fleet starting at once must not turn each node it delays into thirty watches.
func Open(ctx context.Context, client kubernetes.Interface, o Options, changed func(users []string)) *Cache {
	c := New(ctx, client, changed)
	logger := klog.FromContext(ctx)
	if o.PerObject || o.Readables == nil {
		logger.V(2).Info("Watching each secret and configmap on its own, as configured")
		return c
	}
	warmUp := o.WarmUp
	if warmUp <= 0 {
		warmUp = DefaultWarmUp
	}
	served, err := c.discoverReadables(ctx, client, warmUp)
	switch {
	case err != nil:
		logger.Info("Watching each secret and configmap on its own: discovery of the node's bulk watch failed", "err", err)
		return c
	case !served:
		logger.V(2).Info("Watching each secret and configmap on its own: the server does not serve " + nodev1alpha1.ResourceName)
		return c
	}
	c.readables = c.newReadablesInformer(o)
	c.readablesCtx, c.stopReadables = context.WithCancel(ctx)
	go c.readables.RunWithContext(c.readablesCtx)
	logger.V(2).Info("Watching the node's secrets and configmaps through " + nodev1alpha1.ResourceName)
	return c
}

// discoveryRetry spaces the questions to a server whose discovery fails for a while.
func discoveryRetry() wait.Backoff {
	return wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.5, Steps: math.MaxInt32, Cap: 30 * time.Second}
}

// discoverReadables asks discovery whether the bulk watch is served until the server answers:
// yes, no, or an error that will not go away by asking again. A refusal counts as an answer only
// once warmUp has passed since the first question.
func (c *Cache) discoverReadables(ctx context.Context, client kubernetes.Interface, warmUp time.Duration) (bool, error) {
	backoff := discoveryRetry()
	asked := time.Now()
	for {
		dctx, cancel := context.WithTimeout(ctx, c.syncWait)
		served, err := ServesReadables(dctx, client.Discovery())
		cancel()
		warming := refused(err) && time.Since(asked) < warmUp
		if err == nil || !(transient(err) || warming) || ctx.Err() != nil {
			return served, err
		}
		delay := backoff.Step()
		klog.FromContext(ctx).Info("Discovery of the node's bulk watch failed, asking again", "err", err, "retryIn", delay)
		if !clockwait.Sleep(ctx, clock.RealClock{}, delay) {
			return false, ctx.Err()
		}
	}
}

// transient tells an error worth asking again about (too many requests, a server error, no
// answer at all) from a refusal.
func transient(err error) bool {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return code == http.StatusTooManyRequests || code >= http.StatusInternalServerError
	}
	return true
}

// refused says whether the server refused the node discovery (401, 403).
func refused(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)
}

// Use records the objects user (a pod key) reads now: watches start for objects new to the cache
// and stop for objects no user reads any more. Use(user, nil, false) forgets the user.
func (c *Cache) Use(user string, refs []Ref, bundles bool) {
	want := sets.New(refs...)
	c.mu.Lock()
	defer c.mu.Unlock()
	had := c.uses[user]
	for r := range had.Difference(want) {
		c.releaseLocked(user, r)
	}
	for r := range want.Difference(had) {
		c.acquireLocked(user, r)
	}
	if want.Len() == 0 {
		delete(c.uses, user)
	} else {
		c.uses[user] = want
	}
	if bundles {
		c.bundleUsers.Insert(user)
	} else {
		c.bundleUsers.Delete(user)
	}
}

func (c *Cache) acquireLocked(user string, r Ref) {
	if users, ok := c.users[r]; ok {
		users.Insert(user)
		return
	}
	c.users[r] = sets.New(user)
	if c.readables != nil {
		return
	}
	c.startWatchLocked(r)
}

// startWatchLocked starts r's own watch.
func (c *Cache) startWatchLocked(r Ref) {
	ctx, stop := context.WithCancel(c.ctx)
	w := &objectWatch{informer: c.newInformer(r), stop: stop}
	_, err := w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.notify(r) },
		UpdateFunc: func(any, any) { c.notify(r) },
		DeleteFunc: func(any) { c.notify(r) },
	})
	if err != nil {
		// Only a stopped informer refuses handlers, and this one has not started.
		panic(fmt.Sprintf("watching %s: %v", r, err))
	}
	c.watches[r] = w
	go w.informer.RunWithContext(ctx)
}

func (c *Cache) releaseLocked(user string, r Ref) {
	users, ok := c.users[r]
	if !ok {
		return
	}
	users.Delete(user)
	if users.Len() > 0 {
		return
	}
	delete(c.users, r)
	if w, ok := c.watches[r]; ok {
		w.stop()
		delete(c.watches, r)
	}
}

func (c *Cache) notify(r Ref) {
	c.mu.Lock()
	users := c.users[r].UnsortedList()
	c.mu.Unlock()
	if len(users) > 0 {
		c.changed(users)
	}
}

// newInformer lists and watches one object by name: the only list a node may make of secrets
// and configmaps without the bulk watch.
func (c *Cache) newInformer(r Ref) cache.SharedIndexInformer {
	byName := fields.OneTermEqualSelector("metadata.name", r.Name).String()
	// No resync: the watch delivers every change, and the agent has nothing to correct.
	var i cache.SharedIndexInformer
	if r.Kind == Secret {
		i = cache.NewSharedIndexInformer(ListWatch(c.client.CoreV1().Secrets(r.Namespace), byName), &corev1.Secret{}, 0, cache.Indexers{})
	} else {
		i = cache.NewSharedIndexInformer(ListWatch(c.client.CoreV1().ConfigMaps(r.Namespace), byName), &corev1.ConfigMap{}, 0, cache.Indexers{})
	}
	// The agent reads data, never managed fields; a new informer takes a transform.
	_ = i.SetTransform(managedfields.Drop)
	return i
}

// newReadablesInformer lists and watches what the node may read, across namespaces, through
// the checks of checkedReadables.
func (c *Cache) newReadablesInformer(o Options) cache.SharedIndexInformer {
	onNode := fields.OneTermEqualSelector(nodev1alpha1.NodeNameField, o.NodeName).String()
	lw := ListWatch[*nodev1alpha1.NodeReadableList](checkedReadables{api: o.Readables, node: o.NodeName}, onNode)
	i := cache.NewSharedIndexInformer(lw, &nodev1alpha1.NodeReadable{}, 0, cache.Indexers{})
	_ = i.SetTransform(dropEmbeddedManagedFields)
	_ = i.SetWatchErrorHandlerWithContext(c.bulkWatchError)
	notify := c.notifyItem
	_, err := i.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: notify,
		UpdateFunc: func(old, obj any) {
			// A relist hands every item over again, at a new stream position; only a changed
			// object concerns its pods.
			o, ok1 := old.(*nodev1alpha1.NodeReadable)
			n, ok2 := obj.(*nodev1alpha1.NodeReadable)
			if ok1 && ok2 && readableVersion(o) != "" && readableVersion(o) == readableVersion(n) {
				return
			}
			notify(obj)
		},
		DeleteFunc: notify,
	})
	if err != nil {
		panic(fmt.Sprintf("watching %s: %v", nodev1alpha1.ResourceName, err))
	}
	return i
}

// ListerWatcher is the part of a typed client a ListWatch needs.
type ListerWatcher[L runtime.Object] interface {
	List(context.Context, metav1.ListOptions) (L, error)
	Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
}

// ListWatch lists and watches through api, with fieldSelector when it is not empty.
func ListWatch[L runtime.Object](api ListerWatcher[L], fieldSelector string) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = fieldSelector
			return api.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = fieldSelector
			return api.Watch(ctx, o)
		},
	}
}

// NodeListWatch lists and watches through api the objects whose spec.nodeName is node, as a
// list then a watch rather than one watch-list. The server indexes these objects by node, so
// the list reads only the node's own; a watch-list's initial events are built from every object
// of the resource in the server's cache, and a fleet of nodes starting at once would each make
// the server walk all of them.
func NodeListWatch[L runtime.Object](api ListerWatcher[L], node string) cache.ListerWatcher {
	return listThenWatch{ListWatch(api, fields.OneTermEqualSelector("spec.nodeName", node).String())}
}

// listThenWatch tells client-go's reflector not to use a watch-list.
type listThenWatch struct{ *cache.ListWatch }

func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }

// Secret returns a secret a user registered with Use, from its watch; NotFound when it does not exist.
func (c *Cache) Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	obj, err := c.get(ctx, Ref{Secret, namespace, name})
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Secret), nil
}

// ConfigMap returns a configmap a user registered with Use, from its watch; NotFound when it does not exist.
func (c *Cache) ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	obj, err := c.get(ctx, Ref{ConfigMap, namespace, name})
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.ConfigMap), nil
}

func (c *Cache) get(ctx context.Context, r Ref) (runtime.Object, error) {
	c.mu.Lock()
	_, registered := c.users[r]
	w := c.watches[r]
	bulk := c.readables
	c.mu.Unlock()
	if !registered {
		return nil, fmt.Errorf("reading %s: no pod on this node registered it", r)
	}
	if bulk != nil {
		return c.readable(ctx, bulk, r)
	}
	if !c.waitSynced(ctx, w.informer) {
		return nil, fmt.Errorf("reading %s: its watch has not started yet (is the pod known to the server's node authorizer?)", r)
	}
	obj, exists, err := w.informer.GetStore().GetByKey(r.Namespace + "/" + r.Name)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", r, err)
	}
	if !exists {
		return nil, apierrors.NewNotFound(corev1.Resource(r.resource()), r.Name)
	}
	return obj.(runtime.Object), nil
}

// readable reads r from the node's bulk watch. An object the stream does not hold is read with a
// plain GET: the stream holds an object only once the Node authorizer lets the node read it, so
// a new pod's object can be missing from it for a moment, and the GET tells that (Forbidden:
// not readable yet, retried as a per-object watch still refused) from an object that does not
// exist (NotFound, which an optional source skips). The stream's event for the object, when it
// comes, tells the object's pods again.
func (c *Cache) readable(ctx context.Context, bulk cache.SharedIndexInformer, r Ref) (runtime.Object, error) {
	if !c.waitBulkSynced(ctx, bulk) {
		if c.fellBack() && ctx.Err() == nil {
			// The server refused the bulk watch meanwhile: r has a watch of its own now.
			return c.get(ctx, r)
		}
		return nil, fmt.Errorf("reading %s: the node's %s watch has not started yet", r, nodev1alpha1.ResourceName)
	}
	obj, exists, err := bulk.GetStore().GetByKey(readableKey(r))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", r, err)
	}
	if exists {
		return readableObject(obj.(*nodev1alpha1.NodeReadable)), nil
	}
	var got runtime.Object
	if r.Kind == Secret {
		got, err = c.client.CoreV1().Secrets(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
	} else {
		got, err = c.client.CoreV1().ConfigMaps(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, err
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("reading %s: the node may not read it yet (is the pod known to the server's node authorizer?): %w", r, err)
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", r, err)
	}
	obj, _ = managedfields.Drop(got)
	return obj.(runtime.Object), nil
}

// waitSynced waits, at most syncWait, for informer's first list.
func (c *Cache) waitSynced(ctx context.Context, informer cache.SharedIndexInformer) bool {
	if informer.HasSynced() {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, c.syncWait)
	defer cancel()
	return cache.WaitForCacheSync(ctx.Done(), informer.HasSynced)
}

// ClusterTrustBundles returns the PEM of the bundles a clusterTrustBundle projection selects, in
// a stable order with duplicate certificates dropped; NotFound when none match. All bundles are
// watched (a node may list them), from the first call on.
func (c *Cache) ClusterTrustBundles(ctx context.Context, source *corev1.ClusterTrustBundleProjection) ([]byte, error) {
	informer := c.bundleInformer()
	if !c.waitSynced(ctx, informer) {
		return nil, fmt.Errorf("reading cluster trust bundles: the watch has not started yet")
	}
	var bundles []*certificatesv1.ClusterTrustBundle
	for _, obj := range informer.GetStore().List() {
		bundles = append(bundles, obj.(*certificatesv1.ClusterTrustBundle))
	}
	pem, err := SelectBundles(bundles, source)
	if err != nil {
		return nil, err
	}
	return pem, nil
}

func (c *Cache) bundleInformer() cache.SharedIndexInformer {
	c.bundlesOnce.Do(func() {
		c.bundles = cache.NewSharedIndexInformer(ListWatch(c.client.CertificatesV1().ClusterTrustBundles(), ""),
			&certificatesv1.ClusterTrustBundle{}, 0, cache.Indexers{})
		_ = c.bundles.SetTransform(managedfields.Drop)
		notify := func(any) {
			c.mu.Lock()
			users := c.bundleUsers.UnsortedList()
			c.mu.Unlock()
			if len(users) > 0 {
				c.changed(users)
			}
		}
		_, err := c.bundles.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: notify, UpdateFunc: func(_, o any) { notify(o) }, DeleteFunc: notify,
		})
		if err != nil {
			panic(fmt.Sprintf("watching cluster trust bundles: %v", err))
		}
		go c.bundles.RunWithContext(c.ctx)
	})
	return c.bundles
}
