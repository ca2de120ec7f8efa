package resources

import (
	"context"
	"slices"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	windowsv1 "github.com/idplane/idplane/api/windows/v1"
	"github.com/idplane/idplane/internal/printers"
	"github.com/idplane/idplane/internal/registry/store"
)

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, discoveryv1.AddToScheme, flowcontrolv1.AddToScheme, coordinationv1.AddToScheme, certificatesv1.AddToScheme, storagev1.AddToScheme, windowsv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// nullStorage lets a store be completed without etcd: the wiring is under test, not the storage.
func nullStorage() generic.RESTOptions {
	return generic.RESTOptions{
		StorageConfig:  &storagebackend.ConfigForResource{},
		ResourcePrefix: "/null",
		Decorator: func(*storagebackend.ConfigForResource, string, func(runtime.Object) (string, error), func() runtime.Object, func() runtime.Object, storage.AttrFunc, storage.IndexerFuncs, *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
			return nil, func() {}, nil
		},
	}
}

// built is every described resource's storage, by resource path.
func built(t *testing.T) map[string]rest.Storage {
	t.Helper()
	out := map[string]rest.Storage{}
	for _, g := range []string{"", "coordination.k8s.io", "discovery.k8s.io", "certificates.k8s.io", "storage.k8s.io", "windows.k8s.io", "flowcontrol.apiserver.k8s.io"} {
		for _, build := range Of(g) {
			storages, err := build(newScheme(t), nullStorage())
			if err != nil {
				t.Fatal(err)
			}
			for path, s := range storages {
				if _, dup := out[path]; dup {
					t.Errorf("%s described twice", path)
				}
				out[path] = s
			}
		}
	}
	return out
}

func TestTable(t *testing.T) {
	storages := built(t)
	for _, tc := range []struct {
		path          string
		sample        runtime.Object
		namespaced    bool
		shortNames    []string
		returnDeleted bool
		// reset are the fields the main endpoint leaves alone; statusReset, those of /status.
		reset, statusReset []string
	}{
		{path: "secrets", sample: &corev1.Secret{}, namespaced: true},
		{path: "configmaps", sample: &corev1.ConfigMap{}, namespaced: true, shortNames: []string{"cm"}},
		{path: "serviceaccounts", sample: &corev1.ServiceAccount{}, namespaced: true, shortNames: []string{"sa"}},
		{path: "events", sample: &corev1.Event{}, namespaced: true, shortNames: []string{"ev"}},
		{path: "nodes", sample: &corev1.Node{}, shortNames: []string{"no"}, reset: []string{"status"}, statusReset: []string{"spec"}},
		{path: "persistentvolumes", sample: &corev1.PersistentVolume{}, shortNames: []string{"pv"}, reset: []string{"status"}, statusReset: []string{"spec"}},
		{path: "persistentvolumeclaims", sample: &corev1.PersistentVolumeClaim{}, namespaced: true, shortNames: []string{"pvc"}, reset: []string{"status"}, statusReset: []string{"spec"}},
		{path: "leases", sample: &coordinationv1.Lease{}, namespaced: true},
		{path: "services", sample: &corev1.Service{}, namespaced: true, shortNames: []string{"svc"}, reset: []string{"status"}},
		//lint:ignore SA1019 v1 Endpoints are deprecated, not gone: the kubernetes Service's are served and kept as upstream keeps them.
		{path: "endpoints", sample: &corev1.Endpoints{}, namespaced: true, shortNames: []string{"ep"}},
		{path: "endpointslices", sample: &discoveryv1.EndpointSlice{}, namespaced: true},
		{path: "clustertrustbundles", sample: &certificatesv1.ClusterTrustBundle{}},
		{path: "csinodes", sample: csiNode(), returnDeleted: true, reset: []string{"status"}},
		{path: "volumeattachments", sample: attachment(), returnDeleted: true, reset: []string{"status"}, statusReset: []string{"metadata", "spec"}},
		{path: "gmsacredentialspecs", sample: &windowsv1.GMSACredentialSpec{}},
		{path: "flowschemas", sample: &flowcontrolv1.FlowSchema{}, reset: []string{"status"}, statusReset: []string{"metadata", "spec"}},
		{path: "prioritylevelconfigurations", sample: &flowcontrolv1.PriorityLevelConfiguration{}, reset: []string{"status"}, statusReset: []string{"metadata", "spec"}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			s, ok := storages[tc.path].(*store.Store)
			if !ok {
				t.Fatalf("%s is %T", tc.path, storages[tc.path])
			}
			delete(storages, tc.path)
			if got := s.NamespaceScoped(); got != tc.namespaced {
				t.Errorf("namespaced = %v, want %v", got, tc.namespaced)
			}
			if !slices.Equal(s.ShortNames(), tc.shortNames) {
				t.Errorf("short names = %v, want %v", s.ShortNames(), tc.shortNames)
			}
			if s.ReturnDeletedObject != tc.returnDeleted {
				t.Errorf("delete returns the object = %v, want %v", s.ReturnDeletedObject, tc.returnDeleted)
			}
			if s.TableConvertor == nil || s.TableConvertor != printers.For(s.DefaultQualifiedResource) {
				t.Errorf("table convertor %T is not kubectl's columns of %s", s.TableConvertor, s.DefaultQualifiedResource)
			}
			if _, err := s.ConvertToTable(context.Background(), tc.sample, nil); err != nil {
				t.Errorf("table: %v", err)
			}
			checkReset(t, tc.path, s.GetResetFields(), tc.reset)

			status, hasStatus := storages[tc.path+"/status"]
			if hasStatus != (tc.statusReset != nil) {
				t.Fatalf("has /status = %v, want %v", hasStatus, tc.statusReset != nil)
			}
			if !hasStatus {
				return
			}
			delete(storages, tc.path+"/status")
			sub := status.(*store.Subresource)
			if sub.NamespaceScoped() != tc.namespaced {
				t.Errorf("/status namespaced = %v, want %v", sub.NamespaceScoped(), tc.namespaced)
			}
			checkReset(t, tc.path+"/status", sub.GetResetFields(), tc.statusReset)
		})
	}
	for path := range storages {
		t.Errorf("%s is described but not tested", path)
	}
}

