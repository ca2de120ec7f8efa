package defaults

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// defaultedSpec is the pod-level part every defaulted pod carries, with the given containers.
func defaultedSpec(containers ...corev1.Container) corev1.PodSpec {
	return corev1.PodSpec{
		Containers:                    containers,
		RestartPolicy:                 corev1.RestartPolicyAlways,
		DNSPolicy:                     corev1.DNSClusterFirst,
		TerminationGracePeriodSeconds: ptr.To[int64](30),
		SchedulerName:                 corev1.DefaultSchedulerName,
		SecurityContext:               &corev1.PodSecurityContext{},
		EnableServiceLinks:            ptr.To(true),
	}
}

// defaultedContainer is a container with only name and image set, after defaulting.
func defaultedContainer(name, image string, pull corev1.PullPolicy) corev1.Container {
	return corev1.Container{
		Name:                     name,
		Image:                    image,
		ImagePullPolicy:          pull,
		TerminationMessagePath:   "/dev/termination-log",
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}
}

func TestPod(t *testing.T) {
	tests := []struct {
		name string
		in   corev1.PodSpec
		want corev1.PodSpec
	}{
		{
			name: "empty spec gets pod-level defaults and no service account",
			in:   corev1.PodSpec{},
			want: defaultedSpec(),
		},
		{
			name: "explicit pod-level values are kept",
			in: corev1.PodSpec{
				RestartPolicy:                 corev1.RestartPolicyNever,
				DNSPolicy:                     corev1.DNSDefault,
				TerminationGracePeriodSeconds: ptr.To[int64](5),
				SchedulerName:                 "custom",
				SecurityContext:               &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)},
				EnableServiceLinks:            ptr.To(false),
				ServiceAccountName:            "builder",
			},
			want: func() corev1.PodSpec {
				s := defaultedSpec()
				s.RestartPolicy = corev1.RestartPolicyNever
				s.DNSPolicy = corev1.DNSDefault
				s.TerminationGracePeriodSeconds = ptr.To[int64](5)
				s.SchedulerName = "custom"
				s.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}
				s.EnableServiceLinks = ptr.To(false)
				s.ServiceAccountName = "builder"
				s.DeprecatedServiceAccount = "builder"
				return s
			}(),
		},
		{
			name: "containers get pull policy, termination message, port protocol and fieldRef version",
			in: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "untagged", Image: "nginx"},
				{
					Name:  "pinned",
					Image: "nginx:1.27",
					Ports: []corev1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 53, Protocol: corev1.ProtocolUDP}},
					Env: []corev1.EnvVar{
						{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
						{Name: "CONF", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: "v", Path: "p", Key: "k"}}},
						{Name: "PLAIN", Value: "x"},
					},
				},
				{Name: "explicit", Image: "nginx", ImagePullPolicy: corev1.PullNever, TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError},
			}},
			want: func() corev1.PodSpec {
				pinned := defaultedContainer("pinned", "nginx:1.27", corev1.PullIfNotPresent)
				pinned.Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}, {ContainerPort: 53, Protocol: corev1.ProtocolUDP}}
				pinned.Env = []corev1.EnvVar{
					{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.nodeName"}}},
					{Name: "CONF", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: "v", Path: "p", Key: "k", Optional: ptr.To(false)}}},
					{Name: "PLAIN", Value: "x"},
				}
				explicit := defaultedContainer("explicit", "nginx", corev1.PullNever)
				explicit.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
				return defaultedSpec(defaultedContainer("untagged", "nginx", corev1.PullAlways), pinned, explicit)
			}(),
		},
		{
			name: "limits fill unset requests and quantities round up to milli",
			in: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "c", Image: "app:1", Resources: corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.0001"), corev1.ResourceMemory: resource.MustParse("1Gi")},
					Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
				}}},
				InitContainers: []corev1.Container{{Name: "i", Image: "app:1", Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
				}}},
				Overhead: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.0005")},
			},
			want: func() corev1.PodSpec {
				c := defaultedContainer("c", "app:1", corev1.PullIfNotPresent)
				c.Resources = corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
				}
				i := defaultedContainer("i", "app:1", corev1.PullIfNotPresent)
				i.Resources = corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
				}
				s := defaultedSpec(c)
				s.InitContainers = []corev1.Container{i}
				s.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m")}
				return s
			}(),
		},
		{
			name: "probes and lifecycle handlers",
			in: corev1.PodSpec{Containers: []corev1.Container{{
				Name:  "c",
				Image: "app:1",
				LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080)},
				}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:   corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090}},
					PeriodSeconds:  30,
					TimeoutSeconds: 5,
				},
				StartupProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, FailureThreshold: 30},
				Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
					HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http"), Path: "/quit"},
				}},
			}}},
			want: func() corev1.PodSpec {
				c := defaultedContainer("c", "app:1", corev1.PullIfNotPresent)
				c.LivenessProbe = &corev1.Probe{
					ProbeHandler: corev1.ProbeHandler{
						HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080), Path: "/", Scheme: corev1.URISchemeHTTP},
					},
					TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
				}
				c.ReadinessProbe = &corev1.Probe{
					ProbeHandler:   corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090, Service: ptr.To("")}},
					TimeoutSeconds: 5, PeriodSeconds: 30, SuccessThreshold: 1, FailureThreshold: 3,
				}
				c.StartupProbe = &corev1.Probe{
					ProbeHandler:   corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
					TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 30,
				}
				c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
					HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http"), Path: "/quit", Scheme: corev1.URISchemeHTTP},
				}}
				return defaultedSpec(c)
			}(),
		},
		{
			name: "init and ephemeral containers get container defaults",
			in: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "init", Image: "busybox:latest"}},
				EphemeralContainers: []corev1.EphemeralContainer{{
					EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox:1.36"},
					TargetContainerName:      "app",
				}},
			},
			want: func() corev1.PodSpec {
				s := defaultedSpec()
				s.InitContainers = []corev1.Container{defaultedContainer("init", "busybox:latest", corev1.PullAlways)}
				s.EphemeralContainers = []corev1.EphemeralContainer{{
					EphemeralContainerCommon: corev1.EphemeralContainerCommon(defaultedContainer("debug", "busybox:1.36", corev1.PullIfNotPresent)),
					TargetContainerName:      "app",
				}}
				return s
			}(),
		},
		{
			name: "host network mirrors container ports to host ports",
			in: corev1.PodSpec{
				HostNetwork: true,
				Containers: []corev1.Container{{Name: "c", Image: "app:1", Ports: []corev1.ContainerPort{
					{ContainerPort: 80}, {ContainerPort: 443, HostPort: 8443},
				}}},
			},
			want: func() corev1.PodSpec {
				c := defaultedContainer("c", "app:1", corev1.PullIfNotPresent)
				c.Ports = []corev1.ContainerPort{
					{ContainerPort: 80, HostPort: 80, Protocol: corev1.ProtocolTCP},
					{ContainerPort: 443, HostPort: 8443, Protocol: corev1.ProtocolTCP},
				}
				s := defaultedSpec(c)
				s.HostNetwork = true
				return s
			}(),
		},
		{
			name: "volume sources",
			in: corev1.PodSpec{Volumes: []corev1.Volume{
				{Name: "scratch"},
				{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{DefaultMode: ptr.To[int32](0400)}}},
				{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}}},
				{Name: "downward", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
				}}}},
				{Name: "projected", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
					{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
						{Path: "ns", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}},
					}}},
				}}}},
				{Name: "image", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "registry.example.com/data"}}},
				{Name: "claim", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
					VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{},
				}}},
			}},
			want: func() corev1.PodSpec {
				s := defaultedSpec()
				s.Volumes = []corev1.Volume{
					{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr.To[int32](0644)}}},
					{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{DefaultMode: ptr.To[int32](0400)}}},
					{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log", Type: ptr.To(corev1.HostPathUnset)}}},
					{Name: "downward", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
						DefaultMode: ptr.To[int32](0644),
						Items: []corev1.DownwardAPIVolumeFile{
							{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels"}},
						},
					}}},
					{Name: "projected", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
						DefaultMode: ptr.To[int32](0644),
						Sources: []corev1.VolumeProjection{
							{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3600)}},
							{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
								{Path: "ns", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}},
							}}},
						},
					}}},
					{Name: "image", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "registry.example.com/data", PullPolicy: corev1.PullAlways}}},
					{Name: "claim", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
						VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{
							VolumeMode: ptr.To(corev1.PersistentVolumeFilesystem),
						}},
					}}},
				}
				return s
			}(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: tt.in}
			Pod(pod)
			if !equality.Semantic.DeepEqual(pod.Spec, tt.want) {
				t.Errorf("defaulted spec differs (-got +want):\n%s", diff.Diff(pod.Spec, tt.want))
			}
		})
	}
}

