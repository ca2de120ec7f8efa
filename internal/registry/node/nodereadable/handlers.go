package nodereadable

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
)

// handler is the event handler for a Secret informer, or with configMap the server's ConfigMap
// informer; the Secret feed (feed.go) calls the same paths. The informer, not the object, says
// the kind, so that a deletion whose last state is unknown still names what went: a
// DeletedFinalStateUnknown (the informer missed the delete and found the object gone on a
// relist) carries the store key, and maybe a stale object. The key decides; the object only adds
// its resourceVersion. An event nothing can be made of is logged and dropped, never a panic in
// the informer's goroutine.
func (h *Hub) handler(configMap bool) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { h.informerUpdate(configMap, obj) },
		UpdateFunc: func(_, obj any) { h.informerUpdate(configMap, obj) },
		DeleteFunc: func(obj any) { h.informerDelete(configMap, obj) },
	}
}

func (h *Hub) informerUpdate(configMap bool, obj any) {
	o, r, ok := refOf(configMap, obj)
	if !ok {
		utilruntime.HandleError(fmt.Errorf("nodereadables: ignoring an informer event for %s: %T", kindName(configMap), obj))
		return
	}
	h.objectUpdated(r, o)
}

func (h *Hub) informerDelete(configMap bool, obj any) {
	tomb, isTomb := obj.(cache.DeletedFinalStateUnknown)
	if !isTomb {
		o, r, ok := refOf(configMap, obj)
		if !ok {
			utilruntime.HandleError(fmt.Errorf("nodereadables: ignoring a deletion of %s: %T", kindName(configMap), obj))
			return
		}
		h.objectDeleted(r, o)
		return
	}
	o, fromObj, objOK := refOf(configMap, tomb.Obj)
	namespace, name, err := cache.SplitMetaNamespaceKey(tomb.Key)
	switch {
	case err == nil && name != "":
		r := ref{configMap: configMap, namespace: namespace, name: name}
		if objOK && fromObj != r {
			// The object is not the one the key names: trust only the key.
			o = nil
		}
		h.objectDeleted(r, o)
	case objOK:
		h.objectDeleted(fromObj, o)
	default:
		utilruntime.HandleError(fmt.Errorf("nodereadables: ignoring a %s tombstone with key %q and object %T: neither names an object", kindName(configMap), tomb.Key, tomb.Obj))
	}
}

// refOf is obj as a Secret (or with configMap a ConfigMap) and the ref naming it; ok is false for
// anything else, a nil pointer or an object without a name included.
func refOf(configMap bool, obj any) (runtime.Object, ref, bool) {
	switch o := obj.(type) {
	case *corev1.Secret:
		if o != nil && !configMap && o.Name != "" {
			return o, ref{namespace: o.Namespace, name: o.Name}, true
		}
	case *corev1.ConfigMap:
		if o != nil && configMap && o.Name != "" {
			return o, ref{configMap: true, namespace: o.Namespace, name: o.Name}, true
		}
	}
	return nil, ref{}, false
}

func kindName(configMap bool) string {
	if configMap {
		return "a configmap"
	}
	return "a secret"
}
