package defaults

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"
)

// check applies fn to in and compares the result with want.
func check[T any](t *testing.T, fn func(*T), in, want *T) {
	t.Helper()
	fn(in)
	if !equality.Semantic.DeepEqual(in, want) {
		t.Errorf("defaulted object differs (-got +want):\n%s", diff.Diff(in, want))
	}
}

func TestNode(t *testing.T) {
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}
	tests := []struct {
		name     string
		in, want corev1.NodeStatus
	}{
		{
			name: "allocatable copied from capacity",
			in:   corev1.NodeStatus{Capacity: capacity.DeepCopy()},
			want: corev1.NodeStatus{Capacity: capacity.DeepCopy(), Allocatable: capacity.DeepCopy()},
		},
		{
			name: "reported allocatable kept",
			in:   corev1.NodeStatus{Capacity: capacity.DeepCopy(), Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3500m")}},
			want: corev1.NodeStatus{Capacity: capacity.DeepCopy(), Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3500m")}},
		},
		{
			name: "no capacity leaves allocatable unset",
			in:   corev1.NodeStatus{},
			want: corev1.NodeStatus{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, Node, &corev1.Node{Status: tt.in}, &corev1.Node{Status: tt.want})
		})
	}

	t.Run("podCIDR becomes podCIDRs", func(t *testing.T) {
		check(t, Node, &corev1.Node{Spec: corev1.NodeSpec{PodCIDR: "10.1.0.0/24"}},
			&corev1.Node{Spec: corev1.NodeSpec{PodCIDR: "10.1.0.0/24", PodCIDRs: []string{"10.1.0.0/24"}}})
	})
	t.Run("podCIDRs decide podCIDR", func(t *testing.T) {
		check(t, Node, &corev1.Node{Spec: corev1.NodeSpec{PodCIDRs: []string{"10.1.0.0/24", "fd00::/64"}}},
			&corev1.Node{Spec: corev1.NodeSpec{PodCIDR: "10.1.0.0/24", PodCIDRs: []string{"10.1.0.0/24", "fd00::/64"}}})
	})

	t.Run("allocatable does not alias capacity", func(t *testing.T) {
		n := &corev1.Node{Status: corev1.NodeStatus{Capacity: capacity.DeepCopy()}}
		Node(n)
		n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("1")
		if got := n.Status.Capacity[corev1.ResourceCPU]; got.Cmp(resource.MustParse("4")) != 0 {
			t.Errorf("capacity cpu = %s after editing allocatable, want 4", got.String())
		}
	})
}

func TestNamespace(t *testing.T) {
	tests := []struct {
		name     string
		in, want corev1.Namespace
	}{
		{
			name: "named namespace is labelled with its name and Active",
			in:   corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"env": "prod"}}},
			want: corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"env": "prod", "kubernetes.io/metadata.name": "team-a"}},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
			},
		},
		{
			name: "a wrong name label is corrected",
			in:   corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"kubernetes.io/metadata.name": "other"}}},
			want: corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"kubernetes.io/metadata.name": "team-a"}},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
			},
		},
		{
			name: "generateName namespace gets no label yet",
			in:   corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tmp-"}},
			want: corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tmp-"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
		},
		{
			name: "terminating phase and emptied finalizers are kept",
			in: corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "gone"},
				Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{}},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
			},
			want: corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "gone", Labels: map[string]string{"kubernetes.io/metadata.name": "gone"}},
				Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{}},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, Namespace, &tt.in, &tt.want)
		})
	}
}

