// Package discovery is how an agent that holds only a bootstrap token and the hash of the cluster
// CA finds out whom to trust (kubeadm's token discovery): it reads kube-public/cluster-info
// without verifying the server, believes its kubeconfig only when it carries a signature made
// with the token's secret and names a CA whose public key is pinned, and then reads it again over
// TLS verified by that CA, so that a server without the CA's key cannot stand in for the
// cluster's. The result is the client configuration TLS bootstrap continues with.
package discovery

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/cluster-bootstrap/util/tokens"
	"k8s.io/klog/v2"

	"github.com/idplane/idplane/internal/clusterinfo"
	"github.com/idplane/idplane/internal/pubkeypin"
)

// Defaults: kubeadm's discovery timeout, and the pace of its retries.
const (
	DefaultTimeout = 5 * time.Minute
	retryInterval  = time.Second
	requestTimeout = 10 * time.Second
)

// Config is what the agent was given to join.
type Config struct {
	// Server is the API server URL cluster-info is read from, and the one the result names.
	Server string
	// Token is the bootstrap token, <id>.<secret>.
	Token string
	// CACertHashes pin the cluster CA (sha256:<hex of its SubjectPublicKeyInfo's SHA-256>);
	// any may match.
	CACertHashes []string
	// UnsafeSkipCAVerification accepts, without hashes, whatever CA a cluster-info signed with the
	// token names. Hashes given are checked all the same.
	UnsafeSkipCAVerification bool
	// Timeout bounds the wait for a signed cluster-info; 0 means DefaultTimeout.
	Timeout time.Duration
}

// Validate reports a configuration discovery cannot run with.
func (c Config) Validate() error {
	var errs []error
	if c.Server == "" {
		errs = append(errs, errors.New("the server URL is required to discover the cluster with a token"))
	}
	if _, _, err := tokens.ParseToken(c.Token); err != nil {
		errs = append(errs, fmt.Errorf("the bootstrap token: %w", err))
	}
	if len(c.CACertHashes) > 0 {
		if _, err := pubkeypin.Parse(c.CACertHashes); err != nil {
			errs = append(errs, err)
		}
	} else if !c.UnsafeSkipCAVerification {
		errs = append(errs, errors.New("token discovery needs the hash of the cluster CA (--discovery-token-ca-cert-hash sha256:..., "+
			"printed by 'idplane token create --print-join-command'); without it anyone who knows the token could pose as the cluster. "+
			"--discovery-token-unsafe-skip-ca-verification accepts that risk"))
	}
	return errors.Join(errs...)
}

// Discover returns the configuration to TLS-bootstrap with: the server, the cluster CA verified
// as the package says, and the token as bearer.
func Discover(ctx context.Context, c Config) (*rest.Config, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	id, secret, _ := tokens.ParseToken(c.Token)
	var pins *pubkeypin.Set
	if len(c.CACertHashes) > 0 {
		pins, _ = pubkeypin.Parse(c.CACertHashes)
	}
	timeout := c.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	insecure := &rest.Config{Host: c.Server, Timeout: requestTimeout, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	first, cluster, err := fetchSigned(ctx, insecure, id, secret, timeout)
	if err != nil {
		return nil, err
	}
	if pins != nil && !pins.Matches(cluster.CAs) {
		return nil, fmt.Errorf("refusing the cluster CA named by %s/%s at %s (%s): it matches none of the CA certificate hashes given; "+
			"the cluster-info is signed with the token, so whoever published it knows the token but not the pinned CA",
			clusterinfo.Namespace, clusterinfo.Name, c.Server, hashes(cluster.CAs))
	}
	if pins == nil {
		klog.FromContext(ctx).Info("Trusting the cluster CA of cluster-info without a pinned hash (--discovery-token-unsafe-skip-ca-verification)", "ca", hashes(cluster.CAs))
	}
	// Read it again through TLS verified by that CA: a server that merely relays the real
	// cluster-info but lacks a certificate of the CA is refused here.
	secure := &rest.Config{Host: c.Server, Timeout: requestTimeout, TLSClientConfig: rest.TLSClientConfig{CAData: cluster.CAPEM}}
	second, err := fetch(ctx, secure)
	if err != nil {
		return nil, fmt.Errorf("reading %s/%s again, verifying the server with the cluster CA it names: %w; "+
			"the server at %s does not hold a certificate of the cluster's CA", clusterinfo.Namespace, clusterinfo.Name, err, c.Server)
	}
	if second.Data[bootstrapapi.KubeConfigKey] != first.Data[bootstrapapi.KubeConfigKey] {
		return nil, fmt.Errorf("the kubeconfig of %s/%s read over verified TLS differs from the signed one read first", clusterinfo.Namespace, clusterinfo.Name)
	}
	return &rest.Config{Host: c.Server, BearerToken: c.Token, TLSClientConfig: rest.TLSClientConfig{CAData: cluster.CAPEM}}, nil
}

// fetchSigned reads cluster-info until it carries a signature of the token, which the server's
// signer adds soon after the token is created. A signature that does not verify, or a signed
// kubeconfig that does not parse, ends the wait: it will not get better.
func fetchSigned(ctx context.Context, cfg *rest.Config, id, secret string, timeout time.Duration) (*corev1.ConfigMap, clusterinfo.Cluster, error) {
	var (
		cm      *corev1.ConfigMap
		cluster clusterinfo.Cluster
		last    error
	)
	err := wait.PollUntilContextTimeout(ctx, retryInterval, timeout, true, func(ctx context.Context) (bool, error) {
		cm, last = fetch(ctx, cfg)
		if last != nil {
			klog.FromContext(ctx).Info("Waiting for cluster-info", "server", cfg.Host, "err", last)
			return false, nil
		}
		cluster, last = clusterinfo.Verify(cm, id, secret)
		if errors.Is(last, clusterinfo.ErrNotSigned) {
			klog.FromContext(ctx).Info("Waiting for cluster-info to be signed with the token", "server", cfg.Host, "reason", last)
			return false, nil
		}
		return true, last
	})
	switch {
	case err == nil:
		return cm, cluster, nil
	case last != nil && !errors.Is(last, clusterinfo.ErrNotSigned) && errors.Is(err, last):
		return nil, clusterinfo.Cluster{}, fmt.Errorf("refusing %s/%s from %s: %w", clusterinfo.Namespace, clusterinfo.Name, cfg.Host, last)
	case last != nil:
		return nil, clusterinfo.Cluster{}, fmt.Errorf("no cluster-info signed with token %q from %s: %w (gave up: %v)", id, cfg.Host, last, err)
	default:
		return nil, clusterinfo.Cluster{}, fmt.Errorf("reading cluster-info from %s: %w", cfg.Host, err)
	}
}

// fetch GETs cluster-info anonymously.
func fetch(ctx context.Context, cfg *rest.Config) (*corev1.ConfigMap, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building a client for %s: %w", cfg.Host, err)
	}
	return client.CoreV1().ConfigMaps(clusterinfo.Namespace).Get(ctx, clusterinfo.Name, metav1.GetOptions{})
}

func hashes(certs []*x509.Certificate) []string {
	out := make([]string, 0, len(certs))
	for _, c := range certs {
		out = append(out, pubkeypin.Hash(c))
	}
	return out
}
