package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func validVolumeAttachment() *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: "csi-0123456789abcdef"},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: "ebs.csi.aws.com",
			Source:   storagev1.VolumeAttachmentSource{PersistentVolumeName: ptrTo("pv-1")},
			NodeName: "node-1",
		},
	}
}

func inlineSpec() *corev1.PersistentVolumeSpec {
	return &corev1.PersistentVolumeSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{
			CSI: &corev1.CSIPersistentVolumeSource{Driver: "pd.csi.storage.gke.io", VolumeHandle: "projects/p/disks/d"},
		},
	}
}

func TestValidateVolumeAttachment(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*storagev1.VolumeAttachment)
		want   []want
	}{
		{name: "valid", mutate: func(*storagev1.VolumeAttachment) {}},
		{name: "valid attacher with upper case", mutate: func(va *storagev1.VolumeAttachment) { va.Spec.Attacher = "Disk.CSI.Example.com" }},
		{
			name: "valid inline spec",
			mutate: func(va *storagev1.VolumeAttachment) {
				va.Spec.Source = storagev1.VolumeAttachmentSource{InlineVolumeSpec: inlineSpec()}
				va.Spec.Source.InlineVolumeSpec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
				va.Spec.Source.InlineVolumeSpec.VolumeMode = ptrTo(corev1.PersistentVolumeFilesystem)
			},
		},
		{
			name: "valid status",
			mutate: func(va *storagev1.VolumeAttachment) {
				va.Status = storagev1.VolumeAttachmentStatus{
					Attached:           true,
					AttachmentMetadata: map[string]string{"devicePath": "/dev/xvdba"},
					AttachError:        &storagev1.VolumeError{Message: strings.Repeat("x", 1024), ErrorCode: ptrTo[int32](8)},
				}
			},
		},
		{name: "bad name", mutate: func(va *storagev1.VolumeAttachment) { va.Name = "Csi_1" }, want: []want{invalid("metadata.name")}},
		{name: "unqualified finalizer", mutate: func(va *storagev1.VolumeAttachment) { va.Finalizers = []string{"attacher"} }, want: []want{invalid("metadata.finalizers[0]")}},
		{name: "namespace set", mutate: func(va *storagev1.VolumeAttachment) { va.Namespace = "default" }, want: []want{forbidden("metadata.namespace")}},
		{name: "no attacher", mutate: func(va *storagev1.VolumeAttachment) { va.Spec.Attacher = "" }, want: []want{required("spec.attacher")}},
		{name: "attacher not a DNS subdomain", mutate: func(va *storagev1.VolumeAttachment) { va.Spec.Attacher = "ebs/csi" }, want: []want{invalid("spec.attacher")}},
		{name: "attacher too long", mutate: func(va *storagev1.VolumeAttachment) { va.Spec.Attacher = strings.Repeat("a", 64) }, want: []want{tooLong("spec.attacher")}},
		{name: "no node", mutate: func(va *storagev1.VolumeAttachment) { va.Spec.NodeName = "" }, want: []want{invalid("spec.nodeName")}},
		{name: "bad node name", mutate: func(va *storagev1.VolumeAttachment) { va.Spec.NodeName = "Node 1" }, want: []want{invalid("spec.nodeName")}},
		{name: "no source", mutate: func(va *storagev1.VolumeAttachment) { va.Spec.Source = storagev1.VolumeAttachmentSource{} }, want: []want{required("spec.source")}},
		{
			name:   "both sources",
			mutate: func(va *storagev1.VolumeAttachment) { va.Spec.Source.InlineVolumeSpec = inlineSpec() },
			want:   []want{forbidden("spec.source")},
		},
		{name: "empty PV name", mutate: func(va *storagev1.VolumeAttachment) { va.Spec.Source.PersistentVolumeName = ptrTo("") }, want: []want{required("spec.source.persistentVolumeName")}},
		{name: "bad PV name", mutate: func(va *storagev1.VolumeAttachment) { va.Spec.Source.PersistentVolumeName = ptrTo("PV_1") }, want: []want{invalid("spec.source.persistentVolumeName")}},
		{
			name: "inline spec of another volume type",
			mutate: func(va *storagev1.VolumeAttachment) {
				spec := inlineSpec()
				spec.CSI = nil
				spec.NFS = &corev1.NFSVolumeSource{Server: "nfs.example.com", Path: "/exports"}
				va.Spec.Source = storagev1.VolumeAttachmentSource{InlineVolumeSpec: spec}
			},
			want: []want{required("spec.source.inlineVolumeSpec.csi")},
		},
		{
			name: "inline spec with PV-only fields",
			mutate: func(va *storagev1.VolumeAttachment) {
				spec := inlineSpec()
				spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: "claim"}
				spec.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
				spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete
				spec.NodeAffinity = &corev1.VolumeNodeAffinity{}
				spec.StorageClassName = "standard"
				spec.VolumeMode = ptrTo(corev1.PersistentVolumeBlock)
				va.Spec.Source = storagev1.VolumeAttachmentSource{InlineVolumeSpec: spec}
			},
			want: []want{
				forbidden("spec.source.inlineVolumeSpec.claimRef"),
				forbidden("spec.source.inlineVolumeSpec.capacity"),
				forbidden("spec.source.inlineVolumeSpec.persistentVolumeReclaimPolicy"),
				forbidden("spec.source.inlineVolumeSpec.nodeAffinity"),
				forbidden("spec.source.inlineVolumeSpec.storageClassName"),
				forbidden("spec.source.inlineVolumeSpec.volumeMode"),
			},
		},
		{
			name: "inline spec without access modes or handle",
			mutate: func(va *storagev1.VolumeAttachment) {
				spec := inlineSpec()
				spec.AccessModes = nil
				spec.CSI.VolumeHandle = ""
				va.Spec.Source = storagev1.VolumeAttachmentSource{InlineVolumeSpec: spec}
			},
			want: []want{
				required("spec.source.inlineVolumeSpec.accessModes"),
				required("spec.source.inlineVolumeSpec.csi.volumeHandle"),
			},
		},
		{
			name: "inline spec with empty volume attributes class",
			mutate: func(va *storagev1.VolumeAttachment) {
				spec := inlineSpec()
				spec.VolumeAttributesClassName = ptrTo("")
				va.Spec.Source = storagev1.VolumeAttachmentSource{InlineVolumeSpec: spec}
			},
			want: []want{required("spec.source.inlineVolumeSpec.volumeAttributesClassName")},
		},
		{
			name: "attachment metadata too large",
			mutate: func(va *storagev1.VolumeAttachment) {
				va.Status.AttachmentMetadata = map[string]string{"k": strings.Repeat("v", 256*1024)}
			},
			want: []want{tooLong("status.attachmentMetadata")},
		},
		{
			name: "error messages too long",
			mutate: func(va *storagev1.VolumeAttachment) {
				va.Status.AttachError = &storagev1.VolumeError{Message: strings.Repeat("x", 1025)}
				va.Status.DetachError = &storagev1.VolumeError{Message: strings.Repeat("x", 1025)}
			},
			want: []want{tooLong("status.attachError.message"), tooLong("status.detachError.message")},
		},
		{
			name: "negative error code",
			mutate: func(va *storagev1.VolumeAttachment) {
				va.Status.DetachError = &storagev1.VolumeError{ErrorCode: ptrTo[int32](-1)}
			},
			want: []want{invalid("status.detachError.errorCode")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			va := validVolumeAttachment()
			tc.mutate(va)
			expectErrors(t, ValidateVolumeAttachment(va), tc.want...)
		})
	}
}

