package podwalk

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/idplane/idplane/internal/podwalk/podwalktest"
)

func contentPaths(pod *corev1.Pod) []string {
	var out []string
	for r := range References(pod) {
		if r.Contents {
			out = append(out, r.Path.String())
		}
	}
	return out
}

func TestContents(t *testing.T) {
	ref := func(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }
	cases := []struct {
		name string
		pod  corev1.Pod
		want []string
	}{
		{
			name: "a container's environment",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref("s")}}, {ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref("c")}}},
				Env: []corev1.EnvVar{
					{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref("s")}}},
					{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref("c")}}},
					{Name: "C", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				},
			}}}},
			want: []string{
				"spec.containers[0].envFrom[0].secretRef.name", "spec.containers[0].envFrom[1].configMapRef.name",
				"spec.containers[0].env[0].valueFrom.secretKeyRef.name", "spec.containers[0].env[1].valueFrom.configMapKeyRef.name",
			},
		},
		{
			name: "secret, configMap and projected volumes",
			pod: corev1.Pod{Spec: corev1.PodSpec{ServiceAccountName: "sa", Volumes: []corev1.Volume{
				{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
				{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref("c")}}},
				{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{Secret: &corev1.SecretProjection{LocalObjectReference: ref("s")}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: ref("c")}},
					{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Name: ptr("b")}},
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
					{PodCertificate: &corev1.PodCertificateProjection{SignerName: "example.com/pc"}},
				}}}},
			}}},
			want: []string{
				"spec.volumes[0].secret.secretName", "spec.volumes[1].configMap.name",
				"spec.volumes[2].projected.sources[0].secret.name", "spec.volumes[2].projected.sources[1].configMap.name",
				"spec.volumes[2].projected.sources[2].clusterTrustBundle.name",
			},
		},
		{
			name: "the pod's identity and image pull secrets are not contents",
			pod: corev1.Pod{Spec: corev1.PodSpec{
				ServiceAccountName: "sa", ImagePullSecrets: []corev1.LocalObjectReference{ref("pull")},
				ResourceClaims: []corev1.PodResourceClaim{{Name: "rc", ResourceClaimName: ptr("rc")}},
			}},
		},
		{
			name: "objects handed to storage are not contents",
			pod: corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{
				{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi-s"}}}},
				{Name: "rbd", VolumeSource: corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{SecretRef: &corev1.LocalObjectReference{Name: "rbd-s"}}}},
				{Name: "azure", VolumeSource: corev1.VolumeSource{AzureFile: &corev1.AzureFileVolumeSource{SecretName: "az-s"}}},
				{Name: "claim", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "pvc"}}},
			}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := contentPaths(&tc.pod); !slices.Equal(got, tc.want) {
				t.Errorf("contents at %q, want %q", got, tc.want)
			}
		})
	}
}

// contentFields are the fields, named as podwalktest's shapes name them without the container
// list, through which a pod gets an object's data; set alone, every other field gives none.
var contentFields = []string{
	"PodSpec.Volumes", "PodSpec.InitContainers", "PodSpec.Containers", "PodSpec.EphemeralContainers",
	"VolumeSource.Secret", "VolumeSource.ConfigMap", "VolumeSource.Projected",
	"VolumeProjection.Secret", "VolumeProjection.ConfigMap", "VolumeProjection.ClusterTrustBundle",
	"Container.Env", "Container.EnvFrom",
	"EnvVarSource.SecretKeyRef", "EnvVarSource.ConfigMapKeyRef", "EnvFromSource.SecretRef", "EnvFromSource.ConfigMapRef",
}

func TestContentsOfEveryShape(t *testing.T) {
	contentKinds := []Kind{Secret, ConfigMap, ClusterTrustBundle}
	for _, shape := range podwalktest.Shapes() {
		_, field, inList := strings.Cut(shape.Field, " ")
		if !inList {
			field = shape.Field
		}
		var contents []Reference
		for r := range References(shape.Pod) {
			if r.Contents {
				contents = append(contents, r)
			}
		}
		if want := slices.Contains(contentFields, field); want != (len(contents) > 0) {
			t.Errorf("%s set: contents %v, want some: %t", shape.Field, contents, want)
		}
		for _, r := range contents {
			if !slices.Contains(contentKinds, r.Kind) {
				t.Errorf("%s set: %s at %s reported as contents; only secrets, configmaps and trust bundles are", shape.Field, r.Kind.Resource(), r.Path)
			}
		}
	}
}

func TestProjections(t *testing.T) {
	spec := &corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "a", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}},
		}}}},
		{Name: "plain", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
		{Name: "empty", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}},
		{Name: "b", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{DownwardAPI: &corev1.DownwardAPIProjection{}},
		}}}},
	}}
	var got []string
	for p := range Projections(spec) {
		what := "other"
		switch {
		case p.ServiceAccountToken != nil:
			what = "token " + p.ServiceAccountToken.Path
		case p.ConfigMap != nil:
			what = "configMap " + p.ConfigMap.Name
		case p.DownwardAPI != nil:
			what = "downwardAPI"
		}
		got = append(got, p.Volume.Name+": "+what)
	}
	if want := []string{"a: token token", "a: configMap c", "b: downwardAPI"}; !slices.Equal(got, want) {
		t.Errorf("projections %q, want %q", got, want)
	}
	// A range over an iterator that goes on after the loop's break panics.
	for range Projections(spec) {
		break
	}
}
