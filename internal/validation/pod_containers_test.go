package validation

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func testPodContext() *podContext {
	return &podContext{
		volumes:       map[string]corev1.VolumeSource{"data": {EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		claimNames:    sets.New[string](),
		gracePeriod:   ptrTo[int64](30),
		restartPolicy: corev1.RestartPolicyAlways,
		hostUsers:     true,
	}
}

func withPorts(c corev1.Container, ports ...corev1.ContainerPort) corev1.Container {
	c.Ports = ports
	return c
}

func TestValidateContainerPorts(t *testing.T) {
	tcp := func(p corev1.ContainerPort) corev1.ContainerPort {
		p.Protocol = corev1.ProtocolTCP
		return p
	}
	tests := []struct {
		name  string
		ports []corev1.ContainerPort
		want  []string
	}{
		{name: "none"},
		{name: "valid", ports: []corev1.ContainerPort{tcp(corev1.ContainerPort{Name: "http", ContainerPort: 80, HostPort: 8080}), {ContainerPort: 53, Protocol: corev1.ProtocolUDP}}},
		{name: "name breaking several rules", ports: []corev1.ContainerPort{tcp(corev1.ContainerPort{Name: "-Http_port-too-long-", ContainerPort: 80})}, want: []string{
			"ports[0].name: Invalid value: \"-Http_port-too-long-\": must be no more than 15 characters",
			"ports[0].name: Invalid value: \"-Http_port-too-long-\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
			"ports[0].name: Invalid value: \"-Http_port-too-long-\": must not begin or end with a hyphen",
		}},
		{
			name:  "duplicate names, invalid ones not counted",
			ports: []corev1.ContainerPort{tcp(corev1.ContainerPort{Name: "a_b", ContainerPort: 1}), tcp(corev1.ContainerPort{Name: "a_b", ContainerPort: 2}), tcp(corev1.ContainerPort{Name: "web", ContainerPort: 3}), tcp(corev1.ContainerPort{Name: "web", ContainerPort: 4})},
			want: []string{
				"ports[0].name: Invalid value: \"a_b\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
				"ports[1].name: Invalid value: \"a_b\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
				"ports[3].name: Duplicate value: \"web\"",
			},
		},
		{name: "container port zero", ports: []corev1.ContainerPort{tcp(corev1.ContainerPort{})}, want: []string{
			"ports[0].containerPort: Required value",
		}},
		{name: "port numbers out of range", ports: []corev1.ContainerPort{tcp(corev1.ContainerPort{ContainerPort: 70000, HostPort: -1})}, want: []string{
			"ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
			"ports[0].hostPort: Invalid value: -1: must be between 1 and 65535, inclusive",
		}},
		{name: "missing protocol", ports: []corev1.ContainerPort{{ContainerPort: 80}}, want: []string{
			"ports[0].protocol: Required value",
		}},
		{name: "unsupported protocol", ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: "ICMP"}}, want: []string{
			"ports[0].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
		}},
		{name: "everything wrong at once, in order", ports: []corev1.ContainerPort{{Name: "A", ContainerPort: -1, HostPort: 65536, Protocol: "tcp"}}, want: []string{
			"ports[0].name: Invalid value: \"A\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
			"ports[0].name: Invalid value: \"A\": must contain at least one letter (a-z)",
			"ports[0].containerPort: Invalid value: -1: must be between 1 and 65535, inclusive",
			"ports[0].hostPort: Invalid value: 65536: must be between 1 and 65535, inclusive",
			"ports[0].protocol: Unsupported value: \"tcp\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectExactErrors(t, validateContainerPorts(tc.ports, field.NewPath("ports")), tc.want)
		})
	}
}

func TestValidatePullPolicy(t *testing.T) {
	tests := []struct {
		policy corev1.PullPolicy
		want   []string
	}{
		{policy: corev1.PullAlways},
		{policy: corev1.PullIfNotPresent},
		{policy: corev1.PullNever},
		{policy: "", want: []string{
			"imagePullPolicy: Required value",
		}},
		{policy: "always", want: []string{
			"imagePullPolicy: Unsupported value: \"always\": supported values: \"Always\", \"IfNotPresent\", \"Never\"",
		}},
	}
	for _, tc := range tests {
		t.Run(string(tc.policy), func(t *testing.T) {
			expectExactErrors(t, validatePullPolicy(tc.policy, field.NewPath("imagePullPolicy")), tc.want)
		})
	}
}

