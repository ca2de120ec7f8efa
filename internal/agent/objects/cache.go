// Package objects gives the agent the secrets, configmaps and cluster trust bundles its pods
// mount. Each secret and configmap is read through a watch of that one object (a list and watch
// with field selector metadata.name), which is what the Node authorizer allows a node, and means
// no polling: a change reaches the pods that use the object as an event.
package objects

import (
	"context"
	"fmt"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

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

// Cache holds a watch for every object some pod uses, and tells the agent when one changes.
type Cache struct {
	// ctx bounds every watch: the cache stops with it.
	ctx    context.Context
	client kubernetes.Interface
	// changed is called with the users (pod keys) of an object that was added, changed or removed.
	changed func(users []string)
	// syncWait bounds how long a read waits for a new watch's first list.
	syncWait time.Duration

	mu      sync.Mutex
	watches map[Ref]*objectWatch
	uses    map[string]sets.Set[Ref]

	bundlesOnce sync.Once
	bundles     cache.SharedIndexInformer
	bundleUsers sets.Set[string]
}

type objectWatch struct {
	informer cache.SharedIndexInformer
	stop     context.CancelFunc
	users    sets.Set[string]
}

// New returns an empty cache whose watches run until ctx ends; changed gets the users of an
// object whenever it changes.
func New(ctx context.Context, client kubernetes.Interface, changed func(users []string)) *Cache {
	return &Cache{
		ctx: ctx, client: client, changed: changed, syncWait: 10 * time.Second,
		watches: map[Ref]*objectWatch{}, uses: map[string]sets.Set[Ref]{}, bundleUsers: sets.New[string](),
	}
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
	if w, ok := c.watches[r]; ok {
		w.users.Insert(user)
		return
	}
	ctx, stop := context.WithCancel(c.ctx)
	w := &objectWatch{informer: c.newInformer(r), stop: stop, users: sets.New(user)}
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
	w, ok := c.watches[r]
	if !ok {
		return
	}
	w.users.Delete(user)
	if w.users.Len() == 0 {
		w.stop()
		delete(c.watches, r)
	}
}

func (c *Cache) notify(r Ref) {
	c.mu.Lock()
	var users []string
	if w, ok := c.watches[r]; ok {
		users = w.users.UnsortedList()
	}
	c.mu.Unlock()
	if len(users) > 0 {
		c.changed(users)
	}
}

// newInformer lists and watches one object by name: the only list a node may make of secrets
// and configmaps.
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
	w, ok := c.watches[r]
	c.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("reading %s: no pod on this node registered it", r)
	}
	if !w.informer.HasSynced() {
		ctx, cancel := context.WithTimeout(ctx, c.syncWait)
		defer cancel()
		if !cache.WaitForCacheSync(ctx.Done(), w.informer.HasSynced) {
			return nil, fmt.Errorf("reading %s: its watch has not started yet (is the pod known to the server's node authorizer?)", r)
		}
	}
	obj, exists, err := w.informer.GetStore().GetByKey(r.Namespace + "/" + r.Name)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", r, err)
	}
	if !exists {
		resource := "secrets"
		if r.Kind == ConfigMap {
			resource = "configmaps"
		}
		return nil, apierrors.NewNotFound(corev1.Resource(resource), r.Name)
	}
	return obj.(runtime.Object), nil
}

// ClusterTrustBundles returns the PEM of the bundles a clusterTrustBundle projection selects, in
// a stable order with duplicate certificates dropped; NotFound when none match. All bundles are
// watched (a node may list them), from the first call on.
func (c *Cache) ClusterTrustBundles(ctx context.Context, source *corev1.ClusterTrustBundleProjection) ([]byte, error) {
	informer := c.bundleInformer()
	if !informer.HasSynced() {
		ctx, cancel := context.WithTimeout(ctx, c.syncWait)
		defer cancel()
		if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
			return nil, fmt.Errorf("reading cluster trust bundles: the watch has not started yet")
		}
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
