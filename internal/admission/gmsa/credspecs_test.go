package gmsa

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"
)

// The spec informer holds objects without managed fields.
func TestInformerCredSpecsDropManagedFields(t *testing.T) {
	spec := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": Resource.GroupVersion().String(), "kind": "GMSACredentialSpec",
		"metadata": map[string]any{"name": "webapp1", "managedFields": []any{map[string]any{"manager": "kubectl"}}},
		"credspec": map[string]any{"ActiveDirectoryConfig": map[string]any{}},
	}}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{Resource: "GMSACredentialSpecList"}, spec)
	f := dynamicinformer.NewDynamicSharedInformerFactory(client, time.Minute)
	NewInformerCredSpecs(f, client)
	stop := make(chan struct{})
	defer f.Shutdown()
	defer close(stop)
	f.Start(stop)
	informer := f.ForResource(Resource).Informer()
	if !cache.WaitForCacheSync(stop, informer.HasSynced) {
		t.Fatal("informer did not sync")
	}
	obj, ok, err := informer.GetStore().GetByKey("webapp1")
	if err != nil || !ok {
		t.Fatalf("spec not cached: %v %v", ok, err)
	}
	if mf := obj.(*unstructured.Unstructured).GetManagedFields(); mf != nil {
		t.Errorf("the informer holds managed fields: %v", mf)
	}
}