// checkReset compares reset fields with want, in the resource's own version.
func checkReset(t *testing.T, path string, got map[fieldpath.APIVersion]*fieldpath.Set, want []string) {
	t.Helper()
	var paths []string
	for version, set := range got {
		set.Iterate(func(p fieldpath.Path) { paths = append(paths, string(version)+" "+p.String()) })
	}
	slices.Sort(paths)
	var wantPaths []string
	for _, p := range want {
		wantPaths = append(wantPaths, versionOf(path)+" ."+p)
	}
	if !slices.Equal(paths, wantPaths) {
		t.Errorf("%s reset fields = %v, want %v", path, paths, wantPaths)
	}
}

func versionOf(path string) string {
	switch path {
	case "csinodes", "volumeattachments", "volumeattachments/status":
		return "storage.k8s.io/v1"
	case "flowschemas", "flowschemas/status", "prioritylevelconfigurations", "prioritylevelconfigurations/status":
		return "flowcontrol.apiserver.k8s.io/v1"
	}
	return "v1"
}

func csiNode() *storagev1.CSINode {
	return &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", ResourceVersion: "2"},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
			{Name: "ebs.csi.aws.com", NodeID: "i-0abc", Allocatable: &storagev1.VolumeNodeResources{Count: ptr[int32](25)}},
		}},
	}
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

func TestCSINodeStrategy(t *testing.T) {
	ctx := context.Background()
	s := built(t)["csinodes"].(*store.Store).UpdateStrategy.(*store.Strategy[*storagev1.CSINode])

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

func TestVolumeAttachmentStrategy(t *testing.T) {
	ctx := context.Background()
	s := built(t)["volumeattachments"].(*store.Store).UpdateStrategy.(*store.Strategy[*storagev1.VolumeAttachment])

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

func TestVolumeAttachmentStatusStrategy(t *testing.T) {
	ctx := context.Background()
	var s *store.Strategy[*storagev1.VolumeAttachment]
	for _, r := range table() {
		if va, ok := r.(resource[*storagev1.VolumeAttachment]); ok {
			s = store.NewStrategy(newScheme(t), va.withVersion(*va.status))
		}
	}
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

// TestFlowControlStrategy: the generation counts spec changes only, so the config producer can
// tell an edited object (generation > 1) from one it created; a status write keeps the spec and
// metadata but managed fields.
func TestFlowControlStrategy(t *testing.T) {
	ctx := context.Background()
	storages := built(t)
	main := storages["flowschemas"].(*store.Store)

	fs := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Spec:       flowcontrolv1.FlowSchemaSpec{MatchingPrecedence: 100},
		Status:     flowcontrolv1.FlowSchemaStatus{Conditions: []flowcontrolv1.FlowSchemaCondition{{Type: "Dangling"}}},
	}
	main.CreateStrategy.PrepareForCreate(ctx, fs)
	if fs.Generation != 1 || len(fs.Status.Conditions) != 0 {
		t.Fatalf("after create: generation %d, status %v; want 1 and none", fs.Generation, fs.Status)
	}
	fs.Status.Conditions = []flowcontrolv1.FlowSchemaCondition{{Type: "Dangling", Status: "False"}}

	relabelled := fs.DeepCopy()
	relabelled.Labels = map[string]string{"x": "y"}
	relabelled.Status = flowcontrolv1.FlowSchemaStatus{}
	main.UpdateStrategy.PrepareForUpdate(ctx, relabelled, fs)
	if relabelled.Generation != 1 || len(relabelled.Status.Conditions) != 1 {
		t.Errorf("metadata-only update: generation %d, status %v; want 1 and the stored status", relabelled.Generation, relabelled.Status)
	}

	edited := fs.DeepCopy()
	edited.Spec.MatchingPrecedence = 200
	main.UpdateStrategy.PrepareForUpdate(ctx, edited, fs)
	if edited.Generation != 2 {
		t.Errorf("spec update: generation %d, want 2", edited.Generation)
	}

	byConsumer := fs.DeepCopy()
	byConsumer.Spec.MatchingPrecedence = 300
	byConsumer.Labels = map[string]string{"sneaky": "yes"}
	byConsumer.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "consumer"}}
	byConsumer.Status.Conditions[0].Status = "True"
	var status *store.Strategy[*flowcontrolv1.FlowSchema]
	for _, r := range table() {
		if row, ok := r.(resource[*flowcontrolv1.FlowSchema]); ok {
			status = store.NewStrategy(newScheme(t), row.withVersion(*row.status))
		}
	}
	status.PrepareForUpdate(ctx, byConsumer, fs)
	if byConsumer.Spec.MatchingPrecedence != 100 || byConsumer.Labels != nil || len(byConsumer.ManagedFields) != 1 || byConsumer.Status.Conditions[0].Status != "True" {
		t.Errorf("status write kept %+v", byConsumer)
	}
}
