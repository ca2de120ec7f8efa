package apiserver

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	nodev1alpha1 "github.com/idplane/idplane/api/node/v1alpha1"
	"github.com/idplane/idplane/internal/printers"
	"github.com/idplane/idplane/internal/registry/node/nodereadable"
)

// readables is the node-scoped bulk watch's storage and what it needs from the API's install.
type readables struct {
	storage rest.Storage
	// secrets is the server's own Secret storage, which the Hub reads objects from; installAPIs
	// builds it after the Hub, and tells it through served.
	secrets atomic.Pointer[rest.Getter]
}

// served takes the core group's Secret storage as installAPIs builds it.
func (r *readables) served(gv schema.GroupVersion, storage map[string]rest.Storage) {
	if gv.Group != "" {
		return
	}
	if g, ok := storage["secrets"].(rest.Getter); ok {
		r.secrets.Store(&g)
	}
}

// nodeReadables builds, with mode Node, the node-scoped bulk watch: a Hub fed by the Node
// authorizer's graph, the server's shared ConfigMap informer and a Secret feed of its own that
// keeps no object (the server's Secret informers hold only token secrets), ready once both feeds
// have synced. The Hub reads the objects it serves when it serves them: ConfigMaps from the
// informer, Secrets from the server's Secret storage (its watch cache). Without mode Node it
// returns nil and the group is not served.
func (a *assembly) nodeReadables(srv *genericapiserver.GenericAPIServer, authz authorizers) (*readables, error) {
	if authz.node == nil {
		return nil, nil
	}
	r := &readables{}
	configMaps := a.loopback.informers.Core().V1().ConfigMaps()
	hub := nodereadable.NewHub(nodereadable.DefaultLogSize, r.source(configMaps.Lister()))
	if err := hub.Attach(authz.node.SubscribeReadable, configMaps.Informer()); err != nil {
		return nil, err
	}
	secrets := a.loopback.client.CoreV1().Secrets(metav1.NamespaceAll)
	runFeed, feedSynced := hub.FeedSecrets(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return secrets.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return secrets.Watch(ctx, o)
		},
	})
	err := srv.AddPostStartHook("nodereadables-informers-synced", func(ctx genericapiserver.PostStartHookContext) error {
		go runFeed(ctx)
		if !hub.WaitSynced(ctx, feedSynced, configMaps.Informer().HasSynced) {
			return fmt.Errorf("secret feed and configmap informer for nodereadables did not sync")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.storage = nodereadable.NewREST(hub, authz.node, a.storageProbe(), nodereadable.Options{
		Table: printers.For(nodev1alpha1.Resource(nodev1alpha1.ResourceName)),
	})
	return r, nil
}

// source reads ConfigMaps from the informer the Hub follows, and Secrets from the server's Secret
// storage with resourceVersion "0": its watch cache, which is at least as new as the Hub's
// Secret feed, since that feed watches the same cache. The Hub checks that what it reads is the
// object it asked for.
func (r *readables) source(configMaps corelisters.ConfigMapLister) nodereadable.Source {
	return func(ctx context.Context, configMap bool, namespace, name string) (runtime.Object, bool, error) {
		var obj runtime.Object
		var err error
		if configMap {
			obj, err = configMaps.ConfigMaps(namespace).Get(name)
		} else {
			g := r.secrets.Load()
			if g == nil {
				return nil, false, fmt.Errorf("the server's secret storage is not installed")
			}
			obj, err = (*g).Get(genericapirequest.WithNamespace(ctx, namespace), name, &metav1.GetOptions{ResourceVersion: "0"})
		}
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		return obj, true, nil
	}
}

// storageProbe reads an object as a node's GET would, from storage, for its resourceVersion.
func (a *assembly) storageProbe() nodereadable.Probe {
	client := a.loopback.client.CoreV1()
	return func(ctx context.Context, configMap bool, namespace, name string) (uint64, bool, error) {
		var obj metav1.Object
		var err error
		if configMap {
			obj, err = client.ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
		} else {
			obj, err = client.Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
		}
		if apierrors.IsNotFound(err) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, err
		}
		revision, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("resourceVersion %q of %s/%s: %w", obj.GetResourceVersion(), namespace, name, err)
		}
		return revision, true, nil
	}
}
