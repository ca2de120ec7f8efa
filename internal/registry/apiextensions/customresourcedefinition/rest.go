// Package customresourcedefinition serves an always-empty, read-only list of
// CustomResourceDefinitions. idplane has no custom resources, but kubectl looks for a CRD when
// it validates a kind it cannot patch (SubjectAccessReview, TokenReview) and fails without the
// endpoint.
package customresourcedefinition

import (
	"context"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
)

// REST lists no CRDs and finds none by name.
type REST struct {
	rest.TableConvertor
}

// New returns the read-only CRD endpoint.
func New() *REST {
	return &REST{TableConvertor: rest.NewDefaultTableConvertor(apiextensionsv1.Resource("customresourcedefinitions"))}
}

var (
	_ rest.Lister               = &REST{}
	_ rest.Getter               = &REST{}
	_ rest.Scoper               = &REST{}
	_ rest.SingularNameProvider = &REST{}
)

func (r *REST) New() runtime.Object     { return &apiextensionsv1.CustomResourceDefinition{} }
func (r *REST) NewList() runtime.Object { return &apiextensionsv1.CustomResourceDefinitionList{} }
func (r *REST) Destroy()                {}
func (r *REST) NamespaceScoped() bool   { return false }
func (r *REST) GetSingularName() string { return "customresourcedefinition" }
func (r *REST) ShortNames() []string    { return []string{"crd", "crds"} }

func (r *REST) List(context.Context, *metainternalversion.ListOptions) (runtime.Object, error) {
	return &apiextensionsv1.CustomResourceDefinitionList{}, nil
}

func (r *REST) Get(_ context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	return nil, apierrors.NewNotFound(apiextensionsv1.Resource("customresourcedefinitions"), name)
}
