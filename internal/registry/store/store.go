package store

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/idplane/idplane/internal/printers"
	"github.com/idplane/idplane/internal/registry/fieldlabels"
)

// Options describe one resource's storage.
type Options struct {
	Resource schema.GroupResource
	Singular string
	Kind     schema.GroupVersionKind
	New      func() runtime.Object
	NewList  func() runtime.Object
	// Strategy serves create, update and delete (a *Strategy[T]).
	Strategy interface {
		rest.RESTCreateStrategy
		rest.RESTUpdateStrategy
		rest.RESTDeleteStrategy
		rest.ResetFieldsStrategy
	}
	// Triggers index the watch cache by hot field selectors, such as spec.nodeName for pods.
	Triggers storage.IndexerFuncs
	// ShortNames and Categories appear in discovery (kubectl get po, kubectl get all).
	ShortNames []string
	Categories []string
	// TTLSeconds, when set, makes etcd expire objects this long after their last write (events).
	TTLSeconds uint64
}

// New builds the etcd-backed store for a resource.
func New(optsGetter generic.RESTOptionsGetter, o Options) (*Store, error) {
	s := &genericregistry.Store{
		NewFunc:                   o.New,
		NewListFunc:               o.NewList,
		DefaultQualifiedResource:  o.Resource,
		SingularQualifiedResource: schema.GroupResource{Group: o.Resource.Group, Resource: o.Singular},
		CreateStrategy:            o.Strategy,
		UpdateStrategy:            o.Strategy,
		DeleteStrategy:            o.Strategy,
		ResetFieldsStrategy:       o.Strategy,
		// kubectl's columns come from the one table of them, so no resource can name another's.
		TableConvertor: printers.For(o.Resource),
	}
	attrs := fieldlabels.AttrsFunc(o.Kind)
	index := indexTriggers(o.Triggers, attrs)
	s.PredicateFunc = index.predicate
	if o.TTLSeconds > 0 {
		s.TTLFunc = func(runtime.Object, uint64, bool) (uint64, error) { return o.TTLSeconds, nil }
	}
	err := s.CompleteWithOptions(&generic.StoreOptions{
		RESTOptions: optsGetter,
		AttrFunc:    attrs,
		TriggerFunc: o.Triggers,
		Indexers:    index.indexers,
	})
	if err != nil {
		return nil, fmt.Errorf("building storage for %s: %w", o.Resource, err)
	}
	return &Store{Store: s, shortNames: o.ShortNames, categories: o.Categories}, nil
}

// Store is a resource's REST storage.
type Store struct {
	*genericregistry.Store
	shortNames []string
	categories []string
}

func (s *Store) ShortNames() []string { return s.shortNames }
func (s *Store) Categories() []string { return s.categories }

// WithStrategy returns a copy of the store that updates with another strategy: the shape of
// a subresource such as status, which shares the object but changes other fields.
func (s *Store) WithStrategy(update interface {
	rest.RESTUpdateStrategy
	rest.ResetFieldsStrategy
}) *genericregistry.Store {
	c := *s.Store
	c.UpdateStrategy = update
	c.ResetFieldsStrategy = update
	return &c
}

// Subresource exposes get and update of a store built by WithStrategy, as a subresource endpoint.
type Subresource struct {
	store *genericregistry.Store
}

// NewSubresource serves store (from WithStrategy) as a get/update subresource.
func NewSubresource(store *genericregistry.Store) *Subresource { return &Subresource{store: store} }

var (
	_ rest.Patcher              = &Subresource{}
	_ rest.ResetFieldsStrategy  = &Subresource{}
	_ rest.TableConvertor       = &Subresource{}
	_ rest.Storage              = &Subresource{}
	_ rest.Scoper               = &Subresource{}
	_ rest.SingularNameProvider = &Subresource{}
)

func (r *Subresource) New() runtime.Object { return r.store.New() }
func (r *Subresource) Destroy()            {}
func (r *Subresource) NamespaceScoped() bool {
	return r.store.CreateStrategy.NamespaceScoped()
}
func (r *Subresource) GetSingularName() string { return r.store.GetSingularName() }

func (r *Subresource) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

func (r *Subresource) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	// Subresources never create their parent object.
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

func (r *Subresource) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

func (r *Subresource) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}
