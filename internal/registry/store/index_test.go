package store

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"

	"github.com/idplane/idplane/internal/registry/fieldlabels"
)

func TestIndexTriggers(t *testing.T) {
	nodeName := storage.IndexerFuncs{"spec.nodeName": func(o runtime.Object) string { return o.(*corev1.Pod).Spec.NodeName }}
	attrs := fieldlabels.AttrsFunc(corev1.SchemeGroupVersion.WithKind("Pod"))
	cases := []struct {
		name     string
		triggers storage.IndexerFuncs
		selector string
		want     []storage.MatchValue
	}{
		{name: "one node's pods use the index", triggers: nodeName, selector: "spec.nodeName=n1",
			want: []storage.MatchValue{{IndexName: "f:spec.nodeName", Value: "n1"}}},
		{name: "with another term too", triggers: nodeName, selector: "spec.nodeName=n1,status.phase=Running",
			want: []storage.MatchValue{{IndexName: "f:spec.nodeName", Value: "n1"}}},
		{name: "not equal is no single value", triggers: nodeName, selector: "spec.nodeName!=n1"},
		{name: "no selector", triggers: nodeName, selector: ""},
		{name: "a resource without triggers", selector: "spec.nodeName=n1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			index := indexTriggers(c.triggers, attrs)
			if c.triggers == nil {
				if index.predicate != nil || index.indexers != nil {
					t.Fatalf("a resource without triggers got an index: %+v", index)
				}
				return
			}
			sel, err := fields.ParseSelector(c.selector)
			if err != nil {
				t.Fatal(err)
			}
			pred := index.predicate(labels.Everything(), sel)
			got := pred.MatcherIndex(context.Background())
			if len(got) != len(c.want) || (len(got) == 1 && got[0] != c.want[0]) {
				t.Fatalf("MatcherIndex(%q) = %v, want %v", c.selector, got, c.want)
			}
		})
	}

	index := indexTriggers(nodeName, attrs)
	values, err := (*index.indexers)["f:spec.nodeName"](&corev1.Pod{Spec: corev1.PodSpec{NodeName: "n2"}})
	if err != nil || len(values) != 1 || values[0] != "n2" {
		t.Fatalf("index of a pod on n2 = %v, %v", values, err)
	}
	if _, err := (*index.indexers)["f:spec.nodeName"]("not an object"); err == nil {
		t.Fatal("indexing a non-object succeeded")
	}
}
