package podwalk

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/idplane/idplane/internal/podwalk/podwalktest"
)

func ptr[T any](v T) *T { return &v }

// found is a reference as the tests compare it.
type found struct {
	kind Kind
	name string
	path string
}

func (f found) String() string { return fmt.Sprintf("%s %q at %s", f.kind.Resource(), f.name, f.path) }

func collect(pod *corev1.Pod) []found {
	var out []found
	for r := range References(pod) {
		out = append(out, found{r.Kind, r.Name, r.Path.String()})
	}
	return out
}

func TestReferences(t *testing.T) {
	secretEnv := func(name string) corev1.EnvVar {
		return corev1.EnvVar{Name: "E", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "k"}}}
	}
	cases := []struct {
		name string
		pod  corev1.Pod
		want []found
	}{
		{name: "nothing referenced", pod: corev1.Pod{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Env: []corev1.EnvVar{{Name: "A", Value: "b"}}}},
			Volumes:    []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		}}},
		{
			name: "service account, then the deprecated field only when the new one is empty",
			pod:  corev1.Pod{Spec: corev1.PodSpec{ServiceAccountName: "sa", DeprecatedServiceAccount: "old"}},
			want: []found{{ServiceAccount, "sa", "spec.serviceAccountName"}},
		},
		{
			name: "deprecated service account",
			pod:  corev1.Pod{Spec: corev1.PodSpec{DeprecatedServiceAccount: "old"}},
			want: []found{{ServiceAccount, "old", "spec.serviceAccount"}},
		},
		{
			name: "pull secrets and environment of every container kind",
			pod: corev1.Pod{Spec: corev1.PodSpec{
				ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
				InitContainers:   []corev1.Container{{Name: "i", Env: []corev1.EnvVar{secretEnv("init-s")}}},
				Containers: []corev1.Container{{Name: "c", EnvFrom: []corev1.EnvFromSource{
					{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env-c"}}},
					{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env-s"}}},
				}, Env: []corev1.EnvVar{{Name: "C", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "key-c"}, Key: "k"}}}}}},
				EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "e", Env: []corev1.EnvVar{secretEnv("eph-s")}}}},
			}},
			want: []found{
				{Secret, "pull", "spec.imagePullSecrets[0].name"},
				{Secret, "init-s", "spec.initContainers[0].env[0].valueFrom.secretKeyRef.name"},
				{ConfigMap, "env-c", "spec.containers[0].envFrom[0].configMapRef.name"},
				{Secret, "env-s", "spec.containers[0].envFrom[1].secretRef.name"},
				{ConfigMap, "key-c", "spec.containers[0].env[0].valueFrom.configMapKeyRef.name"},
				{Secret, "eph-s", "spec.ephemeralContainers[0].env[0].valueFrom.secretKeyRef.name"},
			},
		},
		{
			name: "volumes",
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{ServiceAccountName: "sa", Volumes: []corev1.Volume{
				{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol-s"}}},
				{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "vol-c"}}}},
				{Name: "claim", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "pvc"}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
				{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d.example.com", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi-s"}}}},
				{Name: "rbd", VolumeSource: corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{SecretRef: &corev1.LocalObjectReference{Name: "rbd-s"}}}},
				{Name: "rbd-no-secret", VolumeSource: corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{}}},
				{Name: "azure", VolumeSource: corev1.VolumeSource{AzureFile: &corev1.AzureFileVolumeSource{SecretName: "az-s"}}},
				{Name: "gluster", VolumeSource: corev1.VolumeSource{Glusterfs: &corev1.GlusterfsVolumeSource{EndpointsName: "ep"}}},
				{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-s"}}},
					{DownwardAPI: &corev1.DownwardAPIProjection{}},
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
					{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{SignerName: ptr("example.com/s")}},
					{PodCertificate: &corev1.PodCertificateProjection{SignerName: "example.com/pc"}},
				}}}},
			}}},
			want: []found{
				{ServiceAccount, "sa", "spec.serviceAccountName"},
				{Secret, "vol-s", "spec.volumes[0].secret.secretName"},
				{ConfigMap, "vol-c", "spec.volumes[1].configMap.name"},
				{PersistentVolumeClaim, "pvc", "spec.volumes[2].persistentVolumeClaim.claimName"},
				{PersistentVolumeClaim, "p-scratch", "spec.volumes[3].ephemeral"},
				{CSIDriver, "d.example.com", "spec.volumes[4].csi.driver"},
				{Secret, "csi-s", "spec.volumes[4].csi.nodePublishSecretRef.name"},
				{Secret, "rbd-s", "spec.volumes[5].rbd.secretRef.name"},
				{Secret, "az-s", "spec.volumes[7].azureFile.secretName"},
				{Endpoints, "ep", "spec.volumes[8].glusterfs.endpoints"},
				{Secret, "proj-s", "spec.volumes[9].projected.sources[0].secret.name"},
				{ServiceAccount, "sa", "spec.volumes[9].projected.sources[2].serviceAccountToken"},
				{ClusterTrustBundle, "example.com/s", "spec.volumes[9].projected.sources[3].clusterTrustBundle.signerName"},
				{PodCertificate, "example.com/pc", "spec.volumes[9].projected.sources[4].podCertificate.signerName"},
			},
		},
		{
			name: "a volume with no source the walk knows",
			pod:  corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "odd"}}}},
			want: []found{{Unknown, "odd", "spec.volumes[0]"}},
		},
		{
			name: "empty names are references too",
			pod: corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{
				{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}},
			}}},
			want: []found{{Secret, "", "spec.volumes[0].secret.secretName"}},
		},
		{
			name: "resource claims, templates and the claims made from them",
			pod: corev1.Pod{
				Spec: corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{
					{Name: "named", ResourceClaimName: ptr("rc")},
					{Name: "templated", ResourceClaimTemplateName: ptr("tmpl")},
				}},
				Status: corev1.PodStatus{
					ResourceClaimStatuses: []corev1.PodResourceClaimStatus{
						{Name: "named", ResourceClaimName: ptr("not-from-a-template")},
						{Name: "templated", ResourceClaimName: ptr("templated-abc")},
					},
					ExtendedResourceClaimStatus: &corev1.PodExtendedResourceClaimStatus{ResourceClaimName: "ext"},
				},
			},
			want: []found{
				{ResourceClaim, "rc", "spec.resourceClaims[0].resourceClaimName"},
				{ResourceClaimTemplate, "tmpl", "spec.resourceClaims[1].resourceClaimTemplateName"},
				{ResourceClaim, "templated-abc", "status.resourceClaimStatuses[1].resourceClaimName"},
				{ResourceClaim, "ext", "status.extendedResourceClaimStatus.resourceClaimName"},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := collect(&tc.pod); !slices.Equal(got, tc.want) {
				t.Errorf("references:\n%v\nwant\n%v", got, tc.want)
			}
		})
	}
}

