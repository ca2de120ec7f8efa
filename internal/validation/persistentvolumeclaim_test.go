package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func validPVC() *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			},
			StorageClassName: ptrTo("standard"),
			VolumeMode:       ptrTo(corev1.PersistentVolumeFilesystem),
		},
	}
}

func TestValidatePersistentVolumeClaim(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*corev1.PersistentVolumeClaim)
		want   []want
	}{
		{name: "valid", mutate: func(*corev1.PersistentVolumeClaim) {}},
		{
			name: "valid clone",
			mutate: func(pvc *corev1.PersistentVolumeClaim) {
				pvc.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "src"}
				pvc.Spec.DataSourceRef = &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: "src"}
			},
		},
		{name: "missing namespace", mutate: func(pvc *corev1.PersistentVolumeClaim) { pvc.Namespace = "" }, want: []want{required("metadata.namespace")}},
		{name: "no access modes", mutate: func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.AccessModes = nil }, want: []want{required("spec.accessModes")}},
		{
			name: "unknown access mode",
			mutate: func(pvc *corev1.PersistentVolumeClaim) {
				pvc.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{"WriteOnly"}
			},
			want: []want{notSupported("spec.accessModes")},
		},
		{
			name:   "no storage request",
			mutate: func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.Resources.Requests = nil },
			want:   []want{required("spec.resources.requests[storage]")},
		},
		{
			name: "zero storage request",
			mutate: func(pvc *corev1.PersistentVolumeClaim) {
				pvc.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("0")
			},
			want: []want{invalid("spec.resources.requests[storage]")},
		},
		{
			name: "unknown volume mode",
			mutate: func(pvc *corev1.PersistentVolumeClaim) {
				pvc.Spec.VolumeMode = ptrTo[corev1.PersistentVolumeMode]("Tape")
			},
			want: []want{notSupported("spec.volumeMode")},
		},
		{
			name: "core data source that is not a claim",
			mutate: func(pvc *corev1.PersistentVolumeClaim) {
				pvc.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "Secret", Name: "src"}
			},
			want: []want{invalid("spec.dataSource")},
		},
		{
			name: "data source without name",
			mutate: func(pvc *corev1.PersistentVolumeClaim) {
				pvc.Spec.DataSource = &corev1.TypedLocalObjectReference{APIGroup: ptrTo("snapshot.storage.k8s.io"), Kind: "VolumeSnapshot"}
			},
			want: []want{required("spec.dataSource.name")},
		},
		{
			name: "data source and ref disagree",
			mutate: func(pvc *corev1.PersistentVolumeClaim) {
				pvc.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "a"}
				pvc.Spec.DataSourceRef = &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: "b"}
			},
			want: []want{invalid("spec")},
		},
		{
			name:   "invalid storage class",
			mutate: func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.StorageClassName = ptrTo("Fast_SSD") },
			want:   []want{invalid("spec.storageClassName")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pvc := validPVC()
			tc.mutate(pvc)
			expectErrors(t, ValidatePersistentVolumeClaim(pvc), tc.want...)
		})
	}
}

