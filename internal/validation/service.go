package validation

//lint:file-ignore SA1019 v1 Endpoints are deprecated, not gone: the kubernetes Service's are served and kept as upstream keeps them.

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// KubernetesServiceName and KubernetesServiceNamespace name the one Service idplane serves: the
// API server's own, which its replicas keep, with its Endpoints and EndpointSlice.
const (
	KubernetesServiceName      = "kubernetes"
	KubernetesServiceNamespace = metav1.NamespaceDefault
)

// NoServiceProxy says why any other Service, Endpoints or EndpointSlice is refused: without a
// proxy nothing would route its address, and a workload that trusted it would be lost.
const NoServiceProxy = "idplane has no service proxy: the only Service is default/kubernetes, which the API server keeps"

// Upstream's limits on an EndpointSlice.
const (
	maxSliceEndpoints     = 1000
	maxSliceEndpointAddrs = 100
	maxSlicePorts         = 100
)

var (
	// Only ClusterIP: the other types promise node ports, load balancers or DNS names that
	// nothing in idplane provides.
	supportedServiceTypes            = []corev1.ServiceType{corev1.ServiceTypeClusterIP}
	supportedSessionAffinities       = []corev1.ServiceAffinity{corev1.ServiceAffinityClientIP, corev1.ServiceAffinityNone}
	supportedAddressTypes            = []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN}
	supportedInternalTrafficPolicies = []corev1.ServiceInternalTrafficPolicy{
		corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyLocal,
	}
	// clusterIPServiceFields are the spec fields a ClusterIP service may set. The rest belong to
	// node ports, load balancers and external names; externalIPs, which a proxy would capture
	// traffic for (CVE-2020-8554), have no meaning without one.
	clusterIPServiceFields = map[string]bool{
		"Ports": true, "Selector": true, "ClusterIP": true, "ClusterIPs": true, "Type": true,
		"SessionAffinity": true, "SessionAffinityConfig": true, "IPFamilies": true, "IPFamilyPolicy": true,
		"InternalTrafficPolicy": true, "PublishNotReadyAddresses": true, "TrafficDistribution": true,
	}
)

// maxClientIPTimeout is upstream's longest ClientIP session affinity: a day.
const maxClientIPTimeout = 86400

// kubernetesServiceOnly refuses any object but default/kubernetes.
func kubernetesServiceOnly(meta *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if meta.Namespace != KubernetesServiceNamespace {
		errs = append(errs, field.Forbidden(fldPath.Child("namespace"), NoServiceProxy))
	}
	if meta.Name != KubernetesServiceName {
		errs = append(errs, field.Forbidden(fldPath.Child("name"), NoServiceProxy))
	}
	return errs
}

// serviceSpecRules are the checks of a service spec, each about one field.
var serviceSpecRules = []func(*corev1.ServiceSpec, *field.Path) field.ErrorList{
	func(s *corev1.ServiceSpec, p *field.Path) field.ErrorList {
		return validateEnum(s.Type, supportedServiceTypes, p.Child("type"))
	},
	func(s *corev1.ServiceSpec, p *field.Path) field.ErrorList {
		return validateEnum(s.SessionAffinity, supportedSessionAffinities, p.Child("sessionAffinity"))
	},
	validateClusterIP,
	validateIPFamilies,
	validateServicePorts,
	func(s *corev1.ServiceSpec, p *field.Path) field.ErrorList {
		return forbidSetFields(*s, clusterIPServiceFields, "may not be used when `type` is 'ClusterIP'", p)
	},
	func(s *corev1.ServiceSpec, p *field.Path) field.ErrorList {
		if s.InternalTrafficPolicy == nil {
			return field.ErrorList{field.Required(p.Child("internalTrafficPolicy"), "")}
		}
		return oneOf(p.Child("internalTrafficPolicy"), *s.InternalTrafficPolicy, supportedInternalTrafficPolicies...)
	},
	validateSessionAffinityConfig,
	func(s *corev1.ServiceSpec, p *field.Path) field.ErrorList {
		return validateLabels(s.Selector, p.Child("selector"))
	},
}

// ValidateService validates a service on create.
func ValidateService(s *corev1.Service) field.ErrorList {
	meta := field.NewPath("metadata")
	errs := validateObjectMeta(&s.ObjectMeta, true, apivalidation.NameIsDNS1035Label, meta)
	errs = append(errs, kubernetesServiceOnly(&s.ObjectMeta, meta)...)
	for _, rule := range serviceSpecRules {
		errs = append(errs, rule(&s.Spec, field.NewPath("spec"))...)
	}
	return errs
}

// ValidateServiceUpdate validates an update: the cluster IP never changes.
func ValidateServiceUpdate(s, old *corev1.Service) field.ErrorList {
	errs := validateObjectMetaUpdate(&s.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	for _, rule := range serviceSpecRules {
		errs = append(errs, rule(&s.Spec, field.NewPath("spec"))...)
	}
	if s.Spec.ClusterIP != old.Spec.ClusterIP {
		errs = append(errs, field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), s.Spec.ClusterIP, "may not change once set"))
	}
	return errs
}

