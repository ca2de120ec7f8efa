package objects

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	nodev1alpha1 "github.com/idplane/idplane/api/node/v1alpha1"
)

// Readables lists and watches nodereadables: what NewReadablesClient returns, and what a test
// fakes.
type Readables = ListerWatcher[*nodev1alpha1.NodeReadableList]

// readablesClient reads node.idplane.io/v1alpha1 nodereadables with a REST client: no generated
// clientset exists for the group.
type readablesClient struct {
	rest  rest.Interface
	codec runtime.ParameterCodec
}

// NewReadablesClient returns a client for nodereadables that authenticates with config and
// sends its requests through httpClient (nil builds one from config), so it can share the
// node's other clients' connection.
func NewReadablesClient(config *rest.Config, httpClient *http.Client) (Readables, error) {
	scheme := runtime.NewScheme()
	if err := nodev1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("registering %s: %w", nodev1alpha1.SchemeGroupVersion, err)
	}
	c := rest.CopyConfig(config)
	c.GroupVersion = &nodev1alpha1.SchemeGroupVersion
	c.APIPath = "/apis"
	// The types have no protobuf form.
	c.ContentType = runtime.ContentTypeJSON
	c.AcceptContentTypes = runtime.ContentTypeJSON
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	var (
		rc  *rest.RESTClient
		err error
	)
	if httpClient != nil {
		rc, err = rest.RESTClientForConfigAndClient(c, httpClient)
	} else {
		rc, err = rest.RESTClientFor(c)
	}
	if err != nil {
		return nil, fmt.Errorf("building the %s client: %w", nodev1alpha1.SchemeGroupVersion, err)
	}
	return &readablesClient{rest: rc, codec: runtime.NewParameterCodec(scheme)}, nil
}

func (c *readablesClient) List(ctx context.Context, o metav1.ListOptions) (*nodev1alpha1.NodeReadableList, error) {
	list := &nodev1alpha1.NodeReadableList{}
	err := c.rest.Get().Resource(nodev1alpha1.ResourceName).VersionedParams(&o, c.codec).
		Timeout(timeoutOf(o)).Do(ctx).Into(list)
	if err != nil {
		return nil, err
	}
	return list, nil
}

func (c *readablesClient) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	o.Watch = true
	return c.rest.Get().Resource(nodev1alpha1.ResourceName).VersionedParams(&o, c.codec).
		Timeout(timeoutOf(o)).Watch(ctx)
}

// timeoutOf is the client-side bound a typed client gives a list or watch: the server's own
// timeout, when the caller set one.
func timeoutOf(o metav1.ListOptions) time.Duration {
	if o.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*o.TimeoutSeconds) * time.Second
}

// ServesReadables reports whether the server serves nodereadables with the verbs the cache
// needs. A server that does not know the group answers NotFound, which is "no", not an error.
func ServesReadables(ctx context.Context, d discovery.ServerResourcesInterfaceWithContext) (bool, error) {
	gv := nodev1alpha1.SchemeGroupVersion.String()
	list, err := d.ServerResourcesForGroupVersionWithContext(ctx, gv)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", gv, err)
	}
	for _, r := range list.APIResources {
		if r.Name == nodev1alpha1.ResourceName {
			return slices.Contains(r.Verbs, "list") && slices.Contains(r.Verbs, "watch"), nil
		}
	}
	return false, nil
}

// checkedReadables passes on only the items that are what they say: one object for the node the
// cache asked about, named as its item. An item that is not is dropped with a log line, and a
// change that turns an item into one is a deletion of it, so nothing untrusted stays in the cache.
type checkedReadables struct {
	api  Readables
	node string
}

func (c checkedReadables) List(ctx context.Context, o metav1.ListOptions) (*nodev1alpha1.NodeReadableList, error) {
	list, err := c.api.List(ctx, o)
	if err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx)
	kept := list.Items[:0]
	for i := range list.Items {
		if err := checkReadable(&list.Items[i], c.node); err != nil {
			logger.Error(err, "Dropping a nodereadable the server listed", "nodereadable", klog.KObj(&list.Items[i]))
			continue
		}
		kept = append(kept, list.Items[i])
	}
	list.Items = kept
	return list, nil
}

