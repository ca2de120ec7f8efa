package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GMSACredentialSpec is the credential spec of a Windows Group Managed Service Account
// (GMSA). Pods name it in securityContext.windowsOptions.gmsaCredentialSpecName; the container
// runtime receives its credspec. Cluster-scoped, so pods of any namespace may name it; who may
// use it is decided by RBAC verb "use" on the object.
type GMSACredentialSpec struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object's metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// credspec is the credential spec document, as the Windows container runtime takes it
	// (ActiveDirectoryConfig, CmsPlugins, DomainJoinConfig...). It is kept exactly as written,
	// fields the server does not know included. It must be a JSON object of at most 64 KiB
	// (compact JSON) nesting at most 32 levels deep.
	CredSpec CredSpec `json:"credspec,omitzero"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GMSACredentialSpecList is a list of GMSACredentialSpecs.
type GMSACredentialSpecList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the credential specs.
	Items []GMSACredentialSpec `json:"items"`
}
