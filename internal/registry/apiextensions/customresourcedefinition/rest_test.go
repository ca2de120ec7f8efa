package customresourcedefinition

import (
	"context"
	"slices"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

func crd(name string, labels map[string]string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func names(items []apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, i := range items {
		out = append(out, i.Name)
	}
	return out
}

func TestListAndGet(t *testing.T) {
	r := New(crd("a.example.com", map[string]string{"team": "x"}), crd("b.example.com", nil))
	ctx := context.Background()
	tests := []struct {
		name    string
		options *metainternalversion.ListOptions
		want    []string
	}{
		{"no options", nil, []string{"a.example.com", "b.example.com"}},
		{"everything", &metainternalversion.ListOptions{}, []string{"a.example.com", "b.example.com"}},
		{"by label", &metainternalversion.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{"team": "x"})}, []string{"a.example.com"}},
		{"by name", &metainternalversion.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "b.example.com")}, []string{"b.example.com"}},
		{"no match", &metainternalversion.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "c")}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj, err := r.List(ctx, tc.options)
			if err != nil {
				t.Fatal(err)
			}
			list := obj.(*apiextensionsv1.CustomResourceDefinitionList)
			if got := names(list.Items); !slices.Equal(got, tc.want) {
				t.Errorf("listed %v, want %v", got, tc.want)
			}
			if list.ResourceVersion != resourceVersion {
				t.Errorf("list resource version %q", list.ResourceVersion)
			}
		})
	}

	obj, err := r.Get(ctx, "b.example.com", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := obj.(*apiextensionsv1.CustomResourceDefinition)
	if got.Name != "b.example.com" || got.ResourceVersion != resourceVersion {
		t.Errorf("got %s at %q", got.Name, got.ResourceVersion)
	}
	// Callers get copies: changing one changes nothing served.
	got.Name = "changed"
	if again, _ := r.Get(ctx, "b.example.com", &metav1.GetOptions{}); again.(*apiextensionsv1.CustomResourceDefinition).Name != "b.example.com" {
		t.Error("Get returned the served object itself")
	}
	if _, err := r.Get(ctx, "c.example.com", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Get of a missing CRD: %v, want NotFound", err)
	}
}

func TestWatch(t *testing.T) {
	r := New(crd("a.example.com", nil), crd("b.example.com", nil))
	byName := fields.OneTermEqualSelector("metadata.name", "a.example.com")
	tests := []struct {
		name    string
		options *metainternalversion.ListOptions
		want    []watch.EventType
	}{
		{"from now", &metainternalversion.ListOptions{}, []watch.EventType{watch.Added, watch.Added}},
		{"from any version, one name", &metainternalversion.ListOptions{ResourceVersion: "0", FieldSelector: byName}, []watch.EventType{watch.Added}},
		{"after a list", &metainternalversion.ListOptions{ResourceVersion: resourceVersion}, nil},
		{"initial events", &metainternalversion.ListOptions{SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, FieldSelector: byName},
			[]watch.EventType{watch.Added, watch.Bookmark}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := r.Watch(context.Background(), tc.options)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			var got []watch.EventType
			var last watch.Event
		read:
			for {
				select {
				case e := <-w.ResultChan():
					got, last = append(got, e.Type), e
				case <-time.After(50 * time.Millisecond):
					break read
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("events %v, want %v", got, tc.want)
			}
			if last.Type == watch.Bookmark {
				m := last.Object.(*apiextensionsv1.CustomResourceDefinition).ObjectMeta
				if m.Annotations[metav1.InitialEventsAnnotationKey] != "true" || m.ResourceVersion != resourceVersion {
					t.Errorf("bookmark %+v does not end the initial events at %s", m, resourceVersion)
				}
			}
		})
	}
}