func TestValidateContainers(t *testing.T) {
	tests := []struct {
		name       string
		containers []corev1.Container
		want       []string
	}{
		{name: "no containers", want: []string{
			"containers: Required value",
		}},
		{name: "valid", containers: []corev1.Container{validContainer("a"), validContainer("b")}},
		{name: "duplicate names", containers: []corev1.Container{validContainer("a"), validContainer("a"), validContainer("a")}, want: []string{
			"containers[1].name: Duplicate value: \"a\"",
			"containers[2].name: Duplicate value: \"a\"",
		}},
		{name: "two without name", containers: []corev1.Container{validContainer(""), validContainer("")}, want: []string{
			"containers[0].name: Required value",
			"containers[1].name: Required value",
			"containers[1].name: Duplicate value: \"\"",
		}},
		{name: "invalid name", containers: []corev1.Container{validContainer("A")}, want: []string{
			"containers[0].name: Invalid value: \"A\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
		}},
		{
			name: "common fields",
			containers: []corev1.Container{func() corev1.Container {
				c := validContainer("a")
				c.Image = ""
				c.TerminationMessagePolicy = ""
				c.ImagePullPolicy = "Sometimes"
				c.Env = []corev1.EnvVar{{Name: ""}}
				c.EnvFrom = []corev1.EnvFromSource{{}}
				c.VolumeMounts = []corev1.VolumeMount{{Name: "nope", MountPath: "/x"}}
				c.VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/x"}}
				c.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}}
				c.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: "gpu", RestartPolicy: corev1.NotRequired}}
				c.SecurityContext = &corev1.SecurityContext{RunAsUser: ptrTo[int64](-1)}
				c.Ports = []corev1.ContainerPort{{ContainerPort: 80}}
				return c
			}()},
			want: []string{
				"containers[0].image: Required value",
				"containers[0].terminationMessagePolicy: Required value",
				"containers[0].ports[0].protocol: Required value",
				"containers[0].env[0].name: Required value",
				"containers[0].envFrom: Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`",
				"containers[0].volumeMounts[0].name: Not found: \"nope\"",
				"containers[0].volumeDevices[0].name: Invalid value: \"data\": can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode",
				"containers[0].imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"",
				"containers[0].resources.limits[cpu]: Invalid value: \"-1\": must be greater than or equal to 0",
				"containers[0].resizePolicy[0].resourceName: Unsupported value: \"gpu\": supported values: \"cpu\", \"memory\"",
				"containers[0].securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive",
			},
		},
		{
			name: "unsupported termination message policy",
			containers: []corev1.Container{func() corev1.Container {
				c := validContainer("a")
				c.TerminationMessagePolicy = "Never"
				return c
			}()},
			want: []string{
				"containers[0].terminationMessagePolicy: Unsupported value: \"Never\": supported values: \"File\", \"FallbackToLogsOnError\"",
			},
		},
		{
			name: "restart policy, probes and hooks",
			containers: []corev1.Container{func() corev1.Container {
				c := validContainer("a")
				c.RestartPolicy = ptrTo(corev1.ContainerRestartPolicyAlways)
				c.Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{}}
				c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
				c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{}}, SuccessThreshold: 1}
				c.StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}, SuccessThreshold: 2}
				return c
			}()},
			want: []string{
				"containers[0].lifecycle.postStart: Required value: must specify a handler type",
				"containers[0].livenessProbe.successThreshold: Invalid value: 0: must be 1",
				"containers[0].readinessProbe.exec.command: Required value",
				"containers[0].startupProbe.successThreshold: Invalid value: 2: must be 1",
				"containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
			},
		},
		{
			name: "host ports clash across containers",
			containers: []corev1.Container{
				withPorts(validContainer("a"), corev1.ContainerPort{ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP}, corev1.ContainerPort{ContainerPort: 81, HostPort: 8080, Protocol: corev1.ProtocolUDP}),
				withPorts(validContainer("b"), corev1.ContainerPort{ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP}, corev1.ContainerPort{ContainerPort: 82, HostPort: 8080, HostIP: "10.0.0.1", Protocol: corev1.ProtocolTCP}),
				withPorts(validContainer("c"), corev1.ContainerPort{ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP}),
			},
			want: []string{
				"containers[1].ports[0].hostPort: Duplicate value: \"TCP//8080\"",
				"containers[2].ports[0].hostPort: Duplicate value: \"TCP//8080\"",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectExactErrors(t, validateContainers(tc.containers, testPodContext(), field.NewPath("containers")), tc.want)
		})
	}
}

