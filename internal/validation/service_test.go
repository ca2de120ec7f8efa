package validation

//lint:file-ignore SA1019 v1 Endpoints are deprecated, not gone: the kubernetes Service's are served and kept as upstream keeps them.

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var kubernetesMeta = metav1.ObjectMeta{Name: "kubernetes", Namespace: "default"}

func validService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: kubernetesMeta,
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityNone,
			ClusterIP: "10.0.0.1", ClusterIPs: []string{"10.0.0.1"},
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, IPFamilyPolicy: ptrTo(corev1.IPFamilyPolicySingleStack),
			InternalTrafficPolicy: ptrTo(corev1.ServiceInternalTrafficPolicyCluster),
			Ports:                 []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(6443)}},
		},
	}
}

func TestValidateService(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*corev1.Service)
		want   []want
	}{
		{name: "the kubernetes service", mutate: func(*corev1.Service) {}},
		{name: "another service", mutate: func(s *corev1.Service) { s.Name = "web" }, want: []want{forbidden("metadata.name")}},
		{name: "kubernetes elsewhere", mutate: func(s *corev1.Service) { s.Namespace = "team-a" }, want: []want{forbidden("metadata.namespace")}},
		{name: "node port type", mutate: func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }, want: []want{notSupported("spec.type")}},
		{name: "no cluster IP", mutate: func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "", nil }, want: []want{required("spec.clusterIP")}},
		{name: "cluster IP not an IP", mutate: func(s *corev1.Service) { s.Spec.ClusterIP = "ten" }, want: []want{invalid("spec.clusterIP")}},
		{name: "clusterIPs disagree", mutate: func(s *corev1.Service) { s.Spec.ClusterIPs = []string{"10.0.0.2"} }, want: []want{invalid("spec.clusterIPs")}},
		{name: "no ports", mutate: func(s *corev1.Service) { s.Spec.Ports = nil }, want: []want{required("spec.ports")}},
		{
			name: "two ports, one unnamed, one named twice",
			mutate: func(s *corev1.Service) {
				s.Spec.Ports = append(s.Spec.Ports,
					corev1.ServicePort{Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)},
					corev1.ServicePort{Name: "https", Port: 8443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("alt")})
			},
			want: []want{required("spec.ports[1].name"), duplicate("spec.ports[2].name")},
		},
		{
			name: "bad port, protocol, target and node port",
			mutate: func(s *corev1.Service) {
				s.Spec.Ports[0] = corev1.ServicePort{Port: 70000, Protocol: "HTTP", TargetPort: intstr.FromString("no_such"), NodePort: 30000}
			},
			want: []want{invalid("spec.ports[0].port"), notSupported("spec.ports[0].protocol"), invalid("spec.ports[0].targetPort"), forbidden("spec.ports[0].nodePort")},
		},
		{
			name: "IPv6 family for an IPv4 address, dual-stack policy",
			mutate: func(s *corev1.Service) {
				s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
				s.Spec.IPFamilyPolicy = ptrTo(corev1.IPFamilyPolicyPreferDualStack)
			},
			want: []want{invalid("spec.ipFamilies"), notSupported("spec.ipFamilyPolicy")},
		},
		{
			name: "load balancer and external fields",
			mutate: func(s *corev1.Service) {
				s.Spec.ExternalIPs = []string{"203.0.113.1"}
				s.Spec.LoadBalancerIP = "203.0.113.2"
				s.Spec.ExternalName = "example.com"
			},
			want: []want{forbidden("spec.externalIPs"), forbidden("spec.loadBalancerIP"), forbidden("spec.externalName")},
		},
		{name: "no internal traffic policy", mutate: func(s *corev1.Service) { s.Spec.InternalTrafficPolicy = nil }, want: []want{required("spec.internalTrafficPolicy")}},
		{
			name: "client IP affinity for two days",
			mutate: func(s *corev1.Service) {
				s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
				s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptrTo[int32](172800)}}
			},
			want: []want{invalid("spec.sessionAffinityConfig.clientIP.timeoutSeconds")},
		},
		{
			name: "affinity settings without affinity",
			mutate: func(s *corev1.Service) {
				s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{}
			},
			want: []want{forbidden("spec.sessionAffinityConfig")},
		},
		{name: "bad selector", mutate: func(s *corev1.Service) { s.Spec.Selector = map[string]string{"a b": "c"} }, want: []want{invalid("spec.selector")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := validService()
			tc.mutate(s)
			expectErrors(t, ValidateService(s), tc.want...)
		})
	}
}

