package nodereadable

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	nodev1alpha1 "github.com/idplane/idplane/api/node/v1alpha1"
	"github.com/idplane/idplane/internal/authz/node"
	"github.com/idplane/idplane/internal/nodeidentity"
)

// Freshness lets the graph catch up with storage before a node's items are listed, as the Node
// authorizer does before it refuses a GET.
type Freshness interface {
	WaitFresh(ctx context.Context) bool
}

// Probe reads, from storage as a GET does, whether a Secret (or with configMap a ConfigMap)
// exists and its resourceVersion.
type Probe func(ctx context.Context, configMap bool, namespace, name string) (revision uint64, found bool, err error)

// Options configure a REST.
type Options struct {
	// BookmarkInterval is how often an idle watch that allows bookmarks gets one.
	BookmarkInterval time.Duration
	// CatchUpTimeout bounds how long a list waits for the feeds to deliver an object storage
	// already holds.
	CatchUpTimeout time.Duration
	Clock          clock.WithTicker
	Table          rest.TableConvertor
}

// REST serves nodereadables from a Hub: list and watch, for the node the request names and that
// node alone.
type REST struct {
	hub   *Hub
	fresh Freshness
	probe Probe
	opts  Options
}

var (
	_ rest.Storage              = (*REST)(nil)
	_ rest.Scoper               = (*REST)(nil)
	_ rest.Lister               = (*REST)(nil)
	_ rest.Watcher              = (*REST)(nil)
	_ rest.SingularNameProvider = (*REST)(nil)
)

// NewREST serves hub's streams; fresh and probe make a list show at least what a GET would.
func NewREST(hub *Hub, fresh Freshness, probe Probe, opts Options) *REST {
	if opts.BookmarkInterval <= 0 {
		opts.BookmarkInterval = time.Minute
	}
	if opts.CatchUpTimeout <= 0 {
		opts.CatchUpTimeout = 5 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Table == nil {
		opts.Table = rest.NewDefaultTableConvertor(nodev1alpha1.Resource(nodev1alpha1.ResourceName))
	}
	return &REST{hub: hub, fresh: fresh, probe: probe, opts: opts}
}

func (s *REST) New() runtime.Object     { return &nodev1alpha1.NodeReadable{} }
func (s *REST) NewList() runtime.Object { return &nodev1alpha1.NodeReadableList{} }
func (s *REST) Destroy()                {}
func (s *REST) NamespaceScoped() bool   { return true }
func (s *REST) GetSingularName() string { return "nodereadable" }
func (s *REST) ConvertToTable(ctx context.Context, obj, opts runtime.Object) (*metav1.Table, error) {
	return s.opts.Table.ConvertToTable(ctx, obj, opts)
}

// target is the node a request is for and the namespace it is limited to. It must select exactly
// one node by field selector, and come from that node: no other identity, however privileged, may
// read a node's stream (RBAC cannot grant it).
func target(ctx context.Context, opts *metainternalversion.ListOptions) (nodeName, namespace string, err error) {
	gr := nodev1alpha1.Resource(nodev1alpha1.ResourceName)
	if opts == nil || opts.FieldSelector == nil || opts.FieldSelector.Empty() {
		return "", "", apierrors.NewBadRequest("nodereadables must be listed and watched with field selector " + nodev1alpha1.NodeNameField + "=<node>")
	}
	reqs := opts.FieldSelector.Requirements()
	if len(reqs) != 1 || reqs[0].Field != nodev1alpha1.NodeNameField || reqs[0].Value == "" ||
		reqs[0].Operator != selection.Equals && reqs[0].Operator != selection.DoubleEquals {
		return "", "", apierrors.NewBadRequest(fmt.Sprintf("field selector %q: nodereadables take exactly one field selector, %s=<node>", opts.FieldSelector.String(), nodev1alpha1.NodeNameField))
	}
	if opts.LabelSelector != nil && !opts.LabelSelector.Empty() {
		return "", "", apierrors.NewBadRequest("nodereadables take no label selector")
	}
	nodeName = reqs[0].Value
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return "", "", apierrors.NewForbidden(gr, "", fmt.Errorf("no user in the request"))
	}
	if caller, isNode := nodeidentity.NodeName(u); !isNode || caller != nodeName {
		return "", "", apierrors.NewForbidden(gr, "", fmt.Errorf("user %q may not read the nodereadables of node %q: only that node itself may", u.GetName(), nodeName))
	}
	namespace, _ = genericapirequest.NamespaceFrom(ctx)
	return nodeName, namespace, nil
}

