// Package resources describes, in one table, the resources whose storage has no behaviour of its
// own: each row says what the resource is called, how it is validated, which fields each of its
// endpoints leaves alone and how kubectl prints it. Resources with behaviour of their own keep a
// package each (pods, namespaces, CSRs, service-account tokens, the reviews, RBAC's escalation
// check).
package resources

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/idplane/idplane/internal/registry/store"
)

// Builder builds a resource's storage, by resource path: the resource and its subresources.
type Builder func(runtime.ObjectTyper, generic.RESTOptionsGetter) (map[string]rest.Storage, error)

// resource is one row of the table.
type resource[T runtime.Object] struct {
	gv               schema.GroupVersion
	plural, singular string
	kind             string
	newObj, newList  func() runtime.Object
	rules            store.Rules[T]
	// status, when set, serves <plural>/status with these rules.
	status     *store.Rules[T]
	shortNames []string
	categories []string
	// ttlSeconds, when set, makes etcd expire objects this long after their last write.
	ttlSeconds uint64
	// returnDeleted answers DELETE with the deleted object rather than a Status.
	returnDeleted bool
}

// row is what the table holds of a resource, whatever its type.
type row interface {
	group() string
	build(runtime.ObjectTyper, generic.RESTOptionsGetter) (map[string]rest.Storage, error)
}

func (r resource[T]) group() string { return r.gv.Group }

func (r resource[T]) build(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
	s, err := store.New(optsGetter, store.Options{
		Resource:   r.gv.WithResource(r.plural).GroupResource(),
		Singular:   r.singular,
		Kind:       r.gv.WithKind(r.kind),
		New:        r.newObj,
		NewList:    r.newList,
		Strategy:   store.NewStrategy(typer, r.withVersion(r.rules)),
		ShortNames: r.shortNames,
		Categories: r.categories,
		TTLSeconds: r.ttlSeconds,
	})
	if err != nil {
		return nil, err
	}
	s.ReturnDeletedObject = r.returnDeleted
	out := map[string]rest.Storage{r.plural: s}
	if r.status != nil {
		status := r.withVersion(*r.status)
		status.Namespaced = r.rules.Namespaced
		out[r.plural+"/status"] = store.NewSubresource(s.WithStrategy(store.NewStrategy(typer, status)))
	}
	return out, nil
}

// withVersion names the version the rules' reset fields belong to: the row's own.
func (r resource[T]) withVersion(rules store.Rules[T]) store.Rules[T] {
	if len(rules.ResetFields) > 0 {
		rules.APIVersion = r.gv.String()
	}
	return rules
}

// Of returns the builders of the described resources of an API group.
func Of(group string) []Builder {
	var out []Builder
	for _, r := range table() {
		if r.group() == group {
			out = append(out, r.build)
		}
	}
	return out
}