// The refusal of other Services says why, for the user who tried.
func TestOtherServiceMessage(t *testing.T) {
	s := validService()
	s.Name = "web"
	errs := ValidateService(s)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "idplane has no service proxy") || errs[0].Type != field.ErrorTypeForbidden {
		t.Fatalf("errors = %v, want one Forbidden saying idplane has no service proxy", errs)
	}
}

func TestValidateServiceUpdate(t *testing.T) {
	old := validService()
	old.ResourceVersion = "1"
	moved := validService()
	moved.ResourceVersion = "1"
	moved.Spec.ClusterIP, moved.Spec.ClusterIPs = "10.0.0.2", []string{"10.0.0.2"}
	expectErrors(t, ValidateServiceUpdate(moved, old), invalid("spec.clusterIPs[0]"))
	ported := validService()
	ported.ResourceVersion = "1"
	ported.Spec.Ports[0].TargetPort = intstr.FromInt32(7443)
	expectErrors(t, ValidateServiceUpdate(ported, old))
}

func TestValidateEndpoints(t *testing.T) {
	valid := func() *corev1.Endpoints {
		return &corev1.Endpoints{ObjectMeta: kubernetesMeta, Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: "192.0.2.1"}, {IP: "2001:db8::1"}},
			Ports:     []corev1.EndpointPort{{Name: "https", Port: 6443, Protocol: corev1.ProtocolTCP}},
		}}}
	}
	tests := []struct {
		name   string
		mutate func(*corev1.Endpoints)
		want   []want
	}{
		{name: "the kubernetes endpoints", mutate: func(*corev1.Endpoints) {}},
		{name: "no subsets", mutate: func(e *corev1.Endpoints) { e.Subsets = nil }},
		{name: "other endpoints", mutate: func(e *corev1.Endpoints) { e.Name = "web" }, want: []want{forbidden("metadata.name")}},
		{name: "bad address", mutate: func(e *corev1.Endpoints) { e.Subsets[0].Addresses[1].IP = "host" }, want: []want{invalid("subsets[0].addresses[1].ip")}},
		{name: "empty subset", mutate: func(e *corev1.Endpoints) { e.Subsets[0].Addresses = nil }, want: []want{required("subsets[0]")}},
		{
			name: "bad port",
			mutate: func(e *corev1.Endpoints) {
				e.Subsets[0].Ports[0] = corev1.EndpointPort{Name: "HTTPS", Port: 0, Protocol: "TCP"}
			},
			want: []want{invalid("subsets[0].ports[0].name"), invalid("subsets[0].ports[0].port")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := valid()
			tc.mutate(e)
			expectErrors(t, ValidateEndpoints(e), tc.want...)
		})
	}
}

func TestValidateEndpointSlice(t *testing.T) {
	port := int32(6443)
	name, tcp := "https", corev1.ProtocolTCP
	valid := func() *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta: kubernetesMeta, AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.1"}}},
			Ports:     []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &tcp}},
		}
	}
	tests := []struct {
		name   string
		mutate func(*discoveryv1.EndpointSlice)
		want   []want
	}{
		{name: "the kubernetes slice", mutate: func(*discoveryv1.EndpointSlice) {}},
		{name: "other slice", mutate: func(s *discoveryv1.EndpointSlice) { s.Namespace = "team-a" }, want: []want{forbidden("metadata.namespace")}},
		{name: "no address type", mutate: func(s *discoveryv1.EndpointSlice) { s.AddressType = "" }, want: []want{required("addressType")}},
		{name: "IPv6 in an IPv4 slice", mutate: func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses[0] = "2001:db8::1" }, want: []want{invalid("endpoints[0].addresses[0]")}},
		{name: "endpoint without address", mutate: func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = nil }, want: []want{required("endpoints[0].addresses")}},
		{name: "bad port protocol", mutate: func(s *discoveryv1.EndpointSlice) { s.Ports[0].Protocol = ptrTo[corev1.Protocol]("ICMP") }, want: []want{notSupported("ports[0].protocol")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := valid()
			tc.mutate(s)
			expectErrors(t, ValidateEndpointSlice(s), tc.want...)
		})
	}
	old := valid()
	old.ResourceVersion = "1"
	changed := valid()
	changed.ResourceVersion = "1"
	changed.AddressType = discoveryv1.AddressTypeIPv6
	changed.Endpoints[0].Addresses[0] = "2001:db8::1"
	expectErrors(t, ValidateEndpointSliceUpdate(changed, old), invalid("addressType"))
}