func TestValidateVolumeAttachmentUpdate(t *testing.T) {
	old := validVolumeAttachment()
	old.ResourceVersion = "7"
	tests := []struct {
		name   string
		mutate func(*storagev1.VolumeAttachment)
		want   []want
	}{
		{name: "unchanged", mutate: func(*storagev1.VolumeAttachment) {}},
		{
			name: "labels and status change",
			mutate: func(va *storagev1.VolumeAttachment) {
				va.Labels = map[string]string{"team": "storage"}
				va.Status.Attached = true
			},
		},
		{name: "node change", mutate: func(va *storagev1.VolumeAttachment) { va.Spec.NodeName = "node-2" }, want: []want{invalid("spec")}},
		{name: "attacher change", mutate: func(va *storagev1.VolumeAttachment) { va.Spec.Attacher = "other.csi.io" }, want: []want{invalid("spec")}},
		{name: "source change", mutate: func(va *storagev1.VolumeAttachment) { va.Spec.Source.PersistentVolumeName = ptrTo("pv-2") }, want: []want{invalid("spec")}},
		{name: "rename", mutate: func(va *storagev1.VolumeAttachment) { va.Name = "csi-other" }, want: []want{invalid("metadata.name")}},
		{
			name: "status error too long",
			mutate: func(va *storagev1.VolumeAttachment) {
				va.Status.AttachError = &storagev1.VolumeError{Message: strings.Repeat("x", 2000)}
			},
			want: []want{tooLong("status.attachError.message")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			va := old.DeepCopy()
			tc.mutate(va)
			expectErrors(t, ValidateVolumeAttachmentUpdate(va, old), tc.want...)
			expectErrors(t, ValidateVolumeAttachmentStatusUpdate(va, old), tc.want...)
		})
	}
}

