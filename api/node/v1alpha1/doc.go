// Package v1alpha1 is version v1alpha1 of the node.idplane.io API group: NodeReadable, the
// node-scoped bulk watch the Node authorizer design names as future work ("bulk watch of
// secrets/configmaps").
//
// Without it a node watches each Secret and ConfigMap its pods use, one watch per object, because
// no API lets it watch "everything I may read". NodeReadables are that API: one list and one watch
// per node, whose items are the Secrets and ConfigMaps the node may read now through the Node
// authorizer's graph. They are never stored; the server computes them from the graph and its
// caches. Stock kubelets keep working as they do.
//
// The resource is read-only (list and watch, no get), and a request must name its node with the
// field selector nodeName=<node>; only that node is granted it.
//
// +k8s:deepcopy-gen=package
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=io.idplane.node.v1alpha1
//
// +groupName=node.idplane.io
package v1alpha1