func TestPodIsIdempotent(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "nginx", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		}}},
		Volumes: []corev1.Volume{{Name: "v"}},
	}}
	Pod(pod)
	once := pod.DeepCopy()
	Pod(pod)
	if !equality.Semantic.DeepEqual(pod, once) {
		t.Errorf("second defaulting changed the pod:\n%s", diff.Diff(once, pod))
	}
}

func TestPodLegacyFields(t *testing.T) {
	tests := []struct {
		name     string
		in, want corev1.Pod
	}{
		{
			name: "deprecated serviceAccount fills serviceAccountName",
			in:   corev1.Pod{Spec: corev1.PodSpec{DeprecatedServiceAccount: "old"}},
			want: corev1.Pod{Spec: corev1.PodSpec{ServiceAccountName: "old", DeprecatedServiceAccount: "old"}},
		},
		{
			name: "serviceAccountName wins over the deprecated field",
			in:   corev1.Pod{Spec: corev1.PodSpec{ServiceAccountName: "new", DeprecatedServiceAccount: "old"}},
			want: corev1.Pod{Spec: corev1.PodSpec{ServiceAccountName: "new", DeprecatedServiceAccount: "new"}},
		},
		{
			name: "podIP becomes podIPs",
			in:   corev1.Pod{Status: corev1.PodStatus{PodIP: "10.0.0.1", HostIP: "192.0.2.1"}},
			want: corev1.Pod{Status: corev1.PodStatus{PodIP: "10.0.0.1", PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}}, HostIP: "192.0.2.1", HostIPs: []corev1.HostIP{{IP: "192.0.2.1"}}}},
		},
		{
			name: "podIPs decide podIP",
			in:   corev1.Pod{Status: corev1.PodStatus{PodIP: "10.0.0.9", PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "fd00::1"}}}},
			want: corev1.Pod{Status: corev1.PodStatus{PodIP: "10.0.0.1", PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "fd00::1"}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in.DeepCopy()
			syncLegacyPodFields(got)
			if !equality.Semantic.DeepEqual(got, &tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