func TestSecretAndConfigMap(t *testing.T) {
	t.Run("untyped secret is Opaque", func(t *testing.T) {
		check(t, Secret, &corev1.Secret{}, &corev1.Secret{Type: corev1.SecretTypeOpaque})
	})
	t.Run("typed secret kept", func(t *testing.T) {
		check(t, Secret, &corev1.Secret{Type: corev1.SecretTypeTLS}, &corev1.Secret{Type: corev1.SecretTypeTLS})
	})
	t.Run("stringData folds into data and wins", func(t *testing.T) {
		check(t, Secret,
			&corev1.Secret{Data: map[string][]byte{"a": []byte("1"), "b": []byte("2")}, StringData: map[string]string{"b": "two", "c": "3"}},
			&corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"a": []byte("1"), "b": []byte("two"), "c": []byte("3")}})
	})
	t.Run("stringData alone becomes data", func(t *testing.T) {
		check(t, Secret, &corev1.Secret{StringData: map[string]string{"k": "v"}},
			&corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"k": []byte("v")}})
	})
	t.Run("config map gets empty data", func(t *testing.T) {
		check(t, ConfigMap, &corev1.ConfigMap{}, &corev1.ConfigMap{Data: map[string]string{}})
	})
	t.Run("config map data kept", func(t *testing.T) {
		check(t, ConfigMap, &corev1.ConfigMap{Data: map[string]string{"k": "v"}}, &corev1.ConfigMap{Data: map[string]string{"k": "v"}})
	})
}

func TestPersistentVolume(t *testing.T) {
	tests := []struct {
		name     string
		in, want corev1.PersistentVolume
	}{
		{
			name: "empty volume",
			in:   corev1.PersistentVolume{},
			want: corev1.PersistentVolume{
				Spec: corev1.PersistentVolumeSpec{
					PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
					VolumeMode:                    ptr.To(corev1.PersistentVolumeFilesystem),
				},
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumePending},
			},
		},
		{
			name: "explicit values kept, source defaulted, capacity rounded",
			in: corev1.PersistentVolume{
				Spec: corev1.PersistentVolumeSpec{
					Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("0.0001")},
					PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
					VolumeMode:                    ptr.To(corev1.PersistentVolumeBlock),
					PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}},
				},
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
			},
			want: corev1.PersistentVolume{
				Spec: corev1.PersistentVolumeSpec{
					Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1m")},
					PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
					VolumeMode:                    ptr.To(corev1.PersistentVolumeBlock),
					PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
						Path: "/data", Type: ptr.To(corev1.HostPathUnset),
					}},
				},
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, PersistentVolume, &tt.in, &tt.want)
		})
	}
}

func TestPersistentVolumeClaim(t *testing.T) {
	tests := []struct {
		name     string
		in, want corev1.PersistentVolumeClaim
	}{
		{
			name: "empty claim",
			in:   corev1.PersistentVolumeClaim{},
			want: corev1.PersistentVolumeClaim{
				Spec:   corev1.PersistentVolumeClaimSpec{VolumeMode: ptr.To(corev1.PersistentVolumeFilesystem)},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
			},
		},
		{
			name: "bound block claim kept",
			in: corev1.PersistentVolumeClaim{
				Spec:   corev1.PersistentVolumeClaimSpec{VolumeMode: ptr.To(corev1.PersistentVolumeBlock), VolumeName: "pv-1"},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
			},
			want: corev1.PersistentVolumeClaim{
				Spec:   corev1.PersistentVolumeClaimSpec{VolumeMode: ptr.To(corev1.PersistentVolumeBlock), VolumeName: "pv-1"},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, PersistentVolumeClaim, &tt.in, &tt.want)
		})
	}
}

func TestVolumeAttachment(t *testing.T) {
	t.Run("inline spec gets source defaults only", func(t *testing.T) {
		in := &storagev1.VolumeAttachment{Spec: storagev1.VolumeAttachmentSpec{Source: storagev1.VolumeAttachmentSource{
			InlineVolumeSpec: &corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
				RBD: &corev1.RBDPersistentVolumeSource{CephMonitors: []string{"mon"}, RBDImage: "img"},
			}},
		}}}
		want := &storagev1.VolumeAttachment{Spec: storagev1.VolumeAttachmentSpec{Source: storagev1.VolumeAttachmentSource{
			InlineVolumeSpec: &corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
				RBD: &corev1.RBDPersistentVolumeSource{CephMonitors: []string{"mon"}, RBDImage: "img", RBDPool: "rbd", RadosUser: "admin", Keyring: "/etc/ceph/keyring"},
			}},
		}}}
		check(t, VolumeAttachment, in, want)
	})
	t.Run("persistent volume reference untouched", func(t *testing.T) {
		in := &storagev1.VolumeAttachment{Spec: storagev1.VolumeAttachmentSpec{Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv")}}}
		check(t, VolumeAttachment, in, in.DeepCopy())
	})
}
