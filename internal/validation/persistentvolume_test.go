package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func validPV() *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			VolumeMode:                    ptrTo(corev1.PersistentVolumeFilesystem),
			StorageClassName:              "standard",
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				CSI: &corev1.CSIPersistentVolumeSource{Driver: "csi.example.com", VolumeHandle: "vol-1"},
			},
		},
	}
}

func TestValidatePersistentVolume(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*corev1.PersistentVolume)
		want   []want
	}{
		{name: "valid", mutate: func(*corev1.PersistentVolume) {}},
		{
			name: "valid local volume with node affinity",
			mutate: func(pv *corev1.PersistentVolume) {
				pv.Spec.CSI = nil
				pv.Spec.Local = &corev1.LocalVolumeSource{Path: "/mnt/disk"}
				pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}}},
				}}}}
			},
		},
		{name: "namespaced", mutate: func(pv *corev1.PersistentVolume) { pv.Namespace = "default" }, want: []want{forbidden("metadata.namespace")}},
		{name: "invalid name", mutate: func(pv *corev1.PersistentVolume) { pv.Name = "PV" }, want: []want{invalid("metadata.name")}},
		{name: "no capacity", mutate: func(pv *corev1.PersistentVolume) { pv.Spec.Capacity = nil }, want: []want{required("spec.capacity"), notSupported("spec.capacity")}},
		{
			name:   "zero storage",
			mutate: func(pv *corev1.PersistentVolume) { pv.Spec.Capacity[corev1.ResourceStorage] = resource.MustParse("0") },
			want:   []want{invalid("spec.capacity[storage]")},
		},
		{
			name:   "capacity other than storage",
			mutate: func(pv *corev1.PersistentVolume) { pv.Spec.Capacity[corev1.ResourceCPU] = resource.MustParse("1") },
			want:   []want{notSupported("spec.capacity")},
		},
		{name: "no access modes", mutate: func(pv *corev1.PersistentVolume) { pv.Spec.AccessModes = nil }, want: []want{required("spec.accessModes")}},
		{
			name: "unknown access mode",
			mutate: func(pv *corev1.PersistentVolume) {
				pv.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{"ReadSometimes"}
			},
			want: []want{notSupported("spec.accessModes")},
		},
		{
			name: "ReadWriteOncePod with others",
			mutate: func(pv *corev1.PersistentVolume) {
				pv.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod, corev1.ReadOnlyMany}
			},
			want: []want{forbidden("spec.accessModes")},
		},
		{name: "no source", mutate: func(pv *corev1.PersistentVolume) { pv.Spec.CSI = nil }, want: []want{required("spec")}},
		{
			name: "two sources",
			mutate: func(pv *corev1.PersistentVolume) {
				pv.Spec.NFS = &corev1.NFSVolumeSource{Server: "nfs", Path: "/export"}
			},
			want: []want{forbidden("spec.csi")},
		},
		{name: "csi without handle", mutate: func(pv *corev1.PersistentVolume) { pv.Spec.CSI.VolumeHandle = "" }, want: []want{required("spec.csi.volumeHandle")}},
		{
			name:   "unknown reclaim policy",
			mutate: func(pv *corev1.PersistentVolume) { pv.Spec.PersistentVolumeReclaimPolicy = "Shred" },
			want:   []want{notSupported("spec.persistentVolumeReclaimPolicy")},
		},
		{name: "unknown volume mode", mutate: func(pv *corev1.PersistentVolume) { pv.Spec.VolumeMode = ptrTo[corev1.PersistentVolumeMode]("Tape") }, want: []want{notSupported("spec.volumeMode")}},
		{
			name: "local volume without node affinity",
			mutate: func(pv *corev1.PersistentVolume) {
				pv.Spec.CSI = nil
				pv.Spec.Local = &corev1.LocalVolumeSource{Path: "/mnt/disk"}
			},
			want: []want{required("spec.nodeAffinity")},
		},
		{
			name: "node affinity without required",
			mutate: func(pv *corev1.PersistentVolume) {
				pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{}
			},
			want: []want{required("spec.nodeAffinity.required")},
		},
		{
			name: "recycling the host root",
			mutate: func(pv *corev1.PersistentVolume) {
				pv.Spec.CSI = nil
				pv.Spec.HostPath = &corev1.HostPathVolumeSource{Path: "/"}
				pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRecycle
			},
			want: []want{forbidden("spec.persistentVolumeReclaimPolicy")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pv := validPV()
			tc.mutate(pv)
			expectErrors(t, ValidatePersistentVolume(pv), tc.want...)
		})
	}
}