func TestValidateInitContainers(t *testing.T) {
	sidecar := func(name string) corev1.Container {
		c := validContainer(name)
		c.RestartPolicy = ptrTo(corev1.ContainerRestartPolicyAlways)
		return c
	}
	withProbes := func(c corev1.Container) corev1.Container {
		c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{}}
		c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, SuccessThreshold: 1}
		c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, SuccessThreshold: 1}
		c.StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, SuccessThreshold: 1}
		return c
	}
	tests := []struct {
		name           string
		initContainers []corev1.Container
		want           []string
	}{
		{name: "none"},
		{name: "valid", initContainers: []corev1.Container{validContainer("init"), sidecar("proxy")}},
		{name: "names clash with containers and each other", initContainers: []corev1.Container{validContainer("app"), validContainer("init"), validContainer("init")}, want: []string{
			"initContainers[0].name: Duplicate value: \"app\"",
			"initContainers[2].name: Duplicate value: \"init\"",
		}},
		{name: "two without name", initContainers: []corev1.Container{validContainer(""), validContainer("")}, want: []string{
			"initContainers[0].name: Required value",
			"initContainers[1].name: Required value",
		}},
		{
			name: "restart policy other than Always",
			initContainers: []corev1.Container{func() corev1.Container {
				c := validContainer("init")
				c.RestartPolicy = ptrTo(corev1.ContainerRestartPolicyOnFailure)
				return c
			}()},
			want: []string{
				"initContainers[0].restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\"",
			},
		},
		{name: "hooks and probes on a plain init container", initContainers: []corev1.Container{withProbes(validContainer("init"))}, want: []string{
			"initContainers[0].lifecycle: Forbidden: may not be set for init containers without restartPolicy=Always",
			"initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
			"initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
			"initContainers[0].startupProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
		}},
		{name: "hooks and probes on a sidecar", initContainers: []corev1.Container{withProbes(sidecar("proxy"))}, want: []string{
			"initContainers[0].lifecycle.preStop: Required value: must specify a handler type",
		}},
		{
			name: "host ports clash only within one init container",
			initContainers: []corev1.Container{
				withPorts(validContainer("a"), corev1.ContainerPort{ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP}),
				withPorts(validContainer("b"), corev1.ContainerPort{ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP}, corev1.ContainerPort{ContainerPort: 81, HostPort: 8080, Protocol: corev1.ProtocolTCP}),
			},
			want: []string{
				"initContainers[1].ports[1].hostPort: Duplicate value: \"TCP//8080\"",
			},
		},
		{
			name: "everything wrong at once, in order",
			initContainers: []corev1.Container{func() corev1.Container {
				c := withProbes(withPorts(validContainer("app"), corev1.ContainerPort{ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP}, corev1.ContainerPort{ContainerPort: 81, HostPort: 8080, Protocol: corev1.ProtocolTCP}))
				c.Image = ""
				c.RestartPolicy = ptrTo(corev1.ContainerRestartPolicy("Never"))
				return c
			}()},
			want: []string{
				"initContainers[0].image: Required value",
				"initContainers[0].restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
				"initContainers[0].name: Duplicate value: \"app\"",
				"initContainers[0].ports[1].hostPort: Duplicate value: \"TCP//8080\"",
				"initContainers[0].lifecycle: Forbidden: may not be set for init containers without restartPolicy=Always",
				"initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
				"initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
				"initContainers[0].startupProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			containers := []corev1.Container{validContainer("app")}
			expectExactErrors(t, validateInitContainers(tc.initContainers, containers, testPodContext(), field.NewPath("initContainers")), tc.want)
		})
	}
}