func (c checkedReadables) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w, err := c.api.Watch(ctx, o)
	if err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx)
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		item, ok := e.Object.(*nodev1alpha1.NodeReadable)
		if !ok || (e.Type != watch.Added && e.Type != watch.Modified) {
			// Bookmarks, errors and deletions: a deletion removes whatever the cache holds
			// under the item's namespace and name, whatever the object inside.
			return e, true
		}
		if err := checkReadable(item, c.node); err != nil {
			logger.Error(err, "Dropping a nodereadable the server sent", "event", e.Type, "nodereadable", klog.KObj(item))
			return watch.Event{Type: watch.Deleted, Object: &nodev1alpha1.NodeReadable{ObjectMeta: metav1.ObjectMeta{
				Namespace: item.Namespace, Name: item.Name, ResourceVersion: item.ResourceVersion,
			}}}, true
		}
		return e, true
	}), nil
}

// checkReadable says why item cannot be trusted as one of node's readable objects, or nil.
func checkReadable(item *nodev1alpha1.NodeReadable, node string) error {
	if item.NodeName != node {
		return fmt.Errorf("it is for node %q, not %q", item.NodeName, node)
	}
	var (
		prefix string
		meta   *metav1.ObjectMeta
	)
	switch {
	case item.Secret != nil && item.ConfigMap != nil:
		return errors.New("it holds both a secret and a configmap")
	case item.Secret != nil:
		prefix, meta = nodev1alpha1.SecretPrefix, &item.Secret.ObjectMeta
	case item.ConfigMap != nil:
		prefix, meta = nodev1alpha1.ConfigMapPrefix, &item.ConfigMap.ObjectMeta
	default:
		return errors.New("it holds neither a secret nor a configmap")
	}
	if meta.Namespace != item.Namespace || prefix+meta.Name != item.Name || meta.Name == "" {
		return fmt.Errorf("its object %s/%s does not match the item's name %s/%s", meta.Namespace, meta.Name, item.Namespace, item.Name)
	}
	return nil
}

// readableKey is the cache key of the item holding r: the items' store is keyed as any
// namespaced object's.
func readableKey(r Ref) string {
	if r.Kind == Secret {
		return r.Namespace + "/" + nodev1alpha1.SecretPrefix + r.Name
	}
	return r.Namespace + "/" + nodev1alpha1.ConfigMapPrefix + r.Name
}

// itemRef is the object an item names: its namespace, and its name after the kind's prefix. A
// deletion may carry no object, so the name is what tells.
func itemRef(item *nodev1alpha1.NodeReadable) (Ref, bool) {
	if name, ok := strings.CutPrefix(item.Name, nodev1alpha1.SecretPrefix); ok && name != "" {
		return Ref{Secret, item.Namespace, name}, true
	}
	if name, ok := strings.CutPrefix(item.Name, nodev1alpha1.ConfigMapPrefix); ok && name != "" {
		return Ref{ConfigMap, item.Namespace, name}, true
	}
	return Ref{}, false
}

// readableObject is the object a checked item holds.
func readableObject(item *nodev1alpha1.NodeReadable) runtime.Object {
	if item.Secret != nil {
		return item.Secret
	}
	return item.ConfigMap
}

// readableVersion is the resourceVersion of the object an item holds: the item's own changes
// with the stream's position, which a relist moves for unchanged objects.
func readableVersion(item *nodev1alpha1.NodeReadable) string {
	if item.Secret != nil {
		return item.Secret.ResourceVersion
	}
	if item.ConfigMap != nil {
		return item.ConfigMap.ResourceVersion
	}
	return ""
}

// dropEmbeddedManagedFields is the bulk informer's transform: the agent reads data, never the
// objects' managed fields.
func dropEmbeddedManagedFields(obj any) (any, error) {
	if item, ok := obj.(*nodev1alpha1.NodeReadable); ok {
		item.ManagedFields = nil
		if item.Secret != nil {
			item.Secret.ManagedFields = nil
		}
		if item.ConfigMap != nil {
			item.ConfigMap.ManagedFields = nil
		}
	}
	return obj, nil
}

// notifyItem tells the users of the object an item of the bulk watch holds that it changed. A
// deletion whose last state the informer lost (DeletedFinalStateUnknown) is told by its key,
// which names the item as the store knew it, whatever object the tombstone holds or lacks.
func (c *Cache) notifyItem(obj any) {
	var item *nodev1alpha1.NodeReadable
	switch o := obj.(type) {
	case cache.DeletedFinalStateUnknown:
		namespace, name, err := cache.SplitMetaNamespaceKey(o.Key)
		if err != nil || name == "" {
			c.notifyItem(o.Obj)
			return
		}
		item = &nodev1alpha1.NodeReadable{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	case *nodev1alpha1.NodeReadable:
		item = o
	}
	if item == nil {
		return
	}
	if r, ok := itemRef(item); ok {
		c.notify(r)
	}
}
