package printers

import (
	"k8s.io/apiserver/pkg/registry/rest"

	nodev1alpha1 "github.com/idplane/idplane/api/node/v1alpha1"
)

// nodeReadables prints a node's readable objects as NAME KIND NODE: what the node may read now,
// the kind in the name's prefix spelled out.
var nodeReadables rest.TableConvertor = newTable(
	nameColumn[*nodev1alpha1.NodeReadable](),
	stringColumn("Kind", "Kind of the object the node may read: Secret or ConfigMap", func(r *nodev1alpha1.NodeReadable) any {
		switch {
		case r.Secret != nil:
			return "Secret"
		case r.ConfigMap != nil:
			return "ConfigMap"
		}
		return "<none>"
	}),
	stringColumn("Node", "NodeName is the node that may read the object", func(r *nodev1alpha1.NodeReadable) any { return r.NodeName }),
)
