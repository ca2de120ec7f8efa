// Package customresourcedefinition serves a fixed, read-only list of CustomResourceDefinitions:
// the built-in resources that elsewhere are CRDs (gmsacredentialspecs.windows.k8s.io), so that
// deployment scripts checking for them find them. idplane has no custom resources of its own, but
// kubectl also looks for a CRD when it validates a kind it cannot patch (SubjectAccessReview,
// TokenReview) and fails without the endpoint.
package customresourcedefinition

import (
	"context"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/rest"
)

// resourceVersion is that of every CRD and list: the CRDs never change while the server runs.
const resourceVersion = "1"

// REST lists and gets its CRDs.
type REST struct {
	rest.TableConvertor
	crds []*apiextensionsv1.CustomResourceDefinition
}

// New returns the read-only CRD endpoint serving crds.
func New(crds ...*apiextensionsv1.CustomResourceDefinition) *REST {
	r := &REST{TableConvertor: rest.NewDefaultTableConvertor(apiextensionsv1.Resource("customresourcedefinitions"))}
	for _, crd := range crds {
		crd = crd.DeepCopy()
		crd.ResourceVersion = resourceVersion
		r.crds = append(r.crds, crd)
	}
	return r
}

var (
	_ rest.Lister               = &REST{}
	_ rest.Getter               = &REST{}
	_ rest.Watcher              = &REST{}
	_ rest.Scoper               = &REST{}
	_ rest.SingularNameProvider = &REST{}
)

func (r *REST) New() runtime.Object     { return &apiextensionsv1.CustomResourceDefinition{} }
func (r *REST) NewList() runtime.Object { return &apiextensionsv1.CustomResourceDefinitionList{} }
func (r *REST) Destroy()                {}
func (r *REST) NamespaceScoped() bool   { return false }
func (r *REST) GetSingularName() string { return "customresourcedefinition" }
func (r *REST) ShortNames() []string    { return []string{"crd", "crds"} }

// List honours label selectors and the metadata.name field selector, which kubectl wait uses.
func (r *REST) List(_ context.Context, options *metainternalversion.ListOptions) (runtime.Object, error) {
	return &apiextensionsv1.CustomResourceDefinitionList{ListMeta: metav1.ListMeta{ResourceVersion: resourceVersion}, Items: r.matching(options)}, nil
}

// Watch sends what a client cannot have yet and then nothing, since nothing changes: every
// matching CRD unless the client names a resource version (that of a list, or a watch's initial
// events), and the bookmark ending the initial events when it asks for them. kubectl wait and
// informers watch after listing.
func (r *REST) Watch(_ context.Context, options *metainternalversion.ListOptions) (watch.Interface, error) {
	var fromVersion string
	var initialEvents bool
	if options != nil {
		fromVersion = options.ResourceVersion
		initialEvents = options.SendInitialEvents != nil && *options.SendInitialEvents
	}
	items := r.matching(options)
	events := make(chan watch.Event, len(items)+1)
	if fromVersion == "" || fromVersion == "0" || initialEvents {
		for i := range items {
			events <- watch.Event{Type: watch.Added, Object: &items[i]}
		}
	}
	if initialEvents {
		events <- watch.Event{Type: watch.Bookmark, Object: &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{
			ResourceVersion: resourceVersion,
			Annotations:     map[string]string{metav1.InitialEventsAnnotationKey: "true"},
		}}}
	}
	return watch.NewProxyWatcher(events), nil
}

// matching returns copies of the CRDs that the options' label and field selectors select.
func (r *REST) matching(options *metainternalversion.ListOptions) []apiextensionsv1.CustomResourceDefinition {
	var out []apiextensionsv1.CustomResourceDefinition
	for _, crd := range r.crds {
		if options != nil {
			if options.LabelSelector != nil && !options.LabelSelector.Matches(labels.Set(crd.Labels)) {
				continue
			}
			if options.FieldSelector != nil && !options.FieldSelector.Matches(fields.Set{"metadata.name": crd.Name}) {
				continue
			}
		}
		out = append(out, *crd.DeepCopy())
	}
	return out
}

func (r *REST) Get(_ context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	for _, crd := range r.crds {
		if crd.Name == name {
			return crd.DeepCopy(), nil
		}
	}
	return nil, apierrors.NewNotFound(apiextensionsv1.Resource("customresourcedefinitions"), name)
}
