package printers

//lint:file-ignore SA1019 v1 Endpoints are deprecated, not gone: the kubernetes Service's are served and kept as upstream keeps them.

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/registry/rest"
)

// listedAtMost is how many endpoints or ports a cell names before it counts the rest, as kubectl.
const listedAtMost = 3

// services prints services as NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE, wide SELECTOR.
var services rest.TableConvertor = newTable(
	nameColumn[*corev1.Service](),
	stringColumn("Type", doc(corev1.ServiceSpec{}, "type"), func(s *corev1.Service) any { return string(s.Spec.Type) }),
	stringColumn("Cluster-IP", doc(corev1.ServiceSpec{}, "clusterIP"), func(s *corev1.Service) any {
		if len(s.Spec.ClusterIPs) > 0 {
			return s.Spec.ClusterIPs[0]
		}
		return "<none>"
	}),
	stringColumn("External-IP", doc(corev1.ServiceSpec{}, "externalIPs"), func(s *corev1.Service) any { return serviceExternalIP(s) }),
	stringColumn("Port(s)", doc(corev1.ServiceSpec{}, "ports"), func(s *corev1.Service) any { return orNone(servicePorts(s.Spec.Ports)) }),
	ageColumn[*corev1.Service](),
	stringColumn("Selector", doc(corev1.ServiceSpec{}, "selector"), func(s *corev1.Service) any { return labels.FormatLabels(s.Spec.Selector) }).wide(),
)

// serviceExternalIP is what the EXTERNAL-IP column shows for each service type.
func serviceExternalIP(s *corev1.Service) string {
	switch s.Spec.Type {
	case corev1.ServiceTypeExternalName:
		return s.Spec.ExternalName
	case corev1.ServiceTypeLoadBalancer:
		var ips []string
		for _, in := range s.Status.LoadBalancer.Ingress {
			if in.IP != "" {
				ips = append(ips, in.IP)
			} else if in.Hostname != "" {
				ips = append(ips, in.Hostname)
			}
		}
		ips = append(ips, s.Spec.ExternalIPs...)
		if len(ips) == 0 {
			return "<pending>"
		}
		return strings.Join(ips, ",")
	}
	if len(s.Spec.ExternalIPs) > 0 {
		return strings.Join(s.Spec.ExternalIPs, ",")
	}
	return "<none>"
}

// servicePorts is port/protocol, or port:nodePort/protocol, for each port.
func servicePorts(ports []corev1.ServicePort) string {
	out := make([]string, 0, len(ports))
	for _, p := range ports {
		if p.NodePort > 0 {
			out = append(out, fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol))
		} else {
			out = append(out, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
		}
	}
	return strings.Join(out, ",")
}

// endpoints prints endpoints as NAME ENDPOINTS AGE.
var endpoints rest.TableConvertor = newTable(
	nameColumn[*corev1.Endpoints](),
	stringColumn("Endpoints", doc(corev1.Endpoints{}, "subsets"), func(e *corev1.Endpoints) any { return endpointAddresses(e.Subsets) }),
	ageColumn[*corev1.Endpoints](),
)

// endpointAddresses is host:port for each ready address and port, the first few of them.
func endpointAddresses(subsets []corev1.EndpointSubset) string {
	var all []string
	for _, ss := range subsets {
		for _, p := range ss.Ports {
			for _, a := range ss.Addresses {
				all = append(all, net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
			}
		}
		if len(ss.Ports) == 0 {
			for _, a := range ss.Addresses {
				all = append(all, a.IP)
			}
		}
	}
	if len(all) == 0 {
		return "<none>"
	}
	return firstFew(all)
}

// endpointSlices prints slices as NAME ADDRESSTYPE PORTS ENDPOINTS AGE.
var endpointSlices rest.TableConvertor = newTable(
	nameColumn[*discoveryv1.EndpointSlice](),
	stringColumn("AddressType", doc(discoveryv1.EndpointSlice{}, "addressType"), func(s *discoveryv1.EndpointSlice) any { return string(s.AddressType) }),
	stringColumn("Ports", doc(discoveryv1.EndpointSlice{}, "ports"), func(s *discoveryv1.EndpointSlice) any {
		ports := make([]string, 0, len(s.Ports))
		for _, p := range s.Ports {
			if p.Port == nil {
				ports = append(ports, "<unset>")
			} else {
				ports = append(ports, strconv.Itoa(int(*p.Port)))
			}
		}
		if len(ports) == 0 {
			return "<unset>"
		}
		return firstFew(ports)
	}),
	stringColumn("Endpoints", doc(discoveryv1.EndpointSlice{}, "endpoints"), func(s *discoveryv1.EndpointSlice) any {
		var addrs []string
		for _, e := range s.Endpoints {
			addrs = append(addrs, e.Addresses...)
		}
		if len(addrs) == 0 {
			return "<unset>"
		}
		return firstFew(addrs)
	}),
	ageColumn[*discoveryv1.EndpointSlice](),
)

// firstFew joins the first listedAtMost items and counts the rest.
func firstFew(items []string) string {
	if len(items) <= listedAtMost {
		return strings.Join(items, ",")
	}
	return fmt.Sprintf("%s + %d more...", strings.Join(items[:listedAtMost], ","), len(items)-listedAtMost)
}
