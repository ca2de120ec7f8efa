package runtimespec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestKubernetesServiceEnv(t *testing.T) {
	for _, tc := range []struct {
		url     string
		want    []string
		wantErr string
	}{
		{
			url: "https://192.0.2.10:6443",
			want: []string{
				"KUBERNETES_SERVICE_HOST=192.0.2.10", "KUBERNETES_SERVICE_PORT=6443", "KUBERNETES_SERVICE_PORT_HTTPS=6443",
				"KUBERNETES_PORT=tcp://192.0.2.10:6443", "KUBERNETES_PORT_6443_TCP=tcp://192.0.2.10:6443",
				"KUBERNETES_PORT_6443_TCP_PROTO=tcp", "KUBERNETES_PORT_6443_TCP_PORT=6443", "KUBERNETES_PORT_6443_TCP_ADDR=192.0.2.10",
			},
		},
		{
			url: "https://[2001:db8::1]/",
			want: []string{
				"KUBERNETES_SERVICE_HOST=2001:db8::1", "KUBERNETES_SERVICE_PORT=443", "KUBERNETES_SERVICE_PORT_HTTPS=443",
				"KUBERNETES_PORT=tcp://[2001:db8::1]:443", "KUBERNETES_PORT_443_TCP=tcp://[2001:db8::1]:443",
				"KUBERNETES_PORT_443_TCP_PROTO=tcp", "KUBERNETES_PORT_443_TCP_PORT=443", "KUBERNETES_PORT_443_TCP_ADDR=2001:db8::1",
			},
		},
		{
			url: "https://api.example.com:8443",
			want: []string{
				"KUBERNETES_SERVICE_HOST=api.example.com", "KUBERNETES_SERVICE_PORT=8443", "KUBERNETES_SERVICE_PORT_HTTPS=8443",
				"KUBERNETES_PORT=tcp://api.example.com:8443", "KUBERNETES_PORT_8443_TCP=tcp://api.example.com:8443",
				"KUBERNETES_PORT_8443_TCP_PROTO=tcp", "KUBERNETES_PORT_8443_TCP_PORT=8443", "KUBERNETES_PORT_8443_TCP_ADDR=api.example.com",
			},
		},
		{url: "http://192.0.2.10:8080", wantErr: "https://host:port only"},
		{url: "https://lb.example.com/cluster-a", wantErr: "has a path"},
		{url: "https://192.0.2.10:99999", wantErr: "port"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			vars, err := KubernetesServiceEnv(tc.url)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range vars {
				got = append(got, v.Name+"="+v.Value)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("variables (-want +got):\n%s", diff)
			}
		})
	}
}

// The container's own variables come first and win; they and its arguments may use the
// service variables, as with the kubelet.
func TestServiceVariablesInTheSpec(t *testing.T) {
	services, err := KubernetesServiceEnv("https://192.0.2.10:6443")
	if err != nil {
		t.Fatal(err)
	}
	pod := testPod()
	pod.Spec.Containers[0].Env = []corev1.EnvVar{
		{Name: "API", Value: "https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"},
		{Name: "KUBERNETES_SERVICE_PORT", Value: "7443"},
	}
	pod.Spec.Containers[0].Args = []string{"--server=$(KUBERNETES_PORT)"}
	s := mustSpec(t, Params{Pod: pod, Container: &pod.Spec.Containers[0], ServiceEnv: services})
	want := []string{
		"PATH=" + defaultPath,
		"API=https://192.0.2.10:6443", "KUBERNETES_SERVICE_PORT=7443",
		"KUBERNETES_SERVICE_HOST=192.0.2.10", "KUBERNETES_SERVICE_PORT_HTTPS=6443",
		"KUBERNETES_PORT=tcp://192.0.2.10:6443", "KUBERNETES_PORT_6443_TCP=tcp://192.0.2.10:6443",
		"KUBERNETES_PORT_6443_TCP_PROTO=tcp", "KUBERNETES_PORT_6443_TCP_PORT=6443", "KUBERNETES_PORT_6443_TCP_ADDR=192.0.2.10",
	}
	if diff := cmp.Diff(want, s.Process.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"--server=tcp://192.0.2.10:6443"}, s.Process.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
}
