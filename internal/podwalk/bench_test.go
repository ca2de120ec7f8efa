package podwalk

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkReferences walks a pod as admission leaves a typical one: a service account, its
// kube-api-access volume, a secret and a configmap volume and an environment from each. The
// Node authorizer's graph walks every pod it hears of.
func BenchmarkReferences(b *testing.B) {
	ref := corev1.LocalObjectReference{Name: "app"}
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		ServiceAccountName: "app",
		Containers: []corev1.Container{{Name: "app",
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref}}},
			Env:     []corev1.EnvVar{{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref, Key: "password"}}}},
		}},
		Volumes: []corev1.Volume{
			{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "app"}}},
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref}}},
			{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{}},
			}}}},
		},
	}}
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for r := range References(pod) {
			if r.Name != "" {
				n++
			}
		}
		if n != 7 {
			b.Fatalf("%d references, want 7", n)
		}
	}
}
