package serviceaccount

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/idplane/idplane/internal/podwalk"
)

const (
	// TokenVolumePrefix starts the name of the token volume; the plugin adds none to a pod that
	// already has a volume named so.
	TokenVolumePrefix = "kube-api-access-"
	// TokenMountPath is where containers find the token, the cluster CA and their namespace:
	// the path client libraries read in-cluster credentials from.
	TokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// tokenExpirationSeconds is an hour and seven seconds: the odd seven seconds let the token
	// issuer recognise tokens of volumes this plugin added, as upstream's issuer does.
	tokenExpirationSeconds = 3607
)

// mountToken mounts the token volume read-only at TokenMountPath in every init and regular
// container that has nothing mounted there, and adds the volume if one got mounted and the pod
// has none yet. Ephemeral containers are left out: they cannot be set on create, and those added
// later get no credentials of the pod's account unless their author mounts them.
func mountToken(pod *corev1.Pod) {
	volume := ""
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, TokenVolumePrefix) {
			volume = v.Name
			break
		}
	}
	hasVolume := volume != ""
	if !hasVolume {
		volume = TokenVolumePrefix + utilrand.String(5)
	}
	mounted := false
	for c := range podwalk.Containers(&pod.Spec) {
		if c.Kind == podwalk.EphemeralContainer || mountsTokenPath(c.Container) {
			continue
		}
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volume, ReadOnly: true, MountPath: TokenMountPath})
		mounted = true
	}
	if mounted && !hasVolume {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
			Name:         volume,
			VolumeSource: corev1.VolumeSource{Projected: tokenVolumeSource()},
		})
	}
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
				ExpirationSeconds: ptr.To(int64(tokenExpirationSeconds)),
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
