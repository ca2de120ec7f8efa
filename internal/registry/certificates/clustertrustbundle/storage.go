// Package clustertrustbundle stores ClusterTrustBundles: CA certificates published for clients to
// trust, optionally linked to the signer that issues under them.
package clustertrustbundle

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/idplane/idplane/internal/printers"
	"github.com/idplane/idplane/internal/registry/store"
	"github.com/idplane/idplane/internal/validation"
)

// NewREST returns clustertrustbundles.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
	s, err := store.New(optsGetter, store.Options{
		Resource: certificatesv1.Resource("clustertrustbundles"),
		Singular: "clustertrustbundle",
		Kind:     certificatesv1.SchemeGroupVersion.WithKind("ClusterTrustBundle"),
		New:      func() runtime.Object { return &certificatesv1.ClusterTrustBundle{} },
		NewList:  func() runtime.Object { return &certificatesv1.ClusterTrustBundleList{} },
		Strategy: store.NewStrategy(typer, store.Rules[*certificatesv1.ClusterTrustBundle]{
			Validate:       validation.ValidateClusterTrustBundle,
			ValidateUpdate: validation.ValidateClusterTrustBundleUpdate,
		}),
		Table: printers.ClusterTrustBundles,
	})
	if err != nil {
		return nil, err
	}
	return map[string]rest.Storage{"clustertrustbundles": s}, nil
}
