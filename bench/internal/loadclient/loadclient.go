// Package loadclient builds the clients of idplane's load tools: no client-side rate limit, a
// bounded request time, and only HTTPS servers on the loopback interface.
package loadclient

import (
	"fmt"
	"net"
	"net/url"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// RequestTimeout bounds every single request, so a stuck server cannot hold a load phase open.
const RequestTimeout = 30 * time.Second

// RESTConfig reads a kubeconfig for load generation by the named tool.
func RESTConfig(path, tool string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	if err := CheckLoopback(cfg.Host); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	// A negative QPS leaves client-go without a rate limiter; the default of 5 QPS would measure
	// the client, not the server.
	cfg.QPS, cfg.Burst = -1, -1
	cfg.Timeout = RequestTimeout
	cfg.UserAgent = tool
	return cfg, nil
}

// CheckLoopback refuses any server but an HTTPS one on 127.0.0.1 (or another loopback address):
// the load tools must never aim at a shared machine.
func CheckLoopback(host string) error {
	u, err := url.Parse(host)
	if err != nil {
		return fmt.Errorf("parsing server address %q: %w", host, err)
	}
	if u.Scheme != "https" {
		return fmt.Errorf("server %s is not HTTPS", host)
	}
	ip := net.ParseIP(u.Hostname())
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("server %s is not a loopback IP address; only local servers are loaded", host)
	}
	return nil
}