func TestValidatePersistentVolumeClaimUpdate(t *testing.T) {
	bound := func(pvc *corev1.PersistentVolumeClaim) {
		pvc.Spec.VolumeName = "pv-1"
		pvc.Status.Phase = corev1.ClaimBound
		pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	}
	betaClass := func(class string) func(*corev1.PersistentVolumeClaim) {
		return func(pvc *corev1.PersistentVolumeClaim) {
			pvc.Annotations = map[string]string{corev1.BetaStorageClassAnnotation: class}
			pvc.Spec.StorageClassName = nil
		}
	}
	grow := func(size string) func(*corev1.PersistentVolumeClaim) {
		return func(pvc *corev1.PersistentVolumeClaim) {
			pvc.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(size)
		}
	}
	tests := []struct {
		name   string
		old    func(*corev1.PersistentVolumeClaim)
		mutate func(*corev1.PersistentVolumeClaim)
		want   []want
	}{
		{name: "bind", mutate: func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.VolumeName = "pv-1" }},
		{
			name:   "rebind",
			old:    bound,
			mutate: func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.VolumeName = "pv-2" },
			want:   []want{forbidden("spec")},
		},
		{name: "grow bound claim", old: bound, mutate: grow("2Gi")},
		{name: "grow unbound claim", mutate: grow("2Gi"), want: []want{forbidden("spec")}},
		{
			name: "shrink back after failed expansion",
			old: func(pvc *corev1.PersistentVolumeClaim) {
				bound(pvc)
				pvc.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("10Gi")
			},
			mutate: grow("5Gi"),
		},
		{
			name:   "shrink below capacity",
			old:    bound,
			mutate: grow("512Mi"),
			want:   []want{forbidden("spec.resources.requests.storage")},
		},
		{
			name: "change access modes",
			mutate: func(pvc *corev1.PersistentVolumeClaim) {
				pvc.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
			},
			want: []want{forbidden("spec")},
		},
		{
			name:   "change volume mode",
			mutate: func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.VolumeMode = ptrTo(corev1.PersistentVolumeBlock) },
			want:   []want{forbidden("spec"), invalid("spec.volumeMode")},
		},
		{
			name:   "set storage class from nil",
			old:    func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.StorageClassName = nil },
			mutate: func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.StorageClassName = ptrTo("standard") },
		},
		{
			name:   "change storage class",
			mutate: func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.StorageClassName = ptrTo("fast") },
			want:   []want{forbidden("spec")},
		},
		{
			name: "change volume attributes class of bound claim",
			old: func(pvc *corev1.PersistentVolumeClaim) {
				bound(pvc)
				pvc.Spec.VolumeAttributesClassName = ptrTo("silver")
			},
			mutate: func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.VolumeAttributesClassName = ptrTo("gold") },
		},
		{
			name: "clear volume attributes class",
			old: func(pvc *corev1.PersistentVolumeClaim) {
				bound(pvc)
				pvc.Spec.VolumeAttributesClassName = ptrTo("silver")
			},
			mutate: func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.VolumeAttributesClassName = nil },
			want:   []want{forbidden("spec"), forbidden("spec.volumeAttributesClassName")},
		},
		{
			name: "move the beta class annotation into the field, keeping it",
			old:  betaClass("legacy"),
			mutate: func(pvc *corev1.PersistentVolumeClaim) {
				pvc.Spec.StorageClassName = ptrTo("legacy")
			},
		},
		{
			name: "move the beta class annotation into the field, dropping it",
			old:  betaClass("legacy"),
			mutate: func(pvc *corev1.PersistentVolumeClaim) {
				pvc.Spec.StorageClassName = ptrTo("legacy")
				delete(pvc.Annotations, corev1.BetaStorageClassAnnotation)
			},
		},
		{
			name:   "drop the beta class annotation",
			old:    betaClass("legacy"),
			mutate: func(pvc *corev1.PersistentVolumeClaim) { delete(pvc.Annotations, corev1.BetaStorageClassAnnotation) },
			want:   []want{invalid("metadata.annotations[volume.beta.kubernetes.io/storage-class]")},
		},
		{
			name: "change the beta class annotation while filling in the field",
			old:  betaClass("legacy"),
			mutate: func(pvc *corev1.PersistentVolumeClaim) {
				pvc.Spec.StorageClassName = ptrTo("legacy")
				pvc.Annotations[corev1.BetaStorageClassAnnotation] = "other"
			},
			want: []want{invalid("metadata.annotations[volume.beta.kubernetes.io/storage-class]")},
		},
		{
			name:   "fill in a class other than the beta annotation's",
			old:    betaClass("legacy"),
			mutate: func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.StorageClassName = ptrTo("fast") },
			want:   []want{forbidden("spec")},
		},
		{
			name: "add a beta class annotation",
			mutate: func(pvc *corev1.PersistentVolumeClaim) {
				pvc.Annotations = map[string]string{corev1.BetaStorageClassAnnotation: "standard"}
			},
			want: []want{invalid("metadata.annotations[volume.beta.kubernetes.io/storage-class]")},
		},
		{
			name: "drop the storage request of a bound claim",
			old:  bound,
			mutate: func(pvc *corev1.PersistentVolumeClaim) {
				delete(pvc.Spec.Resources.Requests, corev1.ResourceStorage)
			},
			want: []want{required("spec.resources.requests[storage]"), forbidden("spec.resources.requests.storage")},
		},
		{
			name: "add a request to an unbound claim",
			mutate: func(pvc *corev1.PersistentVolumeClaim) {
				pvc.Spec.Resources.Requests[corev1.ResourceMemory] = resource.MustParse("1Gi")
			},
			want: []want{forbidden("spec")},
		},
		{
			name: "set a volume attributes class on an unbound claim",
			mutate: func(pvc *corev1.PersistentVolumeClaim) {
				pvc.Spec.VolumeAttributesClassName = ptrTo("gold")
			},
			want: []want{forbidden("spec")},
		},
		{
			name: "empty the volume attributes class of a bound claim",
			old: func(pvc *corev1.PersistentVolumeClaim) {
				bound(pvc)
				pvc.Spec.VolumeAttributesClassName = ptrTo("silver")
			},
			mutate: func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.VolumeAttributesClassName = ptrTo("") },
			want:   []want{forbidden("spec.volumeAttributesClassName")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldPVC := validPVC()
			oldPVC.ResourceVersion = "7"
			if tc.old != nil {
				tc.old(oldPVC)
			}
			newPVC := oldPVC.DeepCopy()
			tc.mutate(newPVC)
			expectErrors(t, ValidatePersistentVolumeClaimUpdate(newPVC, oldPVC), tc.want...)
		})
	}
}

func TestValidatePersistentVolumeClaimStatusUpdate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*corev1.PersistentVolumeClaim)
		want   []want
	}{
		{
			name: "bound with resize status",
			mutate: func(pvc *corev1.PersistentVolumeClaim) {
				pvc.Status = corev1.PersistentVolumeClaimStatus{
					Phase:                     corev1.ClaimBound,
					Capacity:                  corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
					AllocatedResources:        corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")},
					AllocatedResourceStatuses: map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: corev1.PersistentVolumeClaimControllerResizeInProgress},
				}
			},
		},
		{
			name: "negative capacity",
			mutate: func(pvc *corev1.PersistentVolumeClaim) {
				pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("-1Gi")}
			},
			want: []want{invalid("status.capacity[storage]")},
		},
		{
			name: "unknown resize status",
			mutate: func(pvc *corev1.PersistentVolumeClaim) {
				pvc.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: "Shrinking"}
			},
			want: []want{notSupported("status.allocatedResourceStatuses[storage]")},
		},
		{
			name: "allocated native resource other than storage",
			mutate: func(pvc *corev1.PersistentVolumeClaim) {
				pvc.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
			},
			want: []want{notSupported("status.allocatedResources")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldPVC := validPVC()
			oldPVC.ResourceVersion = "7"
			newPVC := oldPVC.DeepCopy()
			tc.mutate(newPVC)
			expectErrors(t, ValidatePersistentVolumeClaimStatusUpdate(newPVC, oldPVC), tc.want...)
		})
	}
}