func validCSINode() *storagev1.CSINode {
	return &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
			{
				Name:         "ebs.csi.aws.com",
				NodeID:       "i-0123456789abcdef0",
				TopologyKeys: []string{"topology.ebs.csi.aws.com/zone", "kubernetes.io/os"},
				Allocatable:  &storagev1.VolumeNodeResources{Count: ptrTo[int32](25)},
			},
			{Name: "nfs.csi.k8s.io", NodeID: "node-1"},
		}},
	}
}

func TestValidateCSINode(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*storagev1.CSINode)
		want   []want
	}{
		{name: "valid", mutate: func(*storagev1.CSINode) {}},
		{name: "no drivers", mutate: func(n *storagev1.CSINode) { n.Spec.Drivers = nil }},
		{name: "zero allocatable", mutate: func(n *storagev1.CSINode) { n.Spec.Drivers[0].Allocatable.Count = ptrTo[int32](0) }},
		{name: "allocatable without count", mutate: func(n *storagev1.CSINode) { n.Spec.Drivers[0].Allocatable.Count = nil }},
		{name: "longest node ID", mutate: func(n *storagev1.CSINode) { n.Spec.Drivers[1].NodeID = strings.Repeat("a", 256) }},
		{name: "bad name", mutate: func(n *storagev1.CSINode) { n.Name = "Node_1" }, want: []want{invalid("metadata.name")}},
		{name: "no driver name", mutate: func(n *storagev1.CSINode) { n.Spec.Drivers[1].Name = "" }, want: []want{required("spec.drivers[1].name")}},
		{name: "bad driver name", mutate: func(n *storagev1.CSINode) { n.Spec.Drivers[1].Name = "nfs csi" }, want: []want{invalid("spec.drivers[1].name")}},
		{name: "driver name too long", mutate: func(n *storagev1.CSINode) { n.Spec.Drivers[1].Name = strings.Repeat("a", 64) }, want: []want{tooLong("spec.drivers[1].name")}},
		{name: "duplicate driver", mutate: func(n *storagev1.CSINode) { n.Spec.Drivers[1].Name = "ebs.csi.aws.com" }, want: []want{duplicate("spec.drivers[1].name")}},
		{name: "no node ID", mutate: func(n *storagev1.CSINode) { n.Spec.Drivers[0].NodeID = "" }, want: []want{required("spec.drivers[0].nodeID")}},
		{name: "node ID too long", mutate: func(n *storagev1.CSINode) { n.Spec.Drivers[0].NodeID = strings.Repeat("a", 257) }, want: []want{invalid("spec.drivers[0].nodeID")}},
		{name: "negative allocatable", mutate: func(n *storagev1.CSINode) { n.Spec.Drivers[0].Allocatable.Count = ptrTo[int32](-1) }, want: []want{invalid("spec.drivers[0].allocatable.count")}},
		{name: "empty topology key", mutate: func(n *storagev1.CSINode) { n.Spec.Drivers[0].TopologyKeys[1] = "" }, want: []want{required("spec.drivers[0]")}},
		{name: "duplicate topology key", mutate: func(n *storagev1.CSINode) { n.Spec.Drivers[0].TopologyKeys[1] = "topology.ebs.csi.aws.com/zone" }, want: []want{duplicate("spec.drivers[0]")}},
		{name: "bad topology key", mutate: func(n *storagev1.CSINode) { n.Spec.Drivers[0].TopologyKeys[1] = "zone/a/b" }, want: []want{invalid("spec.drivers[0]")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := validCSINode()
			tc.mutate(n)
			expectErrors(t, ValidateCSINode(n), tc.want...)
		})
	}
}

