package volumeattachment

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
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

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

func attachment() *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: "csi-1", ResourceVersion: "5", Labels: map[string]string{"a": "b"}},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: "ebs.csi.aws.com",
			Source:   storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr("pv-1")},
			NodeName: "node-1",
		},
	}
}

func ptr[T any](v T) *T { return &v }

func TestStrategy(t *testing.T) {
	ctx := context.Background()
	s := strategy(newScheme(t))
	if s.NamespaceScoped() {
		t.Error("volume attachments are namespaced, want cluster scoped")
	}

	va := attachment()
	va.Status = storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: map[string]string{"k": "v"}}
	s.PrepareForCreate(ctx, va)
	if va.Status.Attached || va.Status.AttachmentMetadata != nil {
		t.Errorf("create kept status %+v, want it cleared", va.Status)
	}
	if errs := s.Validate(ctx, va); len(errs) != 0 {
		t.Errorf("valid attachment: %v", errs)
	}

	old := attachment()
	old.Status.Attached = true
	upd := old.DeepCopy()
	upd.Status.Attached = false
	upd.Spec.NodeName = "node-2"
	s.PrepareForUpdate(ctx, upd, old)
	if !upd.Status.Attached {
		t.Error("main endpoint changed status")
	}
	if errs := s.ValidateUpdate(ctx, upd, old); len(errs) != 1 || errs[0].Field != "spec" {
		t.Errorf("moving the attachment to another node: %v, want one error on spec", errs)
	}
}

func TestStatusStrategy(t *testing.T) {
	ctx := context.Background()
	s := statusStrategy(newScheme(t))
	old := attachment()
	upd := old.DeepCopy()
	upd.Spec.NodeName = "node-2"
	upd.Labels = map[string]string{"a": "changed"}
	upd.Finalizers = []string{"example.com/keep"}
	upd.Status = storagev1.VolumeAttachmentStatus{Attached: true, AttachError: &storagev1.VolumeError{Message: "timeout", ErrorCode: ptr[int32](4)}}
	s.PrepareForUpdate(ctx, upd, old)
	if upd.Spec.NodeName != "node-1" || upd.Labels["a"] != "b" || upd.Finalizers != nil {
		t.Errorf("status endpoint changed spec or metadata: node %q labels %v finalizers %v", upd.Spec.NodeName, upd.Labels, upd.Finalizers)
	}
	if !upd.Status.Attached || upd.Status.AttachError == nil || upd.Status.AttachError.ErrorCode == nil {
		t.Errorf("status endpoint dropped status: %+v", upd.Status)
	}
	if errs := s.ValidateUpdate(ctx, upd, old); len(errs) != 0 {
		t.Errorf("valid status update: %v", errs)
	}
	upd.Status.DetachError = &storagev1.VolumeError{ErrorCode: ptr[int32](-1)}
	if errs := s.ValidateUpdate(ctx, upd, old); len(errs) != 1 || errs[0].Field != "status.detachError.errorCode" {
		t.Errorf("negative error code: %v, want one error on status.detachError.errorCode", errs)
	}
}

// nullStorage lets the store be completed without etcd, to inspect how NewREST wires it.
func nullStorage() generic.RESTOptions {
	return generic.RESTOptions{
		StorageConfig:  &storagebackend.ConfigForResource{},
		ResourcePrefix: "/volumeattachments",
		Decorator: func(*storagebackend.ConfigForResource, string, func(runtime.Object) (string, error), func() runtime.Object, func() runtime.Object, storage.AttrFunc, storage.IndexerFuncs, *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
			return nil, func() {}, nil
		},
	}
}

func TestNewREST(t *testing.T) {
	storages, err := NewREST(newScheme(t), nullStorage())
	if err != nil {
		t.Fatal(err)
	}
	if len(storages) != 2 {
		t.Errorf("got %d endpoints, want volumeattachments and volumeattachments/status", len(storages))
	}
	main, ok := storages["volumeattachments"].(*store.Store)
	if !ok {
		t.Fatalf("volumeattachments is %T", storages["volumeattachments"])
	}
	if !main.ReturnDeletedObject {
		t.Error("delete does not return the deleted attachment")
	}
	if _, err := main.ConvertToTable(context.Background(), attachment(), nil); err != nil {
		t.Errorf("table: %v", err)
	}

	status, ok := storages["volumeattachments/status"].(*store.Subresource)
	if !ok {
		t.Fatalf("volumeattachments/status is %T", storages["volumeattachments/status"])
	}
	reset := status.GetResetFields()["storage.k8s.io/v1"]
	if reset == nil || !reset.Has(fieldpath.MakePathOrDie("spec")) || reset.Has(fieldpath.MakePathOrDie("status")) {
		t.Errorf("status reset fields = %v, want spec and not status", reset)
	}
}
