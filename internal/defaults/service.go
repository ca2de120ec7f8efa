package defaults

//lint:file-ignore SA1019 v1 Endpoints are deprecated, not gone: the kubernetes Service's are served and kept as upstream keeps them.

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// defaultClientIPTimeout is how long ClientIP session affinity sticks unless told: three hours.
const defaultClientIPTimeout int32 = 10800

// Service defaults a service as upstream: a ClusterIP service without session affinity, TCP
// ports that target the same port on the endpoints.
func Service(s *corev1.Service) {
	spec := &s.Spec
	orDefault(&spec.SessionAffinity, corev1.ServiceAffinityNone)
	switch spec.SessionAffinity {
	case corev1.ServiceAffinityNone:
		spec.SessionAffinityConfig = nil
	case corev1.ServiceAffinityClientIP:
		if spec.SessionAffinityConfig == nil {
			spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{}
		}
		if spec.SessionAffinityConfig.ClientIP == nil {
			spec.SessionAffinityConfig.ClientIP = &corev1.ClientIPConfig{}
		}
		orDefaultPtr(&spec.SessionAffinityConfig.ClientIP.TimeoutSeconds, defaultClientIPTimeout)
	}
	orDefault(&spec.Type, corev1.ServiceTypeClusterIP)
	for i := range spec.Ports {
		p := &spec.Ports[i]
		orDefault(&p.Protocol, corev1.ProtocolTCP)
		if p.TargetPort == (intstr.IntOrString{}) {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if spec.Type == corev1.ServiceTypeNodePort || spec.Type == corev1.ServiceTypeLoadBalancer {
		orDefault(&spec.ExternalTrafficPolicy, corev1.ServiceExternalTrafficPolicyCluster)
	}
	if spec.Type != corev1.ServiceTypeExternalName {
		orDefaultPtr(&spec.InternalTrafficPolicy, corev1.ServiceInternalTrafficPolicyCluster)
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer {
		orDefaultPtr(&spec.AllocateLoadBalancerNodePorts, true)
	}
}

// ServiceList defaults each item.
func ServiceList(l *corev1.ServiceList) {
	for i := range l.Items {
		Service(&l.Items[i])
	}
}

// Endpoints defaults each port's protocol to TCP.
func Endpoints(e *corev1.Endpoints) {
	for i := range e.Subsets {
		for j := range e.Subsets[i].Ports {
			orDefault(&e.Subsets[i].Ports[j].Protocol, corev1.ProtocolTCP)
		}
	}
}

// EndpointsList defaults each item.
func EndpointsList(l *corev1.EndpointsList) {
	for i := range l.Items {
		Endpoints(&l.Items[i])
	}
}

// EndpointSlice defaults each port to an unnamed TCP port.
func EndpointSlice(s *discoveryv1.EndpointSlice) {
	for i := range s.Ports {
		orDefaultPtr(&s.Ports[i].Name, "")
		orDefaultPtr(&s.Ports[i].Protocol, corev1.ProtocolTCP)
	}
}

// EndpointSliceList defaults each item.
func EndpointSliceList(l *discoveryv1.EndpointSliceList) {
	for i := range l.Items {
		EndpointSlice(&l.Items[i])
	}
}
