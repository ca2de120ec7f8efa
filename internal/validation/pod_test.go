package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func validContainer(name string) corev1.Container {
	return corev1.Container{
		Name:                     name,
		Image:                    "nginx:1.27",
		ImagePullPolicy:          corev1.PullIfNotPresent,
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}
}

// validPod is a pod as it looks after defaulting.
func validPod() *corev1.Pod {
	app := validContainer("app")
	app.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
	app.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	app.Env = []corev1.EnvVar{{Name: "MODE", Value: "prod"}}
	app.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
					DefaultMode: ptrTo[int32](0o644),
					Sources: []corev1.VolumeProjection{
						{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptrTo[int64](3607), Path: "token"}},
						{ConfigMap: &corev1.ConfigMapProjection{
							LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
							Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
						}},
						{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
							Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
						}}}},
					},
				}}},
			},
			Containers:                    []corev1.Container{app},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptrTo[int64](30),
			DNSPolicy:                     corev1.DNSClusterFirst,
			ServiceAccountName:            "default",
			DeprecatedServiceAccount:      "default",
			SchedulerName:                 corev1.DefaultSchedulerName,
			SecurityContext:               &corev1.PodSecurityContext{},
		},
	}
}

func TestValidatePod(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   []want
	}{
		{name: "valid", mutate: func(*corev1.Pod) {}},
		{
			name: "valid with generated name, sidecar and probes",
			mutate: func(p *corev1.Pod) {
				p.GenerateName = "web-"
				p.Name = "web-x7k2p"
				sidecar := validContainer("proxy")
				sidecar.RestartPolicy = ptrTo(corev1.ContainerRestartPolicyAlways)
				sidecar.ReadinessProbe = &corev1.Probe{
					ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080), Scheme: corev1.URISchemeHTTP}},
					TimeoutSeconds:   1,
					PeriodSeconds:    10,
					SuccessThreshold: 1,
					FailureThreshold: 3,
				}
				p.Spec.InitContainers = []corev1.Container{validContainer("init"), sidecar}
				p.Spec.Containers[0].LivenessProbe = &corev1.Probe{
					ProbeHandler:     corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}},
					SuccessThreshold: 1,
				}
				p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}}
			},
		},
		{
			name: "relaxed env var names are accepted",
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "1-odd.name:ok", Value: "x"})
			},
		},
		{name: "missing namespace", mutate: func(p *corev1.Pod) { p.Namespace = "" }, want: []want{required("metadata.namespace")}},
		{name: "invalid name", mutate: func(p *corev1.Pod) { p.Name = "Web" }, want: []want{invalid("metadata.name")}},
		{name: "invalid label", mutate: func(p *corev1.Pod) { p.Labels = map[string]string{"app": "not valid"} }, want: []want{invalid("metadata.labels")}},
		{
			name:   "annotations too large",
			mutate: func(p *corev1.Pod) { p.Annotations = map[string]string{"big": strings.Repeat("x", 256*1024)} },
			want:   []want{tooLong("metadata.annotations")},
		},
		{name: "unqualified non-standard finalizer", mutate: func(p *corev1.Pod) { p.Finalizers = []string{"foo"} }, want: []want{invalid("metadata.finalizers[0]")}},
		{name: "no containers", mutate: func(p *corev1.Pod) { p.Spec.Containers = nil }, want: []want{required("spec.containers")}},
		{
			name: "duplicate container name",
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers = append(p.Spec.Containers, validContainer("app"))
			},
			want: []want{duplicate("spec.containers[1].name")},
		},
		{
			name:   "init container name clashes with container",
			mutate: func(p *corev1.Pod) { p.Spec.InitContainers = []corev1.Container{validContainer("app")} },
			want:   []want{duplicate("spec.initContainers[0].name")},
		},
		{name: "missing image", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" }, want: []want{required("spec.containers[0].image")}},
		{name: "image with whitespace", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Image = " nginx" }, want: []want{invalid("spec.containers[0].image")}},
		{name: "invalid container name", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Name = "App" }, want: []want{invalid("spec.containers[0].name")}},
		{name: "container port zero", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 0 }, want: []want{required("spec.containers[0].ports[0].containerPort")}},
		{name: "container port out of range", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 70000 }, want: []want{invalid("spec.containers[0].ports[0].containerPort")}},
		{name: "host port out of range", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].HostPort = 70000 }, want: []want{invalid("spec.containers[0].ports[0].hostPort")}},
		{name: "invalid port name", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].Name = "http_1" }, want: []want{invalid("spec.containers[0].ports[0].name")}},
		{
			name: "duplicate port name",
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{Name: "http", ContainerPort: 81, Protocol: corev1.ProtocolTCP})
			},
			want: []want{duplicate("spec.containers[0].ports[1].name")},
		},
		{name: "unsupported protocol", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].Protocol = "ICMP" }, want: []want{notSupported("spec.containers[0].ports[0].protocol")}},
		{
			name: "host port conflict between containers",
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[0].Ports[0].HostPort = 8080
				side := validContainer("side")
				side.Ports = []corev1.ContainerPort{{ContainerPort: 81, HostPort: 8080, Protocol: corev1.ProtocolTCP}}
				p.Spec.Containers = append(p.Spec.Containers, side)
			},
			want: []want{duplicate("spec.containers[1].ports[0].hostPort")},
		},
		{
			name:   "volume with two sources",
			mutate: func(p *corev1.Pod) { p.Spec.Volumes[0].HostPath = &corev1.HostPathVolumeSource{Path: "/tmp"} },
			// An invalid volume cannot be mounted either.
			want: []want{forbidden("spec.volumes[0].emptyDir"), notFound("spec.containers[0].volumeMounts[0].name")},
		},
		{
			name:   "volume without source",
			mutate: func(p *corev1.Pod) { p.Spec.Volumes[0].EmptyDir = nil },
			// The mount of the now-invalid volume cannot be resolved either.
			want: []want{required("spec.volumes[0]"), notFound("spec.containers[0].volumeMounts[0].name")},
		},
		{
			name: "duplicate volume name",
			mutate: func(p *corev1.Pod) {
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			},
			want: []want{duplicate("spec.volumes[2].name")},
		},
		{
			name: "invalid volume name",
			mutate: func(p *corev1.Pod) {
				p.Spec.Volumes[0].Name = "Data"
				p.Spec.Containers[0].VolumeMounts[0].Name = "Data"
			},
			want: []want{invalid("spec.volumes[0].name"), notFound("spec.containers[0].volumeMounts[0].name")},
		},
		{
			name: "secret volume without name",
			mutate: func(p *corev1.Pod) {
				p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}
			},
			// An invalid volume cannot be mounted either.
			want: []want{required("spec.volumes[0].secret.secretName"), notFound("spec.containers[0].volumeMounts[0].name")},
		},
		{
			name: "hostPath with backsteps",
			mutate: func(p *corev1.Pod) {
				p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/../etc"}}
			},
			// An invalid volume cannot be mounted either.
			want: []want{invalid("spec.volumes[0].hostPath.path"), notFound("spec.containers[0].volumeMounts[0].name")},
		},
		{
			name: "configMap item escaping the volume",
			mutate: func(p *corev1.Pod) {
				p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"},
					Items:                []corev1.KeyToPath{{Key: "k", Path: "/etc/passwd"}},
				}}
			},
			// An invalid volume cannot be mounted either.
			want: []want{invalid("spec.volumes[0].configMap.items[0].path"), notFound("spec.containers[0].volumeMounts[0].name")},
		},
		{
			name:   "mount of unknown volume",
			mutate: func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].Name = "nope" },
			want:   []want{notFound("spec.containers[0].volumeMounts[0].name")},
		},
		{name: "mount without path", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].MountPath = "" }, want: []want{required("spec.containers[0].volumeMounts[0].mountPath")}},
		{
			name: "duplicate mount path",
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "token", MountPath: "/data"})
			},
			want: []want{invalid("spec.containers[0].volumeMounts[1].mountPath")},
		},
		{name: "env name with equals sign", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Env[0].Name = "A=B" }, want: []want{invalid("spec.containers[0].env[0].name")}},
		{name: "env without name", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Env[0].Name = "" }, want: []want{required("spec.containers[0].env[0].name")}},
		{
			name: "env valueFrom with two sources",
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[0].Env[0].Value = ""
				p.Spec.Containers[0].Env[0].ValueFrom = &corev1.EnvVarSource{
					ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "a"},
					SecretKeyRef:    &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}, Key: "b"},
				}
			},
			want: []want{invalid("spec.containers[0].env[0].valueFrom")},
		},
		{
			name: "env valueFrom with unsupported field path",
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[0].Env[0].Value = ""
				p.Spec.Containers[0].Env[0].ValueFrom = &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.restartPolicy"}}
			},
			want: []want{notSupported("spec.containers[0].env[0].valueFrom.fieldRef.fieldPath")},
		},
		{
			name: "envFrom without source",
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{Prefix: "X_"}}
			},
			want: []want{invalid("spec.containers[0].envFrom")},
		},
		{
			name: "envFrom with both sources",
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{
					ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}},
					SecretRef:    &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}},
				}}
			},
			want: []want{invalid("spec.containers[0].envFrom")},
		},
		{
			name: "requests above limits",
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
			},
			want: []want{invalid("spec.containers[0].resources.requests")},
		},
		{
			name: "unknown unprefixed resource",
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Limits["gpu"] = resource.MustParse("1")
			},
			// Upstream reports both the generic and the container rule.
			want: []want{invalid("spec.containers[0].resources.limits[gpu]"), invalid("spec.containers[0].resources.limits[gpu]")},
		},
		{
			name: "extended resource request without limit",
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Requests["example.com/gpu"] = resource.MustParse("1")
			},
			want: []want{required("spec.containers[0].resources.limits")},
		},
		{name: "unsupported restart policy", mutate: func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" }, want: []want{notSupported("spec.restartPolicy")}},
		{name: "unsupported dns policy", mutate: func(p *corev1.Pod) { p.Spec.DNSPolicy = "Google" }, want: []want{notSupported("spec.dnsPolicy")}},
		{name: "unsupported pull policy", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].ImagePullPolicy = "Sometimes" }, want: []want{notSupported("spec.containers[0].imagePullPolicy")}},
		{name: "missing pull policy", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].ImagePullPolicy = "" }, want: []want{required("spec.containers[0].imagePullPolicy")}},
		{
			name:   "unsupported termination message policy",
			mutate: func(p *corev1.Pod) { p.Spec.Containers[0].TerminationMessagePolicy = "Never" },
			want:   []want{notSupported("spec.containers[0].terminationMessagePolicy")},
		},
		{name: "negative grace period", mutate: func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptrTo[int64](-1) }, want: []want{invalid("spec.terminationGracePeriodSeconds")}},
		{name: "zero active deadline", mutate: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptrTo[int64](0) }, want: []want{invalid("spec.activeDeadlineSeconds")}},
		{name: "invalid node name", mutate: func(p *corev1.Pod) { p.Spec.NodeName = "Node_1" }, want: []want{invalid("spec.nodeName")}},
		{name: "invalid service account name", mutate: func(p *corev1.Pod) { p.Spec.ServiceAccountName = "SA" }, want: []want{invalid("spec.serviceAccountName")}},
		{name: "invalid hostname", mutate: func(p *corev1.Pod) { p.Spec.Hostname = "my.host" }, want: []want{invalid("spec.hostname")}},
		{name: "invalid subdomain", mutate: func(p *corev1.Pod) { p.Spec.Subdomain = "Sub" }, want: []want{invalid("spec.subdomain")}},
		{
			name: "toleration Exists with value",
			mutate: func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Value: "v"}}
			},
			want: []want{invalid("spec.tolerations[0].operator")},
		},
		{
			name: "toleration with unsupported effect",
			mutate: func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpEqual, Value: "v", Effect: "NoRun"}}
			},
			want: []want{notSupported("spec.tolerations[0].effect")},
		},
		{
			name: "tolerationSeconds without NoExecute",
			mutate: func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: ptrTo[int64](60)}}
			},
			want: []want{invalid("spec.tolerations[0].effect")},
		},
		{
			name: "projected source with two kinds",
			mutate: func(p *corev1.Pod) {
				p.Spec.Volumes[1].Projected.Sources[1].Secret = &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}
			},
			want: []want{forbidden("spec.volumes[1].projected.sources[1]")},
		},
		{
			name:   "empty projected source",
			mutate: func(p *corev1.Pod) { p.Spec.Volumes[1].Projected.Sources[1] = corev1.VolumeProjection{} },
			want:   []want{required("spec.volumes[1].projected.sources[1]")},
		},
		{
			name: "host port conflict within one init container",
			mutate: func(p *corev1.Pod) {
				c := validContainer("init2")
				c.Ports = []corev1.ContainerPort{
					{ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP},
					{ContainerPort: 81, HostPort: 8080, Protocol: corev1.ProtocolTCP},
				}
				p.Spec.InitContainers = []corev1.Container{validContainer("init1"), c}
			},
			want: []want{duplicate("spec.initContainers[1].ports[1].hostPort")},
		},
		{
			name: "token expiring too soon",
			mutate: func(p *corev1.Pod) {
				p.Spec.Volumes[1].Projected.Sources[0].ServiceAccountToken.ExpirationSeconds = ptrTo[int64](599)
			},
			want: []want{invalid("spec.volumes[1].projected.sources[0].serviceAccountToken.expirationSeconds")},
		},
		{
			name:   "token without path",
			mutate: func(p *corev1.Pod) { p.Spec.Volumes[1].Projected.Sources[0].ServiceAccountToken.Path = "" },
			want:   []want{required("spec.volumes[1].projected.sources[0].serviceAccountToken.path")},
		},
		{
			name: "token without service account",
			mutate: func(p *corev1.Pod) {
				p.Spec.ServiceAccountName = ""
				p.Spec.DeprecatedServiceAccount = ""
			},
			want: []want{forbidden("spec.volumes[1].projected.sources[0].serviceAccountToken")},
		},
		{name: "negative pod runAsUser", mutate: func(p *corev1.Pod) { p.Spec.SecurityContext.RunAsUser = ptrTo[int64](-1) }, want: []want{invalid("spec.securityContext.runAsUser")}},
		{
			name: "negative container runAsUser",
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptrTo[int64](-5)}
			},
			want: []want{invalid("spec.containers[0].securityContext.runAsUser")},
		},
		{
			name: "init container restart policy other than Always",
			mutate: func(p *corev1.Pod) {
				c := validContainer("init")
				c.RestartPolicy = ptrTo(corev1.ContainerRestartPolicyOnFailure)
				p.Spec.InitContainers = []corev1.Container{c}
			},
			want: []want{notSupported("spec.initContainers[0].restartPolicy")},
		},
		{
			name: "probe on plain init container",
			mutate: func(p *corev1.Pod) {
				c := validContainer("init")
				c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, SuccessThreshold: 1}
				p.Spec.InitContainers = []corev1.Container{c}
			},
			want: []want{forbidden("spec.initContainers[0].livenessProbe")},
		},
		{
			name:   "restart policy on regular container",
			mutate: func(p *corev1.Pod) { p.Spec.Containers[0].RestartPolicy = ptrTo(corev1.ContainerRestartPolicyAlways) },
			want:   []want{forbidden("spec.containers[0].restartPolicy")},
		},
		{
			name: "probe with two handlers",
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
					ProbeHandler: corev1.ProbeHandler{
						Exec:      &corev1.ExecAction{Command: []string{"true"}},
						TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)},
					},
					SuccessThreshold: 1,
				}
			},
			want: []want{forbidden("spec.containers[0].readinessProbe.tcpSocket")},
		},
		{
			name: "mirror pod without node",
			mutate: func(p *corev1.Pod) {
				p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
			},
			want: []want{invalid("metadata.annotations[kubernetes.io/config.mirror]")},
		},
		{
			name: "mirror pod with node",
			mutate: func(p *corev1.Pod) {
				p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
				p.Spec.NodeName = "node-1"
			},
		},
		{
			name: "ephemeral containers on create",
			mutate: func(p *corev1.Pod) {
				p.Spec.EphemeralContainers = []corev1.EphemeralContainer{validEphemeralContainer("debug")}
			},
			want: []want{forbidden("spec.ephemeralContainers")},
		},
		{
			name: "node name with scheduling gates",
			mutate: func(p *corev1.Pod) {
				p.Spec.NodeName = "node-1"
				p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
			},
			want: []want{forbidden("spec.nodeName")},
		},
		{
			name:   "invalid seccomp annotation",
			mutate: func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.SeccompPodAnnotationKey: "strict"} },
			want:   []want{invalid("metadata.annotations[seccomp.security.alpha.kubernetes.io/pod]")},
		},
		{
			name:   "invalid pod deletion cost",
			mutate: func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.PodDeletionCost: "lots"} },
			want:   []want{invalid("metadata.annotations[controller.kubernetes.io/pod-deletion-cost]")},
		},
		{
			name: "host network with different host port",
			mutate: func(p *corev1.Pod) {
				p.Spec.HostNetwork = true
				p.Spec.Containers[0].Ports[0].HostPort = 8080
			},
			want: []want{invalid("spec.containers[0].ports[0].hostPort")},
		},
		{
			name: "node affinity without terms",
			mutate: func(p *corev1.Pod) {
				p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{},
				}}
			},
			want: []want{required("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms")},
		},
		{
			name: "pod affinity without topology key",
			mutate: func(p *corev1.Pod) {
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
				}}
			},
			want: []want{required("spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey")},
		},
		{
			name: "dns policy None without config",
			mutate: func(p *corev1.Pod) {
				p.Spec.DNSPolicy = corev1.DNSNone
			},
			want: []want{required("spec.dnsConfig")},
		},
		{
			name: "duplicate sysctl",
			mutate: func(p *corev1.Pod) {
				p.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1"}, {Name: "net.core.somaxconn", Value: "2"}}
			},
			want: []want{duplicate("spec.securityContext.sysctls[1].name")},
		},
		{
			name: "net sysctl with host network",
			mutate: func(p *corev1.Pod) {
				p.Spec.HostNetwork = true
				p.Spec.Containers[0].Ports[0].HostPort = 80
				p.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1"}}
			},
			want: []want{invalid("spec.securityContext.sysctls[0].name")},
		},
		{
			name: "'/'-separated net sysctl with host network",
			mutate: func(p *corev1.Pod) {
				p.Spec.HostNetwork = true
				p.Spec.Containers[0].Ports[0].HostPort = 80
				p.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "net/ipv4/conf/eno2.100/rp_filter", Value: "1"}}
			},
			want: []want{invalid("spec.securityContext.sysctls[0].name")},
		},
		{
			name: "ipc sysctl with host IPC",
			mutate: func(p *corev1.Pod) {
				p.Spec.HostIPC = true
				p.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "kernel/shmmax", Value: "1"}}
			},
			want: []want{invalid("spec.securityContext.sysctls[0].name")},
		},
		{
			// fs/mqueue.x names file mqueue.x in fs, not a sysctl of the mqueue namespace.
			name: "'/'-separated sysctl outside the ipc namespace with host IPC",
			mutate: func(p *corev1.Pod) {
				p.Spec.HostIPC = true
				p.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "fs/mqueue.x", Value: "1"}}
			},
		},
		{
			name: "topology spread with non-positive skew",
			mutate: func(p *corev1.Pod) {
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 0, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule}}
			},
			want: []want{invalid("spec.topologySpreadConstraints[0].maxSkew")},
		},
		{
			name: "windows options on linux pod",
			mutate: func(p *corev1.Pod) {
				p.Spec.OS = &corev1.PodOS{Name: corev1.Linux}
				p.Spec.SecurityContext.WindowsOptions = &corev1.WindowsSecurityContextOptions{}
			},
			want: []want{forbidden("spec.securityContext.windowsOptions")},
		},
		{
			name: "stop signal without os",
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{StopSignal: ptrTo(corev1.SIGUSR1)}
			},
			want: []want{forbidden("spec.containers[0].lifecycle.stopSignal")},
		},
		{
			name: "ephemeral volume claim named after the pod",
			mutate: func(p *corev1.Pod) {
				p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
					VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: validPVC().Spec},
				}}
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "other", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "web-data"},
				}})
			},
			want: []want{invalid("spec.volumes[2].persistentVolumeClaim.claimName")},
		},
		{
			name: "container claim not declared by the pod",
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
			},
			want: []want{notFound("spec.containers[0].resources.claims[0]")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := validPod()
			tc.mutate(p)
			expectErrors(t, ValidatePod(p), tc.want...)
		})
	}
}

