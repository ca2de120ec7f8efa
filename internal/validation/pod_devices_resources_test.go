package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// withBlockClaim adds a claim-backed volume "disk" to the pod.
func withBlockClaim(p *corev1.Pod) {
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "disk", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "disk"},
	}})
}

func TestValidateVolumeDevices(t *testing.T) {
	devices := func(ds ...corev1.VolumeDevice) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			withBlockClaim(p)
			p.Spec.Containers[0].VolumeDevices = ds
		}
	}
	tests := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   []want
	}{
		{name: "a claim as a block device", mutate: devices(corev1.VolumeDevice{Name: "disk", DevicePath: "/dev/xvda"})},
		{name: "no name", mutate: devices(corev1.VolumeDevice{DevicePath: "/dev/xvda"}), want: []want{
			required("spec.containers[0].volumeDevices[0].name"), notFound("spec.containers[0].volumeDevices[0].name"),
		}},
		{name: "unknown volume", mutate: devices(corev1.VolumeDevice{Name: "nope", DevicePath: "/dev/xvda"}), want: []want{
			notFound("spec.containers[0].volumeDevices[0].name"),
		}},
		{name: "a volume that is not a claim", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].VolumeMounts = nil
			p.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}
		}, want: []want{invalid("spec.containers[0].volumeDevices[0].name")}},
		{name: "the same volume twice", mutate: devices(
			corev1.VolumeDevice{Name: "disk", DevicePath: "/dev/xvda"}, corev1.VolumeDevice{Name: "disk", DevicePath: "/dev/xvdb"},
		), want: []want{invalid("spec.containers[0].volumeDevices[1].name")}},
		{name: "no device path", mutate: devices(corev1.VolumeDevice{Name: "disk"}), want: []want{
			required("spec.containers[0].volumeDevices[0].devicePath"),
		}},
		{name: "backsteps in the device path", mutate: devices(corev1.VolumeDevice{Name: "disk", DevicePath: "/dev/../etc/xvda"}), want: []want{
			invalid("spec.containers[0].volumeDevices[0].devicePath"),
		}},
		{name: "one device path for two devices", mutate: func(p *corev1.Pod) {
			withBlockClaim(p)
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "disk2", VolumeSource: corev1.VolumeSource{
				Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: validPVC().Spec}},
			}})
			p.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "disk", DevicePath: "/dev/xvda"}, {Name: "disk2", DevicePath: "/dev/xvda"}}
		}, want: []want{invalid("spec.containers[0].volumeDevices[1].devicePath")}},
		{name: "a volume both mounted and a device", mutate: func(p *corev1.Pod) {
			withBlockClaim(p)
			p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "disk", MountPath: "/disk"})
			p.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "disk", DevicePath: "/dev/xvda"}}
		}, want: []want{invalid("spec.containers[0].volumeDevices[0].name"), invalid("spec.containers[0].volumeMounts[1].name")}},
		{name: "a device at a mount path", mutate: devices(corev1.VolumeDevice{Name: "disk", DevicePath: "/data"}), want: []want{
			invalid("spec.containers[0].volumeDevices[0].devicePath"), invalid("spec.containers[0].volumeMounts[0].mountPath"),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := validPod()
			tc.mutate(p)
			expectErrors(t, ValidatePod(p), tc.want...)
		})
	}
}

func TestValidateResourceRequirements(t *testing.T) {
	q := resource.MustParse
	resources := func(requests, limits corev1.ResourceList) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: requests, Limits: limits}
		}
	}
	const hugepages = corev1.ResourceName("hugepages-2Mi")
	const gpu = corev1.ResourceName("example.com/gpu")
	tests := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   []want
	}{
		{name: "requests under limits", mutate: resources(corev1.ResourceList{"cpu": q("100m"), "memory": q("64Mi")}, corev1.ResourceList{"cpu": q("1"), "memory": q("128Mi")})},
		{name: "requests only", mutate: resources(corev1.ResourceList{"cpu": q("100m")}, nil)},
		{name: "limits only", mutate: resources(nil, corev1.ResourceList{"memory": q("1Gi")})},
		{name: "request above its limit", mutate: resources(corev1.ResourceList{"cpu": q("2")}, corev1.ResourceList{"cpu": q("1")}), want: []want{
			invalid("spec.containers[0].resources.requests"),
		}},
		{name: "negative quantity", mutate: resources(corev1.ResourceList{"cpu": q("-1")}, nil), want: []want{
			invalid("spec.containers[0].resources.requests[cpu]"),
		}},
		// As upstream: neither a standard resource nor one for containers.
		{name: "unknown standard name", mutate: resources(corev1.ResourceList{"cpus": q("1")}, nil), want: []want{
			invalid("spec.containers[0].resources.requests[cpus]"), invalid("spec.containers[0].resources.requests[cpus]"),
		}},
		{name: "extended resource at its limit", mutate: resources(corev1.ResourceList{gpu: q("1")}, corev1.ResourceList{gpu: q("1")})},
		{name: "extended resource below its limit", mutate: resources(corev1.ResourceList{gpu: q("1")}, corev1.ResourceList{gpu: q("2")}), want: []want{
			invalid("spec.containers[0].resources.requests"),
		}},
		{name: "extended resource without a limit", mutate: resources(corev1.ResourceList{gpu: q("1")}, nil), want: []want{
			required("spec.containers[0].resources.limits"),
		}},
		{name: "fractional extended resource", mutate: resources(corev1.ResourceList{gpu: q("500m")}, corev1.ResourceList{gpu: q("500m")}), want: []want{
			invalid("spec.containers[0].resources.requests[example.com/gpu]"), invalid("spec.containers[0].resources.limits[example.com/gpu]"),
		}},
		{name: "hugepages with memory", mutate: resources(
			corev1.ResourceList{hugepages: q("4Mi"), "memory": q("64Mi")}, corev1.ResourceList{hugepages: q("4Mi"), "memory": q("64Mi")},
		)},
		{name: "hugepages without cpu or memory", mutate: resources(corev1.ResourceList{hugepages: q("4Mi")}, corev1.ResourceList{hugepages: q("4Mi")}), want: []want{
			forbidden("spec.containers[0].resources"),
		}},
		{name: "hugepages not a multiple of the page size", mutate: resources(
			corev1.ResourceList{hugepages: q("3Mi"), "memory": q("64Mi")}, corev1.ResourceList{hugepages: q("3Mi"), "memory": q("64Mi")},
		), want: []want{invalid("spec.containers[0].resources.requests[hugepages-2Mi]"), invalid("spec.containers[0].resources.limits[hugepages-2Mi]")}},
		{name: "claim the pod declares", mutate: func(p *corev1.Pod) {
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptrTo("gpu-claim")}}
			p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
		}},
		{name: "claim used twice", mutate: func(p *corev1.Pod) {
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptrTo("gpu-claim")}}
			p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}, {Name: "gpu"}}
		}, want: []want{duplicate("spec.containers[0].resources.claims[1]")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := validPod()
			tc.mutate(p)
			expectErrors(t, ValidatePod(p), tc.want...)
		})
	}
}