func TestValidatePersistentVolumeUpdate(t *testing.T) {
	tests := []struct {
		name   string
		old    func(*corev1.PersistentVolume)
		mutate func(*corev1.PersistentVolume)
		want   []want
	}{
		{
			name: "bind and change reclaim policy",
			mutate: func(pv *corev1.PersistentVolume) {
				pv.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "default", Name: "data"}
				pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete
			},
		},
		{
			name: "add controller expand secret",
			mutate: func(pv *corev1.PersistentVolume) {
				pv.Spec.CSI.ControllerExpandSecretRef = &corev1.SecretReference{Name: "s", Namespace: "kube-system"}
			},
		},
		{name: "change source", mutate: func(pv *corev1.PersistentVolume) { pv.Spec.CSI.VolumeHandle = "vol-2" }, want: []want{forbidden("spec.persistentvolumesource")}},
		{
			name:   "change volume mode",
			mutate: func(pv *corev1.PersistentVolume) { pv.Spec.VolumeMode = ptrTo(corev1.PersistentVolumeBlock) },
			want:   []want{invalid("spec.volumeMode")},
		},
		{
			name: "set node affinity",
			mutate: func(pv *corev1.PersistentVolume) {
				pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpExists}},
				}}}}
			},
		},
		{
			name: "change node affinity",
			old: func(pv *corev1.PersistentVolume) {
				pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpExists}},
				}}}}
			},
			mutate: func(pv *corev1.PersistentVolume) {
				pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Key = "region"
			},
			want: []want{invalid("spec.nodeAffinity")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldPV := validPV()
			oldPV.ResourceVersion = "3"
			if tc.old != nil {
				tc.old(oldPV)
			}
			newPV := oldPV.DeepCopy()
			tc.mutate(newPV)
			expectErrors(t, ValidatePersistentVolumeUpdate(newPV, oldPV), tc.want...)
		})
	}
}

func TestValidatePersistentVolumeStatusUpdate(t *testing.T) {
	oldPV := validPV()
	oldPV.ResourceVersion = "3"
	newPV := oldPV.DeepCopy()
	newPV.Status.Phase = corev1.VolumeBound
	expectErrors(t, ValidatePersistentVolumeStatusUpdate(newPV, oldPV))

	newPV.ResourceVersion = ""
	expectErrors(t, ValidatePersistentVolumeStatusUpdate(newPV, oldPV), invalid("metadata.resourceVersion"))
}

func TestValidateAccessModes(t *testing.T) {
	type modes = []corev1.PersistentVolumeAccessMode
	tests := []struct {
		name  string
		modes modes
		want  []want
	}{
		{name: "none", want: []want{required("modes")}},
		{name: "one shared mode", modes: modes{corev1.ReadOnlyMany}},
		{name: "all shared modes, repeated", modes: modes{corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOnce}},
		{name: "ReadWriteOncePod alone", modes: modes{corev1.ReadWriteOncePod}},
		{name: "ReadWriteOncePod twice", modes: modes{corev1.ReadWriteOncePod, corev1.ReadWriteOncePod}},
		{name: "ReadWriteOncePod with a shared mode", modes: modes{corev1.ReadWriteOnce, corev1.ReadWriteOncePod}, want: []want{forbidden("modes")}},
		{name: "unknown modes", modes: modes{"ReadSometimes", "readwriteonce"}, want: []want{notSupported("modes"), notSupported("modes")}},
		{name: "ReadWriteOncePod with an unknown mode", modes: modes{corev1.ReadWriteOncePod, "ReadSometimes"}, want: []want{notSupported("modes")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, validateAccessModes(tc.modes, field.NewPath("modes")), tc.want...)
		})
	}
}

func TestVolumeEnums(t *testing.T) {
	tests := []struct {
		name    string
		errs    field.ErrorList
		refused bool
	}{
		{"reclaim policy Delete", oneOf(field.NewPath("f"), corev1.PersistentVolumeReclaimDelete, sets.List(volumeReclaimPolicies)...), false},
		{"reclaim policy Recycle", oneOf(field.NewPath("f"), corev1.PersistentVolumeReclaimRecycle, sets.List(volumeReclaimPolicies)...), false},
		{"reclaim policy Retain", oneOf(field.NewPath("f"), corev1.PersistentVolumeReclaimRetain, sets.List(volumeReclaimPolicies)...), false},
		{"reclaim policy in lower case", oneOf(field.NewPath("f"), "retain", sets.List(volumeReclaimPolicies)...), true},
		{"volume mode Block", oneOf(field.NewPath("f"), corev1.PersistentVolumeBlock, sets.List(volumeModes)...), false},
		{"volume mode Filesystem", oneOf(field.NewPath("f"), corev1.PersistentVolumeFilesystem, sets.List(volumeModes)...), false},
		{"empty volume mode", oneOf(field.NewPath("f"), "", sets.List(volumeModes)...), true},
		{"resize pending on the node", oneOf(field.NewPath("f"), corev1.PersistentVolumeClaimNodeResizePending, sets.List(claimResizeStatuses)...), false},
		{"resize infeasible in the controller", oneOf(field.NewPath("f"), corev1.PersistentVolumeClaimControllerResizeInfeasible, sets.List(claimResizeStatuses)...), false},
		{"unknown resize status", oneOf(field.NewPath("f"), "Resizing", sets.List(claimResizeStatuses)...), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.refused {
				expectErrors(t, tc.errs)
				return
			}
			expectErrors(t, tc.errs, notSupported("f"))
		})
	}
}