func validEphemeralContainer(name string) corev1.EphemeralContainer {
	return corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon(validContainer(name))}
}

// existingPod is validPod as stored: scheduled, with a resource version.
func existingPod() *corev1.Pod {
	p := validPod()
	p.ResourceVersion = "10"
	p.UID = "9f1d6f1c-2a57-4d2b-a3ab-1c4c3f4f6c0a"
	p.Spec.NodeName = "node-1"
	return p
}

func TestValidatePodUpdate(t *testing.T) {
	tests := []struct {
		name   string
		old    func(*corev1.Pod)
		mutate func(*corev1.Pod)
		want   []want
	}{
		{name: "no change", mutate: func(*corev1.Pod) {}},
		{name: "image change", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.28" }},
		{name: "label change", mutate: func(p *corev1.Pod) { p.Labels["tier"] = "frontend" }},
		{name: "image cleared", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" }, want: []want{required("spec.containers[0].image"), required("spec.containers[0].image")}},
		{
			name:   "container added",
			mutate: func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, validContainer("side")) },
			want:   []want{forbidden("spec.containers")},
		},
		{
			name:   "port changed",
			mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 81 },
			want:   []want{forbidden("spec")},
		},
		{name: "node changed", mutate: func(p *corev1.Pod) { p.Spec.NodeName = "node-2" }, want: []want{forbidden("spec")}},
		{name: "deadline set", mutate: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptrTo[int64](60) }},
		{
			name:   "deadline lowered",
			old:    func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptrTo[int64](60) },
			mutate: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptrTo[int64](30) },
		},
		{
			name:   "deadline raised",
			old:    func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptrTo[int64](60) },
			mutate: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptrTo[int64](90) },
			want:   []want{invalid("spec.activeDeadlineSeconds")},
		},
		{
			name:   "deadline removed",
			old:    func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptrTo[int64](60) },
			mutate: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = nil },
			want:   []want{invalid("spec.activeDeadlineSeconds")},
		},
		{
			name: "toleration added and seconds changed",
			old: func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "a", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo[int64](300)}}
			},
			mutate: func(p *corev1.Pod) {
				p.Spec.Tolerations[0].TolerationSeconds = ptrTo[int64](10)
				p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "b", Operator: corev1.TolerationOpExists})
			},
		},
		{
			name: "toleration removed",
			old: func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "a", Operator: corev1.TolerationOpExists}}
			},
			mutate: func(p *corev1.Pod) { p.Spec.Tolerations = nil },
			want:   []want{forbidden("spec.tolerations")},
		},
		{
			name: "scheduling gate removed and node selector added while gated",
			old: func(p *corev1.Pod) {
				p.Spec.NodeName = ""
				p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/a"}, {Name: "example.com/b"}}
			},
			mutate: func(p *corev1.Pod) {
				p.Spec.SchedulingGates = p.Spec.SchedulingGates[:1]
				p.Spec.NodeSelector = map[string]string{"zone": "a"}
			},
		},
		{
			name:   "scheduling gate added",
			old:    func(p *corev1.Pod) { p.Spec.NodeName = "" },
			mutate: func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/a"}} },
			want:   []want{forbidden("spec.schedulingGates[0].name")},
		},
		{
			name: "ephemeral containers through the main resource",
			mutate: func(p *corev1.Pod) {
				p.Spec.EphemeralContainers = []corev1.EphemeralContainer{validEphemeralContainer("debug")}
			},
			want: []want{forbidden("spec")},
		},
		{name: "uid changed", mutate: func(p *corev1.Pod) { p.UID = "other" }, want: []want{invalid("metadata.uid")}},
		{name: "name changed", mutate: func(p *corev1.Pod) { p.Name = "web2" }, want: []want{invalid("metadata.name")}},
		{name: "missing resource version", mutate: func(p *corev1.Pod) { p.ResourceVersion = "" }, want: []want{invalid("metadata.resourceVersion")}},
		{
			name:   "mirror annotation added",
			mutate: func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} },
			want:   []want{forbidden("metadata.annotations[kubernetes.io/config.mirror]")},
		},
		{
			name:   "mirror annotation removed",
			old:    func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} },
			mutate: func(p *corev1.Pod) { p.Annotations = nil },
			want:   []want{forbidden("metadata.annotations[kubernetes.io/config.mirror]")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldP := existingPod()
			if tc.old != nil {
				tc.old(oldP)
			}
			newP := oldP.DeepCopy()
			tc.mutate(newP)
			expectErrors(t, ValidatePodUpdate(newP, oldP), tc.want...)
		})
	}
}

