package serviceaccount

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/idplane/idplane/internal/podwalk"
	"github.com/idplane/idplane/internal/serviceaccount"
)

const (
	// TokenVolumePrefix starts the name of the token volume; the plugin adds none to a pod that
	// already has a volume named so.
	TokenVolumePrefix = "kube-api-access-"
	// TokenMountPath is where containers find the token, the cluster CA and their namespace:
	// the path client libraries read in-cluster credentials from.
	TokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
)

// mountToken mounts the token volume read-only at TokenMountPath in every container (init,
// regular and ephemeral) that has nothing mounted there, and adds the volume if one got mounted and
// the pod has none yet.
func mountToken(pod *corev1.Pod) {
	volume := tokenVolumeName(pod)
	hasVolume := volume != ""
	if !hasVolume {
		volume = TokenVolumePrefix + utilrand.String(5)
	}
	mounted := false
	for c := range podwalk.Containers(&pod.Spec) {
		if !mountsTokenPath(c.Container) {
			c.VolumeMounts = append(c.VolumeMounts, tokenVolumeMount(volume))
			mounted = true
		}
	}
	if mounted && !hasVolume {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
			Name:         volume,
			VolumeSource: corev1.VolumeSource{Projected: tokenVolumeSource()},
		})
	}
}

// mountTokenInNewEphemeral gives the debug containers a pods/ephemeralcontainers write adds the
// pod's token volume, as every other container of the pod has it. A pod admitted without the
// volume gets none (volumes cannot be added to a running pod), and containers added earlier are
// left as they are, since they cannot change.
func mountTokenInNewEphemeral(pod, old *corev1.Pod) {
	volume := tokenVolumeName(pod)
	if volume == "" {
		return
	}
	earlier := map[string]bool{}
	for _, c := range old.Spec.EphemeralContainers {
		earlier[c.Name] = true
	}
	for c := range podwalk.Containers(&pod.Spec) {
		if c.Kind == podwalk.EphemeralContainer && !earlier[c.Name] && !mountsTokenPath(c.Container) {
			c.VolumeMounts = append(c.VolumeMounts, tokenVolumeMount(volume))
		}
	}
}

// tokenVolumeName is the name of the pod's token volume, or "" when it has none.
func tokenVolumeName(pod *corev1.Pod) string {
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, TokenVolumePrefix) {
			return v.Name
		}
	}
	return ""
}

func tokenVolumeMount(volume string) corev1.VolumeMount {
	return corev1.VolumeMount{Name: volume, ReadOnly: true, MountPath: TokenMountPath}
}

// mountsTokenPath reports whether the container's author already put something at the token's
// path; the plugin does not shadow it.
func mountsTokenPath(c *corev1.Container) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath == TokenMountPath {
			return true
		}
	}
	return false
}

// tokenVolumeSource is the token volume: a bound token of the pod's account, the cluster CA
// bundle every namespace gets as ConfigMap kube-root-ca.crt, and the pod's namespace. It is added
// after decoding, so it carries the values defaulting would have set.
func tokenVolumeSource() *corev1.ProjectedVolumeSource {
	return &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To(corev1.ProjectedVolumeSourceDefaultMode),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
				Path:              "token",
				ExpirationSeconds: ptr.To[int64](serviceaccount.InjectedTokenSeconds),
			}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{
				Items: []corev1.DownwardAPIVolumeFile{{
					Path:     "namespace",
					FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
				}},
			}},
		},
	}
}
