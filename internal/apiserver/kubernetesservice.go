package apiserver

import (
	"fmt"
	"net"
	"slices"
	"strings"

	netutils "k8s.io/utils/net"

	"github.com/idplane/idplane/internal/pki"
)

// defaultServiceClusterIPRange is kube-apiserver's default, so the kubernetes Service has the
// ClusterIP clients of other clusters expect (10.0.0.1).
const defaultServiceClusterIPRange = "10.0.0.0/24"

// kubernetesServiceNames are the names in-cluster clients call the server by, which the serving
// certificate covers as kube-apiserver's does.
var kubernetesServiceNames = []string{
	"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
}

// firstServiceIP is the first address of a single service CIDR.
func firstServiceIP(cidr string) (net.IP, error) {
	if strings.Contains(cidr, ",") {
		return nil, fmt.Errorf("--service-cluster-ip-range %q: give one CIDR; idplane's kubernetes Service is single-stack", cidr)
	}
	_, ipNet, err := netutils.ParseCIDRSloppy(cidr)
	if err != nil {
		return nil, fmt.Errorf("--service-cluster-ip-range %q: %w", cidr, err)
	}
	ip, err := netutils.GetIndexedIP(ipNet, 1)
	if err != nil {
		return nil, fmt.Errorf("--service-cluster-ip-range %q has no first address for the kubernetes Service: %w", cidr, err)
	}
	return ip, nil
}

// addKubernetesServiceNames adds to the serving certificate's names those clients inside the
// cluster use: the kubernetes Service's DNS names and ClusterIP, and the advertised address.
func addKubernetesServiceNames(o *Options, names *pki.ServingNames) error {
	serviceIP, err := o.KubernetesServiceIP()
	if err != nil {
		return err
	}
	advertised, err := o.AdvertisedAddress()
	if err != nil {
		return err
	}
	names.DNS = append(names.DNS, kubernetesServiceNames...)
	for _, ip := range []net.IP{serviceIP, advertised} {
		if !slices.ContainsFunc(names.IPs, ip.Equal) {
			names.IPs = append(names.IPs, ip)
		}
	}
	return nil
}