func TestValidatePodStatusUpdate(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	terminated := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}
	tests := []struct {
		name   string
		old    func(*corev1.Pod)
		mutate func(*corev1.Pod)
		want   []want
	}{
		{
			name: "running",
			mutate: func(p *corev1.Pod) {
				p.Status = corev1.PodStatus{
					Phase:             corev1.PodRunning,
					Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: "example.com/ready", Status: corev1.ConditionTrue}},
					HostIP:            "10.0.0.1",
					HostIPs:           []corev1.HostIP{{IP: "10.0.0.1"}},
					PodIP:             "10.1.0.5",
					PodIPs:            []corev1.PodIP{{IP: "10.1.0.5"}, {IP: "fd00::5"}},
					QOSClass:          corev1.PodQOSBurstable,
					ContainerStatuses: []corev1.ContainerStatus{{Name: "app", State: running}},
				}
			},
		},
		{
			name:   "invalid deletion cost",
			mutate: func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.PodDeletionCost: "1e9"} },
			want:   []want{invalid("metadata.annotations[controller.kubernetes.io/pod-deletion-cost]")},
		},
		{name: "unknown phase", mutate: func(p *corev1.Pod) { p.Status.Phase = "Sleeping" }, want: []want{notSupported("status.phase")}},
		{
			name:   "invalid custom condition",
			mutate: func(p *corev1.Pod) { p.Status.Conditions = []corev1.PodCondition{{Type: "not valid!"}} },
			want:   []want{invalid("status.conditions[0].type")},
		},
		{
			name:   "status for unknown container",
			mutate: func(p *corev1.Pod) { p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "ghost"}} },
			want:   []want{notFound("status.containerStatuses[0].name")},
		},
		{
			name: "terminated container revived under Never",
			old: func(p *corev1.Pod) {
				p.Spec.RestartPolicy = corev1.RestartPolicyNever
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: terminated}}
			},
			mutate: func(p *corev1.Pod) { p.Status.ContainerStatuses[0].State = running },
			want:   []want{forbidden("status.containerStatuses[0].state")},
		},
		{
			name: "terminated container restarted under Always",
			old: func(p *corev1.Pod) {
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: terminated}}
			},
			mutate: func(p *corev1.Pod) { p.Status.ContainerStatuses[0].State = running },
		},
		{
			name:   "qos class changed",
			old:    func(p *corev1.Pod) { p.Status.QOSClass = corev1.PodQOSBurstable },
			mutate: func(p *corev1.Pod) { p.Status.QOSClass = corev1.PodQOSGuaranteed },
			want:   []want{invalid("status.qosClass")},
		},
		{name: "invalid pod IP", mutate: func(p *corev1.Pod) { p.Status.PodIPs = []corev1.PodIP{{IP: "10.1.0.300"}} }, want: []want{invalid("status.podIPs[0].ip")}},
		{
			name:   "two IPv4 pod IPs",
			mutate: func(p *corev1.Pod) { p.Status.PodIPs = []corev1.PodIP{{IP: "10.1.0.5"}, {IP: "10.1.0.6"}} },
			want:   []want{invalid("status.podIPs")},
		},
		{
			name: "host IP disagrees with host IPs",
			mutate: func(p *corev1.Pod) {
				p.Status.HostIP = "10.0.0.1"
				p.Status.HostIPs = []corev1.HostIP{{IP: "10.0.0.2"}}
			},
			want: []want{invalid("status.hostIPs[0].ip")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldP := existingPod()
			if tc.old != nil {
				tc.old(oldP)
			}
			newP := oldP.DeepCopy()
			tc.mutate(newP)
			expectErrors(t, ValidatePodStatusUpdate(newP, oldP), tc.want...)
		})
	}
}

