package store

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/client-go/tools/cache"
)

// indexed is what the watch cache needs to use a resource's trigger fields. The library reaches
// the trigger and the index only through the predicate's IndexFields: without them a node's
// watch of its pods is handed every pod event in the cluster to filter, and its list and
// watch-list start scan every pod. With them both reach only the objects with the node's value.
type indexed struct {
	predicate func(labels.Selector, fields.Selector) storage.SelectionPredicate
	indexers  *cache.Indexers
}

func indexTriggers(triggers storage.IndexerFuncs, attrs storage.AttrFunc) indexed {
	if len(triggers) == 0 {
		return indexed{}
	}
	names := slices.Sorted(maps.Keys(triggers))
	indexers := cache.Indexers{}
	for name, value := range triggers {
		indexers[storage.FieldIndex(name)] = func(obj any) ([]string, error) {
			o, ok := obj.(runtime.Object)
			if !ok {
				return nil, fmt.Errorf("indexing %s: %T is not an API object", name, obj)
			}
			return []string{value(o)}, nil
		}
	}
	return indexed{
		predicate: func(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
			return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: attrs, IndexFields: names}
		},
		indexers: &indexers,
	}
}
