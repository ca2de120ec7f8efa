package runtimespec

import (
	"fmt"
	"net"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// KubernetesServiceEnv is the variables the kubelet gives every container for the
// default/kubernetes Service (KUBERNETES_SERVICE_HOST and _PORT, _PORT_HTTPS, and Docker's
// KUBERNETES_PORT family), in the kubelet's order, pointing at serverURL: the API server address
// the agent itself reaches. idplane has no service proxy, so the Service's ClusterIP would lead
// nowhere; rest.InClusterConfig builds https://HOST:PORT from the first two.
func KubernetesServiceEnv(serverURL string) ([]corev1.EnvVar, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil, fmt.Errorf("reading API server URL %q: %w", serverURL, err)
	}
	if u.Scheme != "https" || u.Hostname() == "" {
		return nil, fmt.Errorf("API server URL %q: containers are given https://host:port only", serverURL)
	}
	if u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("API server URL %q has a path, which in-cluster clients cannot be given", serverURL)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "443"
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return nil, fmt.Errorf("API server URL %q: port %q: %w", serverURL, port, err)
	}
	address := "tcp://" + net.JoinHostPort(host, port)
	portPrefix := "KUBERNETES_PORT_" + port + "_TCP"
	return []corev1.EnvVar{
		{Name: "KUBERNETES_SERVICE_HOST", Value: host},
		{Name: "KUBERNETES_SERVICE_PORT", Value: port},
		// The Service's one port is named https.
		{Name: "KUBERNETES_SERVICE_PORT_HTTPS", Value: port},
		{Name: "KUBERNETES_PORT", Value: address},
		{Name: portPrefix, Value: address},
		{Name: portPrefix + "_PROTO", Value: "tcp"},
		{Name: portPrefix + "_PORT", Value: port},
		{Name: portPrefix + "_ADDR", Value: host},
	}, nil
}