func TestPathIn(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		ImagePullSecrets:    []corev1.LocalObjectReference{{Name: "pull"}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "e", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{}}}}}},
		Volumes:             []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}}},
	}}
	var got []string
	for r := range References(pod) {
		for _, f := range []string{"spec.imagePullSecrets", "spec.ephemeralContainers", "spec.volumes", "spec", "spec.volumes[0]"} {
			if r.Path.In(f) {
				got = append(got, r.Path.String()+" in "+f)
			}
		}
	}
	want := []string{
		"spec.imagePullSecrets[0].name in spec.imagePullSecrets",
		"spec.ephemeralContainers[0].envFrom[0].secretRef.name in spec.ephemeralContainers",
		"spec.volumes[0].secret.secretName in spec.volumes",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestReferencesStopWhenAsked(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		ServiceAccountName: "sa",
		ImagePullSecrets:   []corev1.LocalObjectReference{{Name: "a"}, {Name: "b"}},
		Containers:         []corev1.Container{{Name: "c", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{}}}}},
	}}
	n := 0
	for range References(pod) {
		n++
		if n == 2 {
			break
		}
	}
	if n != 2 {
		t.Errorf("visited %d references after asking to stop at the second", n)
	}
}

func TestContainers(t *testing.T) {
	spec := &corev1.PodSpec{
		InitContainers:      []corev1.Container{{Name: "i0"}},
		Containers:          []corev1.Container{{Name: "c0"}, {Name: "c1"}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "e0"}}},
	}
	var got []string
	for c := range Containers(spec) {
		got = append(got, c.Name+"@"+c.Path(field.NewPath("spec")).String())
	}
	want := []string{"i0@spec.initContainers[0]", "c0@spec.containers[0]", "c1@spec.containers[1]", "e0@spec.ephemeralContainers[0]"}
	if !slices.Equal(got, want) {
		t.Errorf("containers = %v, want %v", got, want)
	}
}

