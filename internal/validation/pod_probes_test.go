package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateLifecycleAndProbes(t *testing.T) {
	exec := corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}
	tests := []struct {
		name string
		ctr  corev1.Container
		want []string
	}{
		{name: "none"},
		{
			name: "valid",
			ctr: corev1.Container{
				Lifecycle: &corev1.Lifecycle{
					PostStart: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTPS}},
					PreStop:   &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 30}},
				},
				LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090}}, SuccessThreshold: 1},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}, SuccessThreshold: 3},
				StartupProbe:   &corev1.Probe{ProbeHandler: exec, SuccessThreshold: 1, TerminationGracePeriodSeconds: ptrTo[int64](5)},
			},
		},
		{
			name: "hooks without or with several handlers",
			ctr: corev1.Container{Lifecycle: &corev1.Lifecycle{
				PostStart: &corev1.LifecycleHandler{},
				PreStop: &corev1.LifecycleHandler{
					Exec:      &corev1.ExecAction{},
					HTTPGet:   &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80), Scheme: corev1.URISchemeHTTP},
					TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)},
					Sleep:     &corev1.SleepAction{Seconds: 1},
				},
			}},
			want: []string{
				"ctr.lifecycle.postStart: Required value: must specify a handler type",
				"ctr.lifecycle.preStop.exec.command: Required value",
				"ctr.lifecycle.preStop.httpGet: Forbidden: may not specify more than 1 handler type",
				"ctr.lifecycle.preStop.tcpSocket: Forbidden: may not specify more than 1 handler type",
				"ctr.lifecycle.preStop.sleep: Forbidden: may not specify more than 1 handler type",
			},
		},
		{
			name: "sleep beyond the grace period",
			ctr:  corev1.Container{Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 31}}}},
			want: []string{
				"ctr.lifecycle.preStop.sleep: Invalid value: 31: must be non-negative and less than terminationGracePeriodSeconds (30)",
			},
		},
		{
			name: "negative sleep",
			ctr:  corev1.Container{Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: -1}}}},
			want: []string{
				"ctr.lifecycle.preStop.sleep: Invalid value: -1: must be non-negative and less than terminationGracePeriodSeconds (30)",
			},
		},
		{
			name: "stop signal without os",
			ctr:  corev1.Container{Lifecycle: &corev1.Lifecycle{StopSignal: ptrTo(corev1.SIGTERM)}},
			want: []string{
				"ctr.lifecycle.stopSignal: Forbidden: may not be set for containers with empty `spec.os.name`",
			},
		},
		{
			name: "http get breaking every rule",
			ctr: corev1.Container{ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Port:        intstr.FromString("Bad_Port"),
				Scheme:      "FTP",
				HTTPHeaders: []corev1.HTTPHeader{{Name: "X Bad", Value: "v"}, {Name: "Good", Value: "v"}, {Name: "", Value: "v"}},
			}}}},
			want: []string{
				"ctr.readinessProbe.httpGet.path: Required value",
				"ctr.readinessProbe.httpGet.port: Invalid value: \"Bad_Port\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
				"ctr.readinessProbe.httpGet.scheme: Unsupported value: \"FTP\": supported values: \"HTTP\", \"HTTPS\"",
				"ctr.readinessProbe.httpGet.httpHeaders: Invalid value: \"X Bad\": a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')",
				"ctr.readinessProbe.httpGet.httpHeaders: Invalid value: \"\": a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')",
			},
		},
		{
			name: "http get without scheme, numeric port out of range",
			ctr:  corev1.Container{ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(0)}}}},
			want: []string{
				"ctr.readinessProbe.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive",
				"ctr.readinessProbe.httpGet.scheme: Unsupported value: \"\": supported values: \"HTTP\", \"HTTPS\"",
			},
		},
		{
			name: "grpc and tcp ports out of range",
			ctr: corev1.Container{
				LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 70000}}, SuccessThreshold: 1},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(-1)}}},
			},
			want: []string{
				"ctr.livenessProbe.grpc.port: Invalid value: 70000: must be between 1 and 65535, inclusive",
				"ctr.readinessProbe.tcpSocket.port: Invalid value: -1: must be between 1 and 65535, inclusive",
			},
		},
		{
			name: "negative timings and thresholds",
			ctr: corev1.Container{StartupProbe: &corev1.Probe{
				ProbeHandler: exec, InitialDelaySeconds: -1, TimeoutSeconds: -2, PeriodSeconds: -3, SuccessThreshold: -4, FailureThreshold: -5,
				TerminationGracePeriodSeconds: ptrTo[int64](0),
			}},
			want: []string{
				"ctr.startupProbe.initialDelaySeconds: Invalid value: -1: must be greater than or equal to 0",
				"ctr.startupProbe.timeoutSeconds: Invalid value: -2: must be greater than or equal to 0",
				"ctr.startupProbe.periodSeconds: Invalid value: -3: must be greater than or equal to 0",
				"ctr.startupProbe.successThreshold: Invalid value: -4: must be greater than or equal to 0",
				"ctr.startupProbe.failureThreshold: Invalid value: -5: must be greater than or equal to 0",
				"ctr.startupProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0",
				"ctr.startupProbe.successThreshold: Invalid value: -4: must be 1",
			},
		},
		{
			name: "success thresholds and grace periods by kind",
			ctr: corev1.Container{
				LivenessProbe:  &corev1.Probe{ProbeHandler: exec, SuccessThreshold: 2, TerminationGracePeriodSeconds: ptrTo[int64](10)},
				ReadinessProbe: &corev1.Probe{ProbeHandler: exec, SuccessThreshold: 2, TerminationGracePeriodSeconds: ptrTo[int64](10)},
				StartupProbe:   &corev1.Probe{ProbeHandler: exec, SuccessThreshold: 0},
			},
			want: []string{
				"ctr.livenessProbe.successThreshold: Invalid value: 2: must be 1",
				"ctr.readinessProbe.terminationGracePeriodSeconds: Invalid value: 10: must not be set for readinessProbes",
				"ctr.startupProbe.successThreshold: Invalid value: 0: must be 1",
			},
		},
		{
			name: "probe without handler",
			ctr:  corev1.Container{LivenessProbe: &corev1.Probe{SuccessThreshold: 1}},
			want: []string{
				"ctr.livenessProbe: Required value: must specify a handler type",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectExactErrors(t, validateLifecycleAndProbes(&tc.ctr, testPodContext(), field.NewPath("ctr")), tc.want)
		})
	}
}