func TestValidatePodEphemeralContainersUpdate(t *testing.T) {
	withDebug := func(p *corev1.Pod) {
		p.Spec.EphemeralContainers = []corev1.EphemeralContainer{validEphemeralContainer("debug")}
	}
	tests := []struct {
		name   string
		old    func(*corev1.Pod)
		mutate func(*corev1.Pod)
		want   []want
	}{
		{name: "add", mutate: withDebug},
		{
			name: "add targeting a container",
			mutate: func(p *corev1.Pod) {
				withDebug(p)
				p.Spec.EphemeralContainers[0].TargetContainerName = "app"
			},
		},
		{name: "remove", old: withDebug, mutate: func(p *corev1.Pod) { p.Spec.EphemeralContainers = nil }, want: []want{forbidden("spec.ephemeralContainers")}},
		{
			name:   "change",
			old:    withDebug,
			mutate: func(p *corev1.Pod) { p.Spec.EphemeralContainers[0].Image = "busybox" },
			want:   []want{forbidden("spec.ephemeralContainers")},
		},
		{
			name: "with ports",
			mutate: func(p *corev1.Pod) {
				withDebug(p)
				p.Spec.EphemeralContainers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
			},
			want: []want{forbidden("spec.ephemeralContainers[0].ports")},
		},
		{
			name: "name clashes with container",
			mutate: func(p *corev1.Pod) {
				withDebug(p)
				p.Spec.EphemeralContainers[0].Name = "app"
			},
			want: []want{duplicate("spec.ephemeralContainers[0].name")},
		},
		{
			name: "unknown target",
			mutate: func(p *corev1.Pod) {
				withDebug(p)
				p.Spec.EphemeralContainers[0].TargetContainerName = "ghost"
			},
			want: []want{notFound("spec.ephemeralContainers[0].targetContainerName")},
		},
		{
			name: "missing image",
			mutate: func(p *corev1.Pod) {
				withDebug(p)
				p.Spec.EphemeralContainers[0].Image = ""
			},
			want: []want{required("spec.ephemeralContainers[0].image")},
		},
		{
			name: "subPath mount",
			mutate: func(p *corev1.Pod) {
				withDebug(p)
				p.Spec.EphemeralContainers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data", SubPath: "x"}}
			},
			want: []want{forbidden("spec.ephemeralContainers[0].volumeMounts[0].subPath")},
		},
		{
			name:   "static pod",
			old:    func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} },
			mutate: withDebug,
			want:   []want{forbidden("[]")},
		},
		{
			name: "other spec change",
			mutate: func(p *corev1.Pod) {
				withDebug(p)
				p.Spec.Containers[0].Ports[0].ContainerPort = 81
			},
			want: []want{forbidden("spec")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldP := existingPod()
			if tc.old != nil {
				tc.old(oldP)
			}
			newP := oldP.DeepCopy()
			tc.mutate(newP)
			expectErrors(t, ValidatePodEphemeralContainersUpdate(newP, oldP), tc.want...)
		})
	}
}

func TestValidatePodBinding(t *testing.T) {
	tests := []struct {
		name   string
		target corev1.ObjectReference
		want   []want
	}{
		{name: "node", target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}},
		{name: "empty kind", target: corev1.ObjectReference{Name: "node-1"}},
		{name: "wrong kind", target: corev1.ObjectReference{Kind: "Pod", Name: "node-1"}, want: []want{notSupported("target.kind")}},
		{name: "no name", target: corev1.ObjectReference{Kind: "Node"}, want: []want{required("target.name")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Target: tc.target}
			expectErrors(t, ValidatePodBinding(b), tc.want...)
		})
	}
}
