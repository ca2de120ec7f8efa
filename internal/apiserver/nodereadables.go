package apiserver

import (
	"context"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	nodev1alpha1 "github.com/idplane/idplane/api/node/v1alpha1"
	"github.com/idplane/idplane/internal/printers"
	"github.com/idplane/idplane/internal/registry/node/nodereadable"
)

// nodeReadables builds, with mode Node, the node-scoped bulk watch: a Hub fed by the Node
// authorizer's graph and the server's shared Secret and ConfigMap informers, ready once those
// have synced. Without mode Node it returns nil and the group is not served.
func (a *assembly) nodeReadables(srv *genericapiserver.GenericAPIServer, authz authorizers) (rest.Storage, error) {
	if authz.node == nil {
		return nil, nil
	}
	hub := nodereadable.NewHub(nodereadable.DefaultLogSize)
	core := a.loopback.informers.Core().V1()
	secrets, configMaps := core.Secrets().Informer(), core.ConfigMaps().Informer()
	if err := hub.Attach(authz.node.SubscribeReadable, secrets, configMaps); err != nil {
		return nil, err
	}
	err := srv.AddPostStartHook("nodereadables-informers-synced", func(ctx genericapiserver.PostStartHookContext) error {
		if !hub.WaitSynced(ctx, secrets.HasSynced, configMaps.HasSynced) {
			return fmt.Errorf("secret and configmap informers for nodereadables did not sync")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return nodereadable.NewREST(hub, authz.node, a.storageProbe(), nodereadable.Options{
		Table: printers.For(nodev1alpha1.Resource(nodev1alpha1.ResourceName)),
	}), nil
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
