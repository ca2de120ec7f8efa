package apiserver

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestServiceAccountAdmission creates pods through the server: refused while their account is
// missing, admitted as soon as it exists, stored with the account and its token volume.
func TestServiceAccountAdmission(t *testing.T) {
	ts := startTestServer(t, t.TempDir(), nil)
	ctx := context.Background()
	pods := ts.client.CoreV1().Pods("default")

	// Not "default": a controller may create that one at any moment.
	_, err := pods.Create(ctx, newPod("build", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "builder" }), metav1.CreateOptions{})
	want := `error looking up service account default/builder: serviceaccount "builder" not found`
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("pod of a missing account: got %v, want 403 saying %q", err, want)
	}
	// At once: the plugin asks the server when its cache has not seen the account yet.
	ensureServiceAccount(t, ts.client, "default", "builder")
	if _, err := pods.Create(ctx, newPod("build", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "builder" }), metav1.CreateOptions{}); err != nil {
		t.Fatalf("pod of a new account: %v", err)
	}

	ensureServiceAccount(t, ts.client, "default", "default")
	mustCreate(t, pods.Create, newPod("web", func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "registry.example/setup:1"}}
	}))
	web, err := pods.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if web.Spec.ServiceAccountName != "default" || web.Spec.DeprecatedServiceAccount != "default" {
		t.Errorf("stored pod runs as %q (deprecated field %q), want default", web.Spec.ServiceAccountName, web.Spec.DeprecatedServiceAccount)
	}
	if len(web.Spec.Volumes) != 1 {
		t.Fatalf("stored pod has volumes %+v, want the token volume", web.Spec.Volumes)
	}
	volume := web.Spec.Volumes[0]
	if !regexp.MustCompile(`^kube-api-access-[a-z0-9]{5}$`).MatchString(volume.Name) {
		t.Errorf("token volume named %q", volume.Name)
	}
	mode, expiry := int32(0o644), int64(3607)
	wantSource := corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &expiry}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
				Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
			}}}},
		},
	}}
	if diff := cmp.Diff(wantSource, volume.VolumeSource); diff != "" {
		t.Errorf("token volume (-want +got):\n%s", diff)
	}
	wantMounts := []corev1.VolumeMount{{Name: volume.Name, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}
	for _, c := range append(web.Spec.InitContainers, web.Spec.Containers...) {
		if diff := cmp.Diff(wantMounts, c.VolumeMounts); diff != "" {
			t.Errorf("mounts of container %s (-want +got):\n%s", c.Name, diff)
		}
	}

	// A debug container added later gets the pod's token like every other container.
	web.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Image: "registry.example/busybox:1", TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent,
	}}}
	debugged, err := pods.UpdateEphemeralContainers(ctx, "web", web, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("adding a debug container: %v", err)
	}
	if diff := cmp.Diff(wantMounts, debugged.Spec.EphemeralContainers[0].VolumeMounts); diff != "" {
		t.Errorf("mounts of the debug container (-want +got):\n%s", diff)
	}

	mustCreate(t, pods.Create, newPod("quiet", func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = ptr(false) }))
	quiet, err := pods.Get(ctx, "quiet", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if quiet.Spec.ServiceAccountName != "default" || len(quiet.Spec.Volumes) != 0 || len(quiet.Spec.Containers[0].VolumeMounts) != 0 {
		t.Errorf("pod opting out: account %q, volumes %+v, mounts %+v; want default and no token", quiet.Spec.ServiceAccountName, quiet.Spec.Volumes, quiet.Spec.Containers[0].VolumeMounts)
	}

	// A mirror pod from anyone who may create pods (here the admin) may not name an account, a
	// secret or a token projection: the plugin neither defaults nor checks a mirror pod's account.
	_, err = pods.Create(ctx, newPod("fake-static", func(p *corev1.Pod) {
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
		p.Spec.NodeName = "node1"
		p.Spec.ServiceAccountName = "nobody"
		p.Spec.Volumes = []corev1.Volume{
			{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db"}}},
			{Name: "t", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
			}}}},
		}
	}), metav1.CreateOptions{})
	if want := "a mirror pod may not reference service accounts"; !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("mirror pod naming an account: got %v, want 403 saying %q", err, want)
	}
}
