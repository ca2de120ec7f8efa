package csinode

import (
	"context"
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"

	"github.com/idplane/idplane/internal/registry/store"
)

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := storagev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func csiNode() *storagev1.CSINode {
	return &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", ResourceVersion: "2"},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
			{Name: "ebs.csi.aws.com", NodeID: "i-0abc", Allocatable: &storagev1.VolumeNodeResources{Count: ptr[int32](25)}},
		}},
	}
}

func ptr[T any](v T) *T { return &v }

func TestStrategy(t *testing.T) {
	ctx := context.Background()
	s := strategy(newScheme(t))
	if s.NamespaceScoped() {
		t.Error("CSI nodes are namespaced, want cluster scoped")
	}

	health := storagev1.CSINodeStatus{StorageHealth: []storagev1.StorageHealth{{Name: "ebs.csi.aws.com"}}}
	n := csiNode()
	n.Status = health
	s.PrepareForCreate(ctx, n)
	if n.Status.StorageHealth != nil {
		t.Errorf("create kept status %+v, want it cleared", n.Status)
	}
	if errs := s.Validate(ctx, n); len(errs) != 0 {
		t.Errorf("valid CSI node: %v", errs)
	}

	old := csiNode()
	upd := old.DeepCopy()
	upd.Status = health
	upd.Spec.Drivers[0].Allocatable.Count = ptr[int32](20)
	s.PrepareForUpdate(ctx, upd, old)
	if upd.Status.StorageHealth != nil {
		t.Error("update wrote status")
	}
	if errs := s.ValidateUpdate(ctx, upd, old); len(errs) != 0 {
		t.Errorf("allocatable count change: %v", errs)
	}
	upd.Spec.Drivers[0].NodeID = "i-0def"
	if errs := s.ValidateUpdate(ctx, upd, old); len(errs) != 1 || errs[0].Field != "spec.drivers" {
		t.Errorf("node ID change: %v, want one error on spec.drivers", errs)
	}
}

func TestNewREST(t *testing.T) {
	// The decorator stands in for etcd: NewREST's wiring is under test, not the storage.
	opts := generic.RESTOptions{
		StorageConfig:  &storagebackend.ConfigForResource{},
		ResourcePrefix: "/csinodes",
		Decorator: func(*storagebackend.ConfigForResource, string, func(runtime.Object) (string, error), func() runtime.Object, func() runtime.Object, storage.AttrFunc, storage.IndexerFuncs, *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
			return nil, func() {}, nil
		},
	}
	storages, err := NewREST(newScheme(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(storages) != 1 {
		t.Errorf("got %d endpoints, want csinodes only", len(storages))
	}
	s, ok := storages["csinodes"].(*store.Store)
	if !ok {
		t.Fatalf("csinodes is %T", storages["csinodes"])
	}
	if !s.ReturnDeletedObject {
		t.Error("delete does not return the deleted CSI node")
	}
	if _, err := s.ConvertToTable(context.Background(), csiNode(), nil); err != nil {
		t.Errorf("table: %v", err)
	}
}
