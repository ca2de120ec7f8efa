package defaults

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, storagev1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatalf("building scheme: %v", err)
		}
	}
	RegisterDefaults(s)
	return s
}

func TestRegisterDefaults(t *testing.T) {
	s := newScheme(t)
	tests := []struct {
		name      string
		obj       runtime.Object
		defaulted func(runtime.Object) bool
	}{
		{"pod", &corev1.Pod{}, func(o runtime.Object) bool { return o.(*corev1.Pod).Spec.RestartPolicy == corev1.RestartPolicyAlways }},
		{"pod list items", &corev1.PodList{Items: make([]corev1.Pod, 2)}, func(o runtime.Object) bool {
			l := o.(*corev1.PodList)
			return l.Items[0].Spec.DNSPolicy == corev1.DNSClusterFirst && l.Items[1].Spec.DNSPolicy == corev1.DNSClusterFirst
		}},
		{"node list items", &corev1.NodeList{Items: []corev1.Node{{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{}}}}}, func(o runtime.Object) bool {
			return o.(*corev1.NodeList).Items[0].Status.Allocatable != nil
		}},
		{"namespace list items", &corev1.NamespaceList{Items: make([]corev1.Namespace, 1)}, func(o runtime.Object) bool {
			return o.(*corev1.NamespaceList).Items[0].Status.Phase == corev1.NamespaceActive
		}},
		{"secret list items", &corev1.SecretList{Items: make([]corev1.Secret, 1)}, func(o runtime.Object) bool {
			return o.(*corev1.SecretList).Items[0].Type == corev1.SecretTypeOpaque
		}},
		{"config map list items", &corev1.ConfigMapList{Items: make([]corev1.ConfigMap, 1)}, func(o runtime.Object) bool {
			return o.(*corev1.ConfigMapList).Items[0].Data != nil
		}},
		{"persistent volume list items", &corev1.PersistentVolumeList{Items: make([]corev1.PersistentVolume, 1)}, func(o runtime.Object) bool {
			return o.(*corev1.PersistentVolumeList).Items[0].Status.Phase == corev1.VolumePending
		}},
		{"claim list items", &corev1.PersistentVolumeClaimList{Items: make([]corev1.PersistentVolumeClaim, 1)}, func(o runtime.Object) bool {
			return o.(*corev1.PersistentVolumeClaimList).Items[0].Status.Phase == corev1.ClaimPending
		}},
		{"volume attachment list items", &storagev1.VolumeAttachmentList{Items: []storagev1.VolumeAttachment{{Spec: storagev1.VolumeAttachmentSpec{
			Source: storagev1.VolumeAttachmentSource{InlineVolumeSpec: &corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: "/x"},
			}}},
		}}}}, func(o runtime.Object) bool {
			return o.(*storagev1.VolumeAttachmentList).Items[0].Spec.Source.InlineVolumeSpec.HostPath.Type != nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.Default(tt.obj)
			if !tt.defaulted(tt.obj) {
				t.Errorf("scheme did not default %T: %+v", tt.obj, tt.obj)
			}
		})
	}
}

func TestDecodeDefaults(t *testing.T) {
	codecs := serializer.NewCodecFactory(newScheme(t))
	decoder := codecs.UniversalDecoder(corev1.SchemeGroupVersion)
	tests := []struct {
		name string
		body string
		pods func(runtime.Object) []corev1.Pod
	}{
		{
			name: "single pod",
			body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`,
			pods: func(o runtime.Object) []corev1.Pod { return []corev1.Pod{*o.(*corev1.Pod)} },
		},
		{
			name: "pod list",
			body: `{"apiVersion":"v1","kind":"PodList","items":[{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}]}`,
			pods: func(o runtime.Object) []corev1.Pod { return o.(*corev1.PodList).Items },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, _, err := decoder.Decode([]byte(tt.body), nil, nil)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			for _, p := range tt.pods(obj) {
				if got := p.Spec.Containers[0].ImagePullPolicy; got != corev1.PullAlways {
					t.Errorf("pod %s: imagePullPolicy = %q, want Always", p.Name, got)
				}
				if p.Spec.SchedulerName != corev1.DefaultSchedulerName {
					t.Errorf("pod %s: schedulerName = %q, want %q", p.Name, p.Spec.SchedulerName, corev1.DefaultSchedulerName)
				}
			}
		})
	}
}

func TestOrDefault(t *testing.T) {
	tests := []struct {
		name      string
		set, want string
	}{
		{name: "unset takes the default", set: "", want: "v1"},
		{name: "set is kept", set: "v2", want: "v2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.set
			orDefault(&got, "v1")
			if got != tc.want {
				t.Errorf("orDefault(%q, \"v1\") = %q, want %q", tc.set, got, tc.want)
			}
		})
	}
}

func TestOrDefaultPtr(t *testing.T) {
	kept := int64(5)
	tests := []struct {
		name string
		set  *int64
		want int64
	}{
		{name: "nil takes the default", set: nil, want: 30},
		{name: "set is kept, zero included", set: new(int64), want: 0},
		{name: "set is kept", set: &kept, want: 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.set
			orDefaultPtr(&got, 30)
			if got == nil || *got != tc.want {
				t.Fatalf("orDefaultPtr = %v, want %d", got, tc.want)
			}
			if tc.set != nil && got != tc.set {
				t.Error("a set pointer was replaced")
			}
		})
	}
}

// TestOrDefaultPtrCopies guards against two objects sharing one default: each gets its own.
func TestOrDefaultPtrCopies(t *testing.T) {
	var a, b *int64
	orDefaultPtr(&a, 30)
	orDefaultPtr(&b, 30)
	*a = 1
	if *b != 30 {
		t.Errorf("defaults share storage: b = %d after a changed", *b)
	}
}
