// Package v1alpha1 is version v1alpha1 of the windows.k8s.io API group, the version of the GMSA
// design's CustomResourceDefinition. idplane serves it beside v1 so manifests written for that
// CRD apply unchanged; the objects are the same (stored as v1) and the shapes are identical.
//
// The field credspec keeps the design's all-lower-case name, which existing manifests use; Go
// calls it CredSpec (hence the names_match entry in hack/api-violations.list).
//
// +k8s:deepcopy-gen=package
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=io.k8s.windows.v1alpha1
//
// +groupName=windows.k8s.io
package v1alpha1