// validateClusterIP: idplane allocates no cluster IPs, so the address is given (the API server
// gives its own Service the first address of its range), and clusterIPs repeats it.
func validateClusterIP(s *corev1.ServiceSpec, fldPath *field.Path) field.ErrorList {
	if s.ClusterIP == "" {
		return field.ErrorList{field.Required(fldPath.Child("clusterIP"), "idplane allocates no cluster IPs")}
	}
	if errs := utilvalidation.IsValidIP(fldPath.Child("clusterIP"), s.ClusterIP); len(errs) > 0 {
		return errs
	}
	if len(s.ClusterIPs) != 1 || s.ClusterIPs[0] != s.ClusterIP {
		return field.ErrorList{field.Invalid(fldPath.Child("clusterIPs"), s.ClusterIPs, "must hold the one clusterIP")}
	}
	return nil
}

// validateIPFamilies: one family, the cluster IP's, single-stack.
func validateIPFamilies(s *corev1.ServiceSpec, fldPath *field.Path) field.ErrorList {
	family := corev1.IPv4Protocol
	if netutils.IsIPv6String(s.ClusterIP) {
		family = corev1.IPv6Protocol
	}
	var errs field.ErrorList
	if len(s.IPFamilies) != 1 || s.IPFamilies[0] != family {
		errs = append(errs, field.Invalid(fldPath.Child("ipFamilies"), s.IPFamilies, "must be the family of the one clusterIP, "+string(family)))
	}
	if s.IPFamilyPolicy == nil {
		errs = append(errs, field.Required(fldPath.Child("ipFamilyPolicy"), ""))
	} else {
		errs = append(errs, oneOf(fldPath.Child("ipFamilyPolicy"), *s.IPFamilyPolicy, corev1.IPFamilyPolicySingleStack)...)
	}
	return errs
}

// validateSessionAffinityConfig: ClientIP affinity lasts 1 s to a day; without it, no settings.
func validateSessionAffinityConfig(s *corev1.ServiceSpec, fldPath *field.Path) field.ErrorList {
	cfgPath := fldPath.Child("sessionAffinityConfig")
	if s.SessionAffinity != corev1.ServiceAffinityClientIP {
		if s.SessionAffinityConfig != nil {
			return field.ErrorList{field.Forbidden(cfgPath, "must not be set when session affinity is "+string(s.SessionAffinity))}
		}
		return nil
	}
	timeoutPath := cfgPath.Child("clientIP", "timeoutSeconds")
	if s.SessionAffinityConfig == nil || s.SessionAffinityConfig.ClientIP == nil || s.SessionAffinityConfig.ClientIP.TimeoutSeconds == nil {
		return field.ErrorList{field.Required(timeoutPath, "")}
	}
	if t := *s.SessionAffinityConfig.ClientIP.TimeoutSeconds; t <= 0 || t > maxClientIPTimeout {
		return field.ErrorList{field.Invalid(timeoutPath, t, "must be greater than 0 and less than 86400")}
	}
	return nil
}

