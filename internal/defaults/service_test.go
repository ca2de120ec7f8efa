package defaults

//lint:file-ignore SA1019 v1 Endpoints are deprecated, not gone: the kubernetes Service's are served and kept as upstream keeps them.

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestService(t *testing.T) {
	cluster := ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
	tests := []struct {
		name     string
		in, want corev1.ServiceSpec
	}{
		{
			name: "bare service",
			in:   corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}},
			want: corev1.ServiceSpec{
				Type: corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityNone, InternalTrafficPolicy: cluster,
				Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(443)}},
			},
		},
		{
			name: "named target port and UDP kept",
			in:   corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")}}},
			want: corev1.ServiceSpec{
				Type: corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityNone, InternalTrafficPolicy: cluster,
				Ports: []corev1.ServicePort{{Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")}},
			},
		},
		{
			name: "client IP affinity gets its timeout; load balancer its policies",
			in:   corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, SessionAffinity: corev1.ServiceAffinityClientIP},
			want: corev1.ServiceSpec{
				Type: corev1.ServiceTypeLoadBalancer, SessionAffinity: corev1.ServiceAffinityClientIP,
				SessionAffinityConfig: &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](10800)}},
				ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster, InternalTrafficPolicy: cluster,
				AllocateLoadBalancerNodePorts: ptr.To(true),
			},
		},
		{
			name: "no affinity drops its configuration; external names get no traffic policy",
			in: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, SessionAffinity: corev1.ServiceAffinityNone,
				SessionAffinityConfig: &corev1.SessionAffinityConfig{}},
			want: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, SessionAffinity: corev1.ServiceAffinityNone},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, Service, &corev1.Service{Spec: tt.in}, &corev1.Service{Spec: tt.want})
		})
	}
}

func TestEndpointsAndSlices(t *testing.T) {
	check(t, Endpoints,
		&corev1.Endpoints{Subsets: []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{{Port: 6443}, {Port: 53, Protocol: corev1.ProtocolUDP}}}}},
		&corev1.Endpoints{Subsets: []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{{Port: 6443, Protocol: corev1.ProtocolTCP}, {Port: 53, Protocol: corev1.ProtocolUDP}}}}})
	check(t, EndpointSlice,
		&discoveryv1.EndpointSlice{Ports: []discoveryv1.EndpointPort{{Port: ptr.To[int32](6443)}}},
		&discoveryv1.EndpointSlice{Ports: []discoveryv1.EndpointPort{{Name: ptr.To(""), Port: ptr.To[int32](6443), Protocol: ptr.To(corev1.ProtocolTCP)}}})
}