func TestValidateEphemeralContainers(t *testing.T) {
	debug := func(name, target string) corev1.EphemeralContainer {
		ec := validEphemeralContainer(name)
		ec.TargetContainerName = target
		return ec
	}
	tests := []struct {
		name      string
		ephemeral []corev1.EphemeralContainer
		want      []string
	}{
		{name: "none"},
		{name: "valid", ephemeral: []corev1.EphemeralContainer{debug("debug", "app"), debug("debug2", "init"), debug("debug3", "")}},
		{
			name:      "names clash with every kind of container",
			ephemeral: []corev1.EphemeralContainer{debug("app", ""), debug("init", ""), debug("debug", ""), debug("debug", "")},
			want: []string{
				"ephemeralContainers[0].name: Duplicate value: \"app\"",
				"ephemeralContainers[1].name: Duplicate value: \"init\"",
				"ephemeralContainers[3].name: Duplicate value: \"debug\"",
			},
		},
		{name: "unknown or ephemeral target", ephemeral: []corev1.EphemeralContainer{debug("debug", "debug"), debug("debug2", "nope")}, want: []string{
			"ephemeralContainers[0].targetContainerName: Not found: \"debug\"",
			"ephemeralContainers[1].targetContainerName: Not found: \"nope\"",
		}},
		{name: "image with whitespace", ephemeral: []corev1.EphemeralContainer{func() corev1.EphemeralContainer {
			ec := debug("debug", "")
			ec.Image = "busybox "
			return ec
		}()}, want: []string{
			"ephemeralContainers[0].image: Invalid value: \"busybox \": must not have leading or trailing whitespace",
		}},
		{
			name: "fields a debug container may not set",
			ephemeral: []corev1.EphemeralContainer{func() corev1.EphemeralContainer {
				ec := debug("debug", "")
				ec.Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
				ec.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
				ec.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
				ec.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, SuccessThreshold: 1}
				ec.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, SuccessThreshold: 1}
				ec.StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, SuccessThreshold: 1}
				ec.RestartPolicy = ptrTo(corev1.ContainerRestartPolicyAlways)
				ec.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}}
				return ec
			}()},
			want: []string{
				"ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container",
				"ephemeralContainers[0].resources: Forbidden: cannot be set for an Ephemeral Container",
				"ephemeralContainers[0].resizePolicy: Forbidden: cannot be set for an Ephemeral Container",
				"ephemeralContainers[0].restartPolicy: Forbidden: cannot be set for an Ephemeral Container",
				"ephemeralContainers[0].livenessProbe: Forbidden: cannot be set for an Ephemeral Container",
				"ephemeralContainers[0].readinessProbe: Forbidden: cannot be set for an Ephemeral Container",
				"ephemeralContainers[0].startupProbe: Forbidden: cannot be set for an Ephemeral Container",
				"ephemeralContainers[0].lifecycle: Forbidden: cannot be set for an Ephemeral Container",
			},
		},
		{
			name: "sub paths",
			ephemeral: []corev1.EphemeralContainer{func() corev1.EphemeralContainer {
				ec := debug("debug", "")
				ec.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/a", SubPath: "x"}, {Name: "data", MountPath: "/b", SubPathExpr: "$(POD)"}}
				return ec
			}()},
			want: []string{
				"ephemeralContainers[0].volumeMounts[0].subPath: Forbidden: cannot be set for an Ephemeral Container",
				"ephemeralContainers[0].volumeMounts[1].subPathExpr: Forbidden: cannot be set for an Ephemeral Container",
			},
		},
		{
			name: "everything wrong at once, in order",
			ephemeral: []corev1.EphemeralContainer{func() corev1.EphemeralContainer {
				ec := debug("app", "nope")
				ec.Image = " busybox"
				ec.ImagePullPolicy = ""
				ec.Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
				ec.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/a", SubPath: "x", SubPathExpr: "y"}}
				return ec
			}()},
			want: []string{
				"ephemeralContainers[0].volumeMounts[0].subPathExpr: Invalid value: \"y\": subPathExpr and subPath are mutually exclusive",
				"ephemeralContainers[0].imagePullPolicy: Required value",
				"ephemeralContainers[0].image: Invalid value: \" busybox\": must not have leading or trailing whitespace",
				"ephemeralContainers[0].name: Duplicate value: \"app\"",
				"ephemeralContainers[0].targetContainerName: Not found: \"nope\"",
				"ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container",
				"ephemeralContainers[0].volumeMounts[0].subPath: Forbidden: cannot be set for an Ephemeral Container",
				"ephemeralContainers[0].volumeMounts[0].subPathExpr: Forbidden: cannot be set for an Ephemeral Container",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			containers := []corev1.Container{validContainer("app")}
			initContainers := []corev1.Container{validContainer("init")}
			expectExactErrors(t, validateEphemeralContainers(tc.ephemeral, containers, initContainers, testPodContext(), field.NewPath("ephemeralContainers")), tc.want)
		})
	}
}

// A misspelt entry would quietly forbid the field it meant to allow.
func TestDebugContainerFieldsExist(t *testing.T) {
	typ := reflect.TypeOf(corev1.EphemeralContainerCommon{})
	for name := range debugContainerFields {
		if _, ok := typ.FieldByName(name); !ok {
			t.Errorf("debugContainerFields allows %q, which EphemeralContainerCommon does not have", name)
		}
	}
}