func validateServicePorts(s *corev1.ServiceSpec, fldPath *field.Path) field.ErrorList {
	portsPath := fldPath.Child("ports")
	if len(s.Ports) == 0 {
		return field.ErrorList{field.Required(portsPath, "")}
	}
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range s.Ports {
		p, idx := &s.Ports[i], portsPath.Index(i)
		errs = append(errs, validatePortName(p.Name, len(s.Ports) > 1, names, idx.Child("name"))...)
		errs = append(errs, portNumberErrors(p.Port, idx.Child("port"))...)
		errs = append(errs, validateEnum(p.Protocol, supportedPortProtocols, idx.Child("protocol"))...)
		errs = append(errs, validateTargetPort(p.TargetPort, idx.Child("targetPort"))...)
		if p.NodePort != 0 {
			errs = append(errs, field.Forbidden(idx.Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
		}
	}
	return errs
}

// validatePortName: a port's name is a DNS label, unique among its neighbours, and required when
// it has neighbours.
func validatePortName(name string, required bool, seen sets.Set[string], fldPath *field.Path) field.ErrorList {
	if name == "" {
		if required {
			return field.ErrorList{field.Required(fldPath, "")}
		}
		return nil
	}
	if errs := validateDNS1123Label(name, fldPath); len(errs) > 0 {
		return errs
	}
	return claimUnique(seen, name, fldPath)
}

func validateTargetPort(port intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	if port.Type == intstr.String {
		return invalidEach(fldPath, port.StrVal, utilvalidation.IsValidPortName(port.StrVal))
	}
	return portNumberErrors(port.IntVal, fldPath)
}

// ValidateEndpoints validates the kubernetes Service's Endpoints.
func ValidateEndpoints(e *corev1.Endpoints) field.ErrorList {
	meta := field.NewPath("metadata")
	errs := validateObjectMeta(&e.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, meta)
	errs = append(errs, kubernetesServiceOnly(&e.ObjectMeta, meta)...)
	return append(errs, validateEndpointSubsets(e.Subsets, field.NewPath("subsets"))...)
}

// ValidateEndpointsUpdate validates an update of the Endpoints.
func ValidateEndpointsUpdate(e, old *corev1.Endpoints) field.ErrorList {
	errs := validateObjectMetaUpdate(&e.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validateEndpointSubsets(e.Subsets, field.NewPath("subsets"))...)
}

func validateEndpointSubsets(subsets []corev1.EndpointSubset, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range subsets {
		ss, idx := &subsets[i], fldPath.Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			errs = append(errs, field.Required(idx, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j, a := range ss.Addresses {
			errs = append(errs, utilvalidation.IsValidIP(idx.Child("addresses").Index(j).Child("ip"), a.IP)...)
		}
		for j, a := range ss.NotReadyAddresses {
			errs = append(errs, utilvalidation.IsValidIP(idx.Child("notReadyAddresses").Index(j).Child("ip"), a.IP)...)
		}
		names := sets.New[string]()
		for j := range ss.Ports {
			p, pIdx := &ss.Ports[j], idx.Child("ports").Index(j)
			errs = append(errs, validatePortName(p.Name, len(ss.Ports) > 1, names, pIdx.Child("name"))...)
			errs = append(errs, portNumberErrors(p.Port, pIdx.Child("port"))...)
			errs = append(errs, validateEnum(p.Protocol, supportedPortProtocols, pIdx.Child("protocol"))...)
		}
	}
	return errs
}

// ValidateEndpointSlice validates the kubernetes Service's EndpointSlice.
func ValidateEndpointSlice(s *discoveryv1.EndpointSlice) field.ErrorList {
	meta := field.NewPath("metadata")
	errs := validateObjectMeta(&s.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, meta)
	errs = append(errs, kubernetesServiceOnly(&s.ObjectMeta, meta)...)
	return append(errs, validateEndpointSliceContent(s)...)
}

// ValidateEndpointSliceUpdate validates an update; the address type never changes.
func ValidateEndpointSliceUpdate(s, old *discoveryv1.EndpointSlice) field.ErrorList {
	errs := validateObjectMetaUpdate(&s.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, validateEndpointSliceContent(s)...)
	return append(errs, apivalidation.ValidateImmutableField(s.AddressType, old.AddressType, field.NewPath("addressType"))...)
}

func validateEndpointSliceContent(s *discoveryv1.EndpointSlice) field.ErrorList {
	errs := validateEnum(s.AddressType, supportedAddressTypes, field.NewPath("addressType"))
	endpointsPath := field.NewPath("endpoints")
	if len(s.Endpoints) > maxSliceEndpoints {
		errs = append(errs, field.TooMany(endpointsPath, len(s.Endpoints), maxSliceEndpoints))
	}
	for i := range s.Endpoints {
		addrsPath := endpointsPath.Index(i).Child("addresses")
		addrs := s.Endpoints[i].Addresses
		switch {
		case len(addrs) == 0:
			errs = append(errs, field.Required(addrsPath, "must contain at least 1 address"))
		case len(addrs) > maxSliceEndpointAddrs:
			errs = append(errs, field.TooMany(addrsPath, len(addrs), maxSliceEndpointAddrs))
		}
		for j, a := range addrs {
			errs = append(errs, validateSliceAddress(s.AddressType, a, addrsPath.Index(j))...)
		}
	}
	portsPath := field.NewPath("ports")
	if len(s.Ports) > maxSlicePorts {
		errs = append(errs, field.TooMany(portsPath, len(s.Ports), maxSlicePorts))
	}
	names := sets.New[string]()
	for i, p := range s.Ports {
		idx := portsPath.Index(i)
		if p.Name != nil {
			errs = append(errs, validatePortName(*p.Name, false, names, idx.Child("name"))...)
		}
		if p.Port != nil {
			errs = append(errs, portNumberErrors(*p.Port, idx.Child("port"))...)
		}
		if p.Protocol != nil {
			errs = append(errs, validateEnum(*p.Protocol, supportedPortProtocols, idx.Child("protocol"))...)
		}
	}
	return errs
}

func validateSliceAddress(t discoveryv1.AddressType, addr string, fldPath *field.Path) field.ErrorList {
	switch t {
	case discoveryv1.AddressTypeIPv4:
		if !netutils.IsIPv4String(addr) {
			return field.ErrorList{field.Invalid(fldPath, addr, "must be a valid IPv4 address")}
		}
	case discoveryv1.AddressTypeIPv6:
		if !netutils.IsIPv6String(addr) {
			return field.ErrorList{field.Invalid(fldPath, addr, "must be a valid IPv6 address")}
		}
	case discoveryv1.AddressTypeFQDN:
		return validateDNS1123Subdomain(addr, fldPath)
	}
	return nil
}
