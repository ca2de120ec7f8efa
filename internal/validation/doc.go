// Package validation holds the validation rules of the stock Kubernetes types
// that idplane serves (core/v1 namespaces, nodes, pods, secrets, configmaps,
// service accounts, persistent volumes and claims, events, coordination/v1
// leases and policy/v1 evictions).
//
// Upstream keeps these rules in k8s.io/kubernetes, which idplane deliberately
// does not import: that module is not meant to be a library, drags in most of
// the control plane and pins its own dependency graph. idplane therefore states
// the rules itself, as small named rules and tables written against the
// external v1 types it stores, and aims for the same behaviour as Kubernetes
// 1.37: the same objects are accepted and rejected, with the same field paths,
// error types and messages, so that clients see the same 422 Invalid
// responses.
//
// Every function expects an object that has already been defaulted and
// returns a field.ErrorList; an empty list means the object is valid.
package validation
