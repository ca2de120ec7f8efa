package objects

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodRefs(t *testing.T) {
	ref := func(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }
	secretVolume := func(name string) corev1.Volume {
		return corev1.Volume{Name: "v-" + name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}}
	}
	cases := []struct {
		name string
		spec corev1.PodSpec
		want []Ref
	}{
		{
			name: "environment first, then volumes, in the pod's order",
			spec: corev1.PodSpec{
				Containers: []corev1.Container{{EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref("env-c")}}}}},
				Volumes: []corev1.Volume{secretVolume("vol-s"), {Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: ref("kube-root-ca.crt")}},
				}}}}},
			},
			want: []Ref{{ConfigMap, "ns", "env-c"}, {Secret, "ns", "vol-s"}, {ConfigMap, "ns", "kube-root-ca.crt"}},
		},
		{
			name: "an object named twice is read once",
			spec: corev1.PodSpec{Volumes: []corev1.Volume{secretVolume("s"), secretVolume("s")}},
			want: []Ref{{Secret, "ns", "s"}},
		},
		{
			name: "a secret and a configmap of one name are two objects",
			spec: corev1.PodSpec{Volumes: []corev1.Volume{secretVolume("x"), {Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref("x")}}}}},
			want: []Ref{{Secret, "ns", "x"}, {ConfigMap, "ns", "x"}},
		},
		{
			name: "an empty name reads nothing",
			spec: corev1.PodSpec{Volumes: []corev1.Volume{secretVolume("")}},
		},
		{
			name: "objects the node uses for other ends than the pod's data are not read",
			spec: corev1.PodSpec{
				ServiceAccountName: "sa",
				ImagePullSecrets:   []corev1.LocalObjectReference{ref("pull")},
				Volumes: []corev1.Volume{
					{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi-s"}}}},
					{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
						{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
						{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{SignerName: new("example.com/s")}},
					}}}},
				},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: tc.spec}
			if got := PodRefs(pod); !slices.Equal(got, tc.want) {
				t.Errorf("PodRefs = %v, want %v", got, tc.want)
			}
		})
	}
}