// List returns what the node may read now, after the graph has caught up with storage.
func (s *REST) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	nodeName, namespace, err := target(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := unpaged(opts); err != nil {
		return nil, err
	}
	if err := s.catchUp(ctx, nodeName, namespace); err != nil {
		return nil, err
	}
	s.hub.mu.Lock()
	seq, refs := s.hub.seq, s.hub.snapshotLocked(nodeName, namespace)
	s.hub.mu.Unlock()
	items, err := s.hub.items(ctx, nodeName, refs, seq)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	list := &nodev1alpha1.NodeReadableList{ListMeta: metav1.ListMeta{ResourceVersion: s.hub.position(seq)}, Items: items}
	slices.SortFunc(list.Items, func(a, b nodev1alpha1.NodeReadable) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return list, nil
}

// Watch streams the node's events: from now, after its current items (resourceVersion unset or
// "0", or sendInitialEvents), or resumed after a position this server gave.
func (s *REST) Watch(ctx context.Context, opts *metainternalversion.ListOptions) (watch.Interface, error) {
	nodeName, namespace, err := target(ctx, opts)
	if err != nil {
		return nil, err
	}
	var st start
	rv := opts.ResourceVersion
	switch {
	case opts.SendInitialEvents != nil && *opts.SendInitialEvents:
		// The library turns a plain watch from "now" (resourceVersion unset or "0") into this
		// case too; only a client that takes bookmarks is told where the initial events end, as
		// the watch cache does (the library's handler expects the marker on watch-lists alone).
		st.initial, st.endMarker = true, opts.AllowWatchBookmarks
	case rv == "" || rv == "0":
		st.initial = opts.SendInitialEvents == nil
	default:
		seq, ok := s.hub.parsePosition(rv)
		if !ok {
			return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %s: not a position of this server's nodereadables streams", rv))
		}
		st.resume, st.from = true, seq
	}
	if st.initial {
		if err := s.catchUp(ctx, nodeName, namespace); err != nil {
			return nil, err
		}
	} else if err := s.ready(ctx); err != nil {
		return nil, err
	}
	w, err := s.hub.open(nodeName, namespace, st, opts.AllowWatchBookmarks, s.opts.BookmarkInterval, s.opts.Clock)
	// Priority and fairness holds a watch's seat until the storage says its start is done, as
	// the library's watch cache does once it has queued the initial events; the hub has queued
	// them in open. Without the signal every node's watch would hold a seat for its lifetime.
	utilflowcontrol.WatchInitialized(ctx)
	return w, err
}

func (s *REST) ready(ctx context.Context) error {
	select {
	case <-s.hub.synced:
		return nil
	case <-ctx.Done():
		return apierrors.NewServiceUnavailable("nodereadables are not ready: the server's secret and configmap feeds have not synced")
	}
}

// catchUp makes the node's items at least what GETs would allow and find: the graph first
// catches up with storage, as the Node authorizer lets it before refusing; then every object the
// node has a path to but the feeds have not delivered is read from storage, and if it exists
// the list waits until the feeds deliver it.
func (s *REST) catchUp(ctx context.Context, nodeName, namespace string) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	if s.fresh != nil {
		s.fresh.WaitFresh(ctx)
	}
	s.hub.mu.Lock()
	missing := s.hub.missingLocked(nodeName, namespace)
	s.hub.mu.Unlock()
	if len(missing) == 0 || s.probe == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.CatchUpTimeout)
	defer cancel()
	for _, r := range missing {
		revision, found, err := s.probe(ctx, r.configMap, r.namespace, r.name)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("reading %s: %w", r.itemName(), err))
		}
		if !found {
			continue
		}
		if err := s.hub.waitRevision(ctx, r.configMap, revision); err != nil {
			return apierrors.NewTimeoutError(fmt.Sprintf("the server's feeds have not yet delivered %s/%s", r.namespace, r.itemName()), 1)
		}
	}
	return nil
}

// Attach feeds the Hub from the graph (subscribe is the Node authorizer's SubscribeReadable) and
// from the server's ConfigMap informer; Secrets come from FeedSecrets. Requests wait until
// WaitSynced has seen both feeds sync.
func (h *Hub) Attach(subscribe func(func(node.ReadableChange)), configMaps cache.SharedIndexInformer) error {
	if _, err := configMaps.AddEventHandler(h.handler(true)); err != nil {
		return fmt.Errorf("watching the configmap informer for nodereadables: %w", err)
	}
	subscribe(h.PathChanged)
	return nil
}

// WaitSynced marks the Hub ready once every synced reports true; it returns false if ctx ends
// first.
func (h *Hub) WaitSynced(ctx context.Context, synced ...cache.InformerSynced) bool {
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return false
	}
	h.MarkSynced()
	return true
}
