package validation

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestStorageErrorMessages pins the full text (type, field path, value and detail) of every
// error the persistent volume, claim and storage rules report, in testdata/storage_errors.txt:
// users read them, so they change only on purpose. A detail's first line is kept; what follows
// it is a cmp diff, whose spacing go-cmp varies on purpose.
func TestStorageErrorMessages(t *testing.T) {
	pv := func(mutate func(*corev1.PersistentVolume)) *corev1.PersistentVolume { return mutated(validPV, mutate) }
	pvc := func(mutate func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
		return mutated(validPVC, mutate)
	}
	va := func(mutate func(*storagev1.VolumeAttachment)) *storagev1.VolumeAttachment {
		return mutated(validVolumeAttachment, mutate)
	}
	csiNode := func(mutate func(*storagev1.CSINode)) *storagev1.CSINode { return mutated(validCSINode, mutate) }
	bound := func(c *corev1.PersistentVolumeClaim) {
		c.Spec.VolumeName = "pv-1"
		c.Status.Phase = corev1.ClaimBound
		c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	}
	quantity := resource.MustParse
	secret := func(name, namespace string) *corev1.SecretReference {
		return &corev1.SecretReference{Name: name, Namespace: namespace}
	}

	cases := []struct {
		name string
		errs field.ErrorList
	}{
		{"pv: many spec errors", ValidatePersistentVolume(pv(func(v *corev1.PersistentVolume) {
			v.Namespace = "default"
			v.Spec.Capacity = corev1.ResourceList{corev1.ResourceCPU: quantity("-1")}
			v.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{"ReadSometimes", corev1.ReadWriteOncePod, corev1.ReadOnlyMany}
			v.Spec.PersistentVolumeReclaimPolicy = "Shred"
			v.Spec.StorageClassName = "Not_A_Class"
			v.Spec.VolumeMode = ptrTo[corev1.PersistentVolumeMode]("Tape")
			v.Spec.VolumeAttributesClassName = ptrTo("Not_A_Class")
		}))},
		{"pv: no capacity, no access modes", ValidatePersistentVolume(pv(func(v *corev1.PersistentVolume) {
			v.Spec.Capacity = nil
			v.Spec.AccessModes = nil
		}))},
		{"pv: zero storage", ValidatePersistentVolume(pv(func(v *corev1.PersistentVolume) {
			v.Spec.Capacity[corev1.ResourceStorage] = quantity("0")
		}))},
		{"pv: no source", ValidatePersistentVolume(pv(func(v *corev1.PersistentVolume) { v.Spec.CSI = nil }))},
		{"pv: two sources", ValidatePersistentVolume(pv(func(v *corev1.PersistentVolume) {
			v.Spec.NFS = &corev1.NFSVolumeSource{Server: "nfs", Path: "/export"}
		}))},
		{"pv: csi source", ValidatePersistentVolume(pv(func(v *corev1.PersistentVolume) {
			v.Spec.CSI = &corev1.CSIPersistentVolumeSource{
				Driver:                     "Bad_Driver",
				ControllerPublishSecretRef: secret("", ""),
				ControllerExpandSecretRef:  secret("Bad_Name", "Bad_Namespace"),
				NodePublishSecretRef:       secret("ok", ""),
				NodeStageSecretRef:         secret("", "ok"),
				NodeExpandSecretRef:        secret("ok", "ok"),
			}
		}))},
		{"pv: local without affinity, empty path", ValidatePersistentVolume(pv(func(v *corev1.PersistentVolume) {
			v.Spec.CSI = nil
			v.Spec.Local = &corev1.LocalVolumeSource{}
		}))},
		{"pv: local with backsteps", ValidatePersistentVolume(pv(func(v *corev1.PersistentVolume) {
			v.Spec.CSI = nil
			v.Spec.Local = &corev1.LocalVolumeSource{Path: "/mnt/../etc"}
			v.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{}
		}))},
		{"pv: node affinity with an empty selector", ValidatePersistentVolume(pv(func(v *corev1.PersistentVolume) {
			v.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{}}
		}))},
		{"pv: recycling the host root", ValidatePersistentVolume(pv(func(v *corev1.PersistentVolume) {
			v.Spec.CSI = nil
			v.Spec.HostPath = &corev1.HostPathVolumeSource{Path: "//"}
			v.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRecycle
		}))},
		{"pv: legacy plugin source", ValidatePersistentVolume(pv(func(v *corev1.PersistentVolume) {
			v.Spec.CSI = nil
			v.Spec.ISCSI = &corev1.ISCSIPersistentVolumeSource{}
		}))},
		{"pv: empty volume attributes class without csi", ValidatePersistentVolume(pv(func(v *corev1.PersistentVolume) {
			v.Spec.CSI = nil
			v.Spec.NFS = &corev1.NFSVolumeSource{Server: "nfs", Path: "/export"}
			v.Spec.VolumeAttributesClassName = ptrTo("")
		}))},
		{"pv update: source, mode, affinity and class changed", ValidatePersistentVolumeUpdate(
			pv(func(v *corev1.PersistentVolume) {
				v.ResourceVersion = "1"
				v.Spec.CSI.VolumeHandle = "vol-2"
				v.Spec.VolumeMode = ptrTo(corev1.PersistentVolumeBlock)
				v.Spec.NodeAffinity = nil
			}),
			pv(func(v *corev1.PersistentVolume) {
				v.ResourceVersion = "1"
				v.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}},
				}}}}
				v.Spec.VolumeAttributesClassName = ptrTo("gold")
			}))},
		{"pv update: adding a controller expand secret", ValidatePersistentVolumeUpdate(
			pv(func(v *corev1.PersistentVolume) {
				v.ResourceVersion = "1"
				v.Spec.CSI.ControllerExpandSecretRef = secret("expand", "kube-system")
			}),
			pv(func(v *corev1.PersistentVolume) { v.ResourceVersion = "1" }))},
		{"pv status update: name changed", ValidatePersistentVolumeStatusUpdate(
			pv(func(v *corev1.PersistentVolume) { v.ResourceVersion = "1"; v.Name = "pv-2" }),
			pv(func(v *corev1.PersistentVolume) { v.ResourceVersion = "1" }))},

		{"pvc: many spec errors", ValidatePersistentVolumeClaim(pvc(func(c *corev1.PersistentVolumeClaim) {
			c.Namespace = ""
			c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod, corev1.ReadWriteMany, "Sometimes"}
			c.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}}
			c.Spec.Resources.Requests[corev1.ResourceStorage] = quantity("-1Gi")
			c.Spec.StorageClassName = ptrTo("Not_A_Class")
			c.Spec.VolumeMode = ptrTo[corev1.PersistentVolumeMode]("Tape")
			c.Spec.VolumeAttributesClassName = ptrTo("Not_A_Class")
		}))},
		{"pvc: no access modes, no storage", ValidatePersistentVolumeClaim(pvc(func(c *corev1.PersistentVolumeClaim) {
			c.Spec.AccessModes = nil
			c.Spec.Resources.Requests = nil
			c.Spec.StorageClassName = ptrTo("")
			c.Spec.VolumeAttributesClassName = ptrTo("")
		}))},
		{"pvc: data sources", ValidatePersistentVolumeClaim(pvc(func(c *corev1.PersistentVolumeClaim) {
			c.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "Snapshot"}
			c.Spec.DataSourceRef = &corev1.TypedObjectReference{APIGroup: ptrTo("Bad_Group"), Name: "src"}
		}))},
		{"pvc: data source ref in another namespace", ValidatePersistentVolumeClaim(pvc(func(c *corev1.PersistentVolumeClaim) {
			c.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "src"}
			c.Spec.DataSourceRef = &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: "src", Namespace: ptrTo("Bad_Namespace")}
		}))},
		{"pvc: data source and ref disagree", ValidatePersistentVolumeClaim(pvc(func(c *corev1.PersistentVolumeClaim) {
			c.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "a"}
			c.Spec.DataSourceRef = &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: "b"}
		}))},
		{"pvc update: spec, class annotation, mode and attributes class", ValidatePersistentVolumeClaimUpdate(
			pvc(func(c *corev1.PersistentVolumeClaim) {
				c.ResourceVersion = "1"
				c.Annotations = map[string]string{corev1.BetaStorageClassAnnotation: "new"}
				c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany}
				c.Spec.VolumeMode = ptrTo(corev1.PersistentVolumeBlock)
			}),
			pvc(func(c *corev1.PersistentVolumeClaim) {
				c.ResourceVersion = "1"
				c.Annotations = map[string]string{corev1.BetaStorageClassAnnotation: "old"}
				c.Spec.VolumeAttributesClassName = ptrTo("gold")
			}))},
		{"pvc update: attributes class emptied, shrunk below capacity", ValidatePersistentVolumeClaimUpdate(
			pvc(func(c *corev1.PersistentVolumeClaim) {
				c.ResourceVersion = "1"
				bound(c)
				c.Spec.Resources.Requests[corev1.ResourceStorage] = quantity("1Gi")
				c.Spec.VolumeAttributesClassName = ptrTo("")
			}),
			pvc(func(c *corev1.PersistentVolumeClaim) {
				c.ResourceVersion = "1"
				bound(c)
				c.Spec.Resources.Requests[corev1.ResourceStorage] = quantity("2Gi")
				c.Spec.VolumeAttributesClassName = ptrTo("gold")
			}))},
		{"pvc update: attributes class cleared", ValidatePersistentVolumeClaimUpdate(
			pvc(func(c *corev1.PersistentVolumeClaim) { c.ResourceVersion = "1" }),
			pvc(func(c *corev1.PersistentVolumeClaim) {
				c.ResourceVersion = "1"
				c.Spec.VolumeAttributesClassName = ptrTo("gold")
			}))},
		{"pvc status update: statuses and allocations", ValidatePersistentVolumeClaimStatusUpdate(
			pvc(func(c *corev1.PersistentVolumeClaim) {
				c.ResourceVersion = "1"
				c.Spec.AccessModes = nil
				c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: quantity("-1")}
				c.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{
					corev1.ResourceCPU:     corev1.PersistentVolumeClaimNodeResizePending,
					corev1.ResourceStorage: "Resizing",
					"example.com/Bad Key!": corev1.PersistentVolumeClaimNodeResizePending,
				}
				c.Status.AllocatedResources = corev1.ResourceList{
					corev1.ResourceMemory:   quantity("1Gi"),
					corev1.ResourceStorage:  quantity("-1"),
					"example.com/iops":      quantity("1.5"),
					"example.com/Bad Key!x": quantity("1"),
				}
			}),
			pvc(func(c *corev1.PersistentVolumeClaim) { c.ResourceVersion = "1" }))},
		{"claim template metadata", validateClaimTemplateMeta(&metav1.ObjectMeta{
			Name:        "x",
			Labels:      map[string]string{"Bad Label": "v"},
			Annotations: map[string]string{"Bad Annotation": "v"},
		}, field.NewPath("template", "metadata"))},

		{"volume attachment: spec errors", ValidateVolumeAttachment(va(func(a *storagev1.VolumeAttachment) {
			a.Spec.Attacher = ""
			a.Spec.NodeName = "Bad_Node"
			a.Spec.Source.PersistentVolumeName = ptrTo("Bad_PV")
		}))},
		{"volume attachment: no source", ValidateVolumeAttachment(va(func(a *storagev1.VolumeAttachment) {
			a.Spec.Source = storagev1.VolumeAttachmentSource{}
		}))},
		{"volume attachment: both sources", ValidateVolumeAttachment(va(func(a *storagev1.VolumeAttachment) {
			a.Spec.Source.InlineVolumeSpec = inlineSpec()
		}))},
		{"volume attachment: empty persistent volume name", ValidateVolumeAttachment(va(func(a *storagev1.VolumeAttachment) {
			a.Spec.Source.PersistentVolumeName = ptrTo("")
		}))},
		{"volume attachment: inline spec errors", ValidateVolumeAttachment(va(func(a *storagev1.VolumeAttachment) {
			spec := inlineSpec()
			spec.ClaimRef = &corev1.ObjectReference{Name: "c"}
			spec.Capacity = corev1.ResourceList{corev1.ResourceStorage: quantity("1Gi")}
			spec.CSI = nil
			spec.NFS = &corev1.NFSVolumeSource{Server: "nfs", Path: "/export"}
			spec.AccessModes = nil
			spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete
			spec.NodeAffinity = &corev1.VolumeNodeAffinity{}
			spec.StorageClassName = "standard"
			spec.VolumeMode = ptrTo(corev1.PersistentVolumeBlock)
			spec.VolumeAttributesClassName = ptrTo("")
			a.Spec.Source = storagev1.VolumeAttachmentSource{InlineVolumeSpec: spec}
		}))},
		{"volume attachment: status errors", ValidateVolumeAttachment(va(func(a *storagev1.VolumeAttachment) {
			a.Status.AttachmentMetadata = map[string]string{"k": strings.Repeat("v", maxAttachmentMetadataSize)}
			a.Status.AttachError = &storagev1.VolumeError{Message: strings.Repeat("m", maxVolumeErrorMessageSize+1)}
			a.Status.DetachError = &storagev1.VolumeError{ErrorCode: ptrTo[int32](-1)}
		}))},
		{"volume attachment update: spec changed", ValidateVolumeAttachmentUpdate(
			va(func(a *storagev1.VolumeAttachment) { a.ResourceVersion = "1"; a.Spec.NodeName = "node-2" }),
			va(func(a *storagev1.VolumeAttachment) { a.ResourceVersion = "1" }))},
		{"csi node: driver errors", ValidateCSINode(csiNode(func(n *storagev1.CSINode) {
			n.Spec.Drivers = []storagev1.CSINodeDriver{
				{Name: "Bad_Driver", NodeID: strings.Repeat("n", maxCSINodeIDLength+1), TopologyKeys: []string{"", "zone", "zone", "Bad Key"}, Allocatable: &storagev1.VolumeNodeResources{Count: ptrTo[int32](-1)}},
				{Name: "Bad_Driver"},
			}
		}))},
		{"csi node update: driver identity changed", ValidateCSINodeUpdate(
			csiNode(func(n *storagev1.CSINode) {
				n.ResourceVersion = "1"
				n.Spec.Drivers[0].NodeID = "other"
			}),
			csiNode(func(n *storagev1.CSINode) { n.ResourceVersion = "1" }))},
	}

	var b strings.Builder
	for _, c := range cases {
		b.WriteString("== " + c.name + "\n")
		lines := make([]string, 0, len(c.errs))
		for _, e := range c.errs {
			msg, _, _ := strings.Cut(e.Error(), "\n")
			lines = append(lines, msg)
		}
		slices.Sort(lines)
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
	}
	got := b.String()

	golden := filepath.Join("testdata", "storage_errors.txt")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wantText, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("reading %s (run with -update to create it): %v", golden, err)
	}
	if diff := cmp.Diff(string(wantText), got); diff != "" {
		t.Errorf("errors differ from %s (-want +got):\n%s", golden, diff)
	}
}

// mutated is a valid object with one change made.
func mutated[T any](valid func() T, mutate func(T)) T {
	obj := valid()
	mutate(obj)
	return obj
}