// The classification tables below name every field of the walked types: those through which a
// pod references an API object (with the kind expected) and those that reference nothing. A
// field in neither, such as one a future k8s.io/api adds, fails the test until someone decides.
var (
	volumeSources = map[string]Kind{
		"Secret": Secret, "ConfigMap": ConfigMap, "Projected": Secret, "PersistentVolumeClaim": PersistentVolumeClaim,
		"Ephemeral": PersistentVolumeClaim, "CSI": CSIDriver, "Glusterfs": Endpoints, "AzureFile": Secret,
		"CephFS": Secret, "Cinder": Secret, "FlexVolume": Secret, "ISCSI": Secret, "RBD": Secret, "ScaleIO": Secret,
		"StorageOS": Secret,
	}
	volumeSourcesReferencingNothing = []string{
		"HostPath", "EmptyDir", "GCEPersistentDisk", "AWSElasticBlockStore", "GitRepo", "NFS", "Flocker",
		"DownwardAPI", "FC", "AzureDisk", "VsphereVolume", "Quobyte", "PhotonPersistentDisk", "PortworxVolume", "Image",
	}
	projections = map[string]Kind{
		"Secret": Secret, "ConfigMap": ConfigMap, "ServiceAccountToken": ServiceAccount,
		"ClusterTrustBundle": ClusterTrustBundle, "PodCertificate": PodCertificate,
	}
	projectionsReferencingNothing = []string{"DownwardAPI"}
	envVarSources                 = map[string]Kind{"SecretKeyRef": Secret, "ConfigMapKeyRef": ConfigMap}
	// FileKeyRef reads a key from a file in one of the pod's volumes, not from the API.
	envVarSourcesReferencingNothing  = []string{"FieldRef", "ResourceFieldRef", "FileKeyRef"}
	envFromSources                   = map[string]Kind{"SecretRef": Secret, "ConfigMapRef": ConfigMap}
	envFromSourcesReferencingNothing = []string{"Prefix"}
	containerFields                  = map[string]Kind{"Env": Secret, "EnvFrom": Secret}
	podSpecFields                    = map[string]Kind{
		"ServiceAccountName": ServiceAccount, "DeprecatedServiceAccount": ServiceAccount, "ImagePullSecrets": Secret,
		"Volumes": Secret, "InitContainers": Secret, "Containers": Secret, "EphemeralContainers": Secret,
		"ResourceClaims": ResourceClaim,
	}
)

func TestEveryFieldIsClassified(t *testing.T) {
	checkFields(t, reflect.TypeFor[corev1.VolumeSource](), volumeSources, volumeSourcesReferencingNothing, func(v reflect.Value) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{ServiceAccountName: "", Volumes: []corev1.Volume{{Name: "v", VolumeSource: v.Interface().(corev1.VolumeSource)}}}}
	})
	checkFields(t, reflect.TypeFor[corev1.VolumeProjection](), projections, projectionsReferencingNothing, func(v reflect.Value) *corev1.Pod {
		src := v.Interface().(corev1.VolumeProjection)
		return &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
			Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{src}},
		}}}}}
	})
	checkFields(t, reflect.TypeFor[corev1.EnvVarSource](), envVarSources, envVarSourcesReferencingNothing, func(v reflect.Value) *corev1.Pod {
		src := v.Interface().(corev1.EnvVarSource)
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Env: []corev1.EnvVar{{Name: "E", ValueFrom: &src}}}}}}
	})
	checkFields(t, reflect.TypeFor[corev1.EnvFromSource](), envFromSources, envFromSourcesReferencingNothing, func(v reflect.Value) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{EnvFrom: []corev1.EnvFromSource{v.Interface().(corev1.EnvFromSource)}}}}}
	})
	checkFields(t, reflect.TypeFor[corev1.Container](), containerFields, nil, func(v reflect.Value) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{v.Interface().(corev1.Container)}}}
	})
	checkFields(t, reflect.TypeFor[corev1.PodSpec](), podSpecFields, nil, func(v reflect.Value) *corev1.Pod {
		return &corev1.Pod{Spec: v.Interface().(corev1.PodSpec)}
	})
}

// checkFields sets each field of typ alone, filled with non-empty values all the way down, and
// checks what the walk reports of the pod that holds it. When nothing is nil, every other field
// is taken to reference nothing: for Container and PodSpec only the referencing fields are listed.
func checkFields(t *testing.T, typ reflect.Type, refs map[string]Kind, nothing []string, podWith func(reflect.Value) *corev1.Pod) {
	t.Helper()
	for i := range typ.NumField() {
		f := typ.Field(i)
		want, references := refs[f.Name]
		listedAsNothing := slices.Contains(nothing, f.Name)
		if nothing != nil && !references && !listedAsNothing {
			t.Errorf("%s.%s is not classified: list it as referencing an API object (and walk it) or as referencing nothing", typ.Name(), f.Name)
			continue
		}
		if references && listedAsNothing {
			t.Errorf("%s.%s is listed both ways", typ.Name(), f.Name)
		}
		v := reflect.New(typ).Elem()
		podwalktest.Fill(v.Field(i))
		got := collect(podWith(v))
		if references {
			if !slices.ContainsFunc(got, func(r found) bool { return r.kind == want }) {
				t.Errorf("%s.%s set: references %v, want one of kind %s", typ.Name(), f.Name, got, want.Resource())
			}
			if slices.ContainsFunc(got, func(r found) bool { return r.kind == Unknown }) {
				t.Errorf("%s.%s set: reported as unknown: %v", typ.Name(), f.Name, got)
			}
			continue
		}
		if len(got) != 0 {
			t.Errorf("%s.%s set: references %v, want none", typ.Name(), f.Name, got)
		}
	}
	for name := range refs {
		if _, ok := typ.FieldByName(name); !ok {
			t.Errorf("%s has no field %s any more", typ.Name(), name)
		}
	}
}
