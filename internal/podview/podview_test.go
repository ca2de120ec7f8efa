package podview

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/idplane/idplane/internal/podwalk"
	"github.com/idplane/idplane/internal/podwalk/podwalktest"
)

// TestSlimKeepsEveryReference runs podwalk over every shape of pod it descends into, each with
// one field set and filled all the way down, before and after Slim: the Node authorizer's graph
// and NodeRestriction judge a slimmed pod exactly as the whole one.
func TestSlimKeepsEveryReference(t *testing.T) {
	shapes := podwalktest.Shapes()
	if len(shapes) == 0 {
		t.Fatal("no shapes")
	}
	for _, s := range shapes {
		t.Run(s.Field, func(t *testing.T) {
			slim := s.Pod.DeepCopy()
			Slim(slim)
			want, got := slices.Collect(podwalk.References(s.Pod)), slices.Collect(podwalk.References(slim))
			if !slices.EqualFunc(got, want, func(a, b podwalk.Reference) bool {
				return a.Kind == b.Kind && a.Name == b.Name && a.Path.String() == b.Path.String()
			}) {
				t.Errorf("references after Slim = %v, want %v", got, want)
			}
		})
	}
}

// TestSlimKeepsWhatReadersRead pins, on a pod with every part set, what the other readers read
// and that the bulk of the spec does go.
func TestSlimKeepsWhatReadersRead(t *testing.T) {
	expiry := int64(3607)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", UID: "uid-1", ResourceVersion: "7",
			Labels:            map[string]string{"app": "a"},
			Annotations:       map[string]string{corev1.MirrorPodAnnotationKey: "m", "note": "n"},
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "node-uid"}},
			DeletionTimestamp: &metav1.Time{},
			Finalizers:        []string{"f"},
		},
		Spec: corev1.PodSpec{
			NodeName: "n1", ServiceAccountName: "sa",
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.example/app:1", Command: []string{"run"},
				Env:          []corev1.EnvVar{{Name: "LITERAL", Value: "v"}, {Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}}},
				EnvFrom:      []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}},
				Resources:    corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
				VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/v"}},
			}},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}, TargetContainerName: "app"}},
			Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault", ExpirationSeconds: &expiry, Path: "token"}},
				{PodCertificate: &corev1.PodCertificateProjection{SignerName: "example.com/s", KeyType: "ED25519"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
			}}}}},
			Tolerations:  []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}},
			NodeSelector: map[string]string{"zone": "a"},
		},
		Status: corev1.PodStatus{
			Phase:                 corev1.PodRunning,
			Conditions:            []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ResourceClaimStatuses: []corev1.PodResourceClaimStatus{{Name: "c", ResourceClaimName: ptr("claim")}},
		},
	}
	slim := pod.DeepCopy()
	Slim(slim)

	wantMeta := metav1.ObjectMeta{
		Name: "p", Namespace: "ns", UID: "uid-1", ResourceVersion: "7", DeletionTimestamp: pod.DeletionTimestamp,
		Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "m"},
	}
	if !apiequality.Semantic.DeepEqual(slim.ObjectMeta, wantMeta) {
		t.Errorf("metadata:\n%+v\nwant\n%+v", slim.ObjectMeta, wantMeta)
	}
	if !apiequality.Semantic.DeepEqual(slim.Status, pod.Status) {
		t.Errorf("status changed: %+v", slim.Status)
	}
	if slim.Spec.NodeName != "n1" || slim.Spec.ServiceAccountName != "sa" || len(slim.Spec.EphemeralContainers) != 1 {
		t.Errorf("node, service account or ephemeral containers lost: %+v", slim.Spec)
	}
	sources := slim.Spec.Volumes[0].Projected.Sources
	if tok := sources[0].ServiceAccountToken; tok == nil || tok.Audience != "vault" {
		t.Errorf("token audience lost: %+v", sources[0])
	}
	if pc := sources[1].PodCertificate; pc == nil || pc.SignerName != "example.com/s" {
		t.Errorf("pod certificate signer lost: %+v", sources[1])
	}
	if sources[3].DownwardAPI == nil {
		t.Error("the downward API source itself went: podwalk would call it unknown")
	}

	c := slim.Spec.Containers[0]
	if c.Name != "app" || len(c.Env) != 2 || c.Env[1].ValueFrom == nil || len(c.EnvFrom) != 1 {
		t.Errorf("container name or environment references lost: %+v", c)
	}
	dropped := map[string]bool{
		"image":            c.Image == "" && slim.Spec.EphemeralContainers[0].Image == "",
		"command":          c.Command == nil,
		"literal env":      c.Env[0].Value == "",
		"resources":        c.Resources.Limits == nil,
		"mounts":           c.VolumeMounts == nil,
		"projection items": sources[2].ConfigMap.Items == nil && sources[3].DownwardAPI.Items == nil,
		"tolerations":      slim.Spec.Tolerations == nil,
		"node selector":    slim.Spec.NodeSelector == nil,
	}
	for what, ok := range dropped {
		if !ok {
			t.Errorf("%s kept", what)
		}
	}

	again := slim.DeepCopy()
	Slim(again)
	if !apiequality.Semantic.DeepEqual(again, slim) {
		t.Error("a second Slim changed the pod")
	}
}

func ptr[T any](v T) *T { return &v }
