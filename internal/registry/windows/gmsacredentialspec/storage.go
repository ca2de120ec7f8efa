// Package gmsacredentialspec stores GMSACredentialSpecs: the credential specs of Windows Group
// Managed Service Accounts that pods name.
package gmsacredentialspec

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	windowsv1 "github.com/idplane/idplane/api/windows/v1"
	"github.com/idplane/idplane/internal/printers"
	"github.com/idplane/idplane/internal/registry/store"
	"github.com/idplane/idplane/internal/validation"
)

// NewREST returns gmsacredentialspecs.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
	s, err := store.New(optsGetter, store.Options{
		Resource: windowsv1.Resource("gmsacredentialspecs"),
		Singular: "gmsacredentialspec",
		Kind:     windowsv1.SchemeGroupVersion.WithKind("GMSACredentialSpec"),
		New:      func() runtime.Object { return &windowsv1.GMSACredentialSpec{} },
		NewList:  func() runtime.Object { return &windowsv1.GMSACredentialSpecList{} },
		Strategy: store.NewStrategy(typer, store.Rules[*windowsv1.GMSACredentialSpec]{
			Validate:       validation.ValidateGMSACredentialSpec,
			ValidateUpdate: validation.ValidateGMSACredentialSpecUpdate,
		}),
		Table: printers.GMSACredentialSpecs,
	})
	if err != nil {
		return nil, err
	}
	return map[string]rest.Storage{"gmsacredentialspecs": s}, nil
}
