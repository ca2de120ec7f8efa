// Package v1 is version v1 of the windows.k8s.io API group, which idplane serves and stores:
// GMSACredentialSpec, the credential spec of a Windows Group Managed Service Account that pods
// name in their Windows security options.
//
// The field credspec keeps the design's all-lower-case name, which existing manifests use; Go
// calls it CredSpec (hence the names_match entry in hack/api-violations.list).
//
// +k8s:deepcopy-gen=package
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=io.k8s.windows.v1
//
// +groupName=windows.k8s.io
package v1
