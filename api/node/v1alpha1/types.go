package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// ResourceName is the resource NodeReadables are served as.
	ResourceName = "nodereadables"
	// NodeNameField is the field selector label naming the node; every list and watch must
	// select exactly one node with it.
	NodeNameField = "nodeName"

	// SecretPrefix and ConfigMapPrefix start a NodeReadable's name, before the object's own name,
	// so a Secret and a ConfigMap of the same name in one namespace are two items.
	SecretPrefix    = "secret."
	ConfigMapPrefix = "configmap."
)

// NodeReadable is one Secret or ConfigMap that a node may read now, because a pod bound to it
// uses it. Exactly one of Secret and ConfigMap is set.
//
// Its namespace is the object's namespace and its name is the object's name after SecretPrefix or
// ConfigMapPrefix. Its resourceVersion is the position of the list or watch event in the node's
// stream, which a client resumes from; the object's own resourceVersion is in the embedded
// object's metadata.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type NodeReadable struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata; see the type's comment for its name and resourceVersion.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// NodeName is the node that may read the object.
	NodeName string `json:"nodeName"`
	// Secret is the Secret the node may read, when the item is a Secret.
	// +optional
	Secret *corev1.Secret `json:"secret,omitempty"`
	// ConfigMap is the ConfigMap the node may read, when the item is a ConfigMap.
	// +optional
	ConfigMap *corev1.ConfigMap `json:"configMap,omitempty"`
}

// NodeReadableList is the list of what one node may read now.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type NodeReadableList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata; its resourceVersion is the stream position a watch resumes from.
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the Secrets and ConfigMaps the node may read.
	Items []NodeReadable `json:"items"`
}