func TestValidateCSINodeUpdate(t *testing.T) {
	old := validCSINode()
	old.ResourceVersion = "3"
	tests := []struct {
		name   string
		mutate func(*storagev1.CSINode)
		want   []want
	}{
		{name: "unchanged", mutate: func(*storagev1.CSINode) {}},
		{
			name: "driver registers",
			mutate: func(n *storagev1.CSINode) {
				n.Spec.Drivers = append(n.Spec.Drivers, storagev1.CSINodeDriver{Name: "smb.csi.k8s.io", NodeID: "node-1"})
			},
		},
		{name: "driver unregisters", mutate: func(n *storagev1.CSINode) { n.Spec.Drivers = n.Spec.Drivers[1:] }},
		{
			name: "driver re-registers with a new ID after removal",
			mutate: func(n *storagev1.CSINode) {
				n.Spec.Drivers = []storagev1.CSINodeDriver{{Name: "nfs.csi.k8s.io", NodeID: "node-1"}, {Name: "other.csi.k8s.io", NodeID: "x"}}
			},
		},
		{name: "allocatable count changes", mutate: func(n *storagev1.CSINode) { n.Spec.Drivers[0].Allocatable.Count = ptrTo[int32](24) }},
		{name: "allocatable added", mutate: func(n *storagev1.CSINode) {
			n.Spec.Drivers[1].Allocatable = &storagev1.VolumeNodeResources{Count: ptrTo[int32](8)}
		}},
		{name: "allocatable removed", mutate: func(n *storagev1.CSINode) { n.Spec.Drivers[0].Allocatable = nil }},
		{name: "node ID changes", mutate: func(n *storagev1.CSINode) { n.Spec.Drivers[1].NodeID = "node-one" }, want: []want{invalid("spec.drivers")}},
		{name: "topology keys change", mutate: func(n *storagev1.CSINode) { n.Spec.Drivers[0].TopologyKeys = n.Spec.Drivers[0].TopologyKeys[:1] }, want: []want{invalid("spec.drivers")}},
		{
			name:   "invalid count still rejected",
			mutate: func(n *storagev1.CSINode) { n.Spec.Drivers[0].Allocatable.Count = ptrTo[int32](-5) },
			want:   []want{invalid("spec.drivers[0].allocatable.count")},
		},
		{name: "rename", mutate: func(n *storagev1.CSINode) { n.Name = "node-2" }, want: []want{invalid("metadata.name")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := old.DeepCopy()
			tc.mutate(n)
			expectErrors(t, ValidateCSINodeUpdate(n, old), tc.want...)
		})
	}
}
