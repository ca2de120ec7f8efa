package apiserver

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/idplane/idplane/internal/authz/rbac/bootstrap"
	"github.com/idplane/idplane/internal/clusterinfo"
)

// ClusterInfoOptions shape kube-public/cluster-info, which nodes joining with a bootstrap token
// and a CA hash read before they can verify the server.
type ClusterInfoOptions struct {
	// Anonymous lets clients without credentials GET cluster-info, and nothing else.
	Anonymous bool
	// Server is the URL cluster-info tells nodes to use; empty means the advertised address on
	// the secure port.
	Server string
}

// AddFlags registers the cluster-info flags.
func (o *ClusterInfoOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Anonymous, "anonymous-cluster-info", o.Anonymous, "Let clients without credentials GET kube-public/cluster-info, and only that object "+
		"(an anonymous GET path and the Role kubeadm:bootstrap-signer-clusterinfo for system:anonymous), so that agents join with a token and "+
		"--discovery-token-ca-cert-hash alone. false keeps it from anonymous clients; agents then need --bootstrap-kubeconfig.")
	fs.StringVar(&o.Server, "cluster-info-server", o.Server, "https URL kube-public/cluster-info tells joining nodes to reach the server at "+
		"(default: https://<advertised address>:<secure port>; set it to the shared address behind several replicas).")
}

// Validate reports an invalid cluster-info setting.
func (o *ClusterInfoOptions) Validate() []error {
	if o.Server == "" {
		return nil
	}
	if u, err := url.Parse(o.Server); err != nil || u.Scheme != "https" || u.Host == "" {
		return []error{fmt.Errorf("--cluster-info-server %q must be an https URL", o.Server)}
	}
	return nil
}

// clusterInfoKubeconfig is the kubeconfig the bootstrap signer publishes: the URL nodes should
// use and the cluster CA, which signs the serving certificate.
func clusterInfoKubeconfig(o *Options, serverURL string, caPEM []byte) ([]byte, error) {
	u, err := clusterInfoServer(o, serverURL)
	if err != nil {
		return nil, err
	}
	return clusterinfo.Kubeconfig(u, caPEM)
}

// clusterInfoServer is the URL published to joining nodes: --cluster-info-server, else the
// advertised address on the secure port. The admin kubeconfig's URL names 127.0.0.1 when the
// server binds every address, which a node on another machine cannot use; the advertised address
// is the one the serving certificate and the kubernetes Service's endpoints carry.
func clusterInfoServer(o *Options, serverURL string) (string, error) {
	if o.ClusterInfo.Server != "" {
		return o.ClusterInfo.Server, nil
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", fmt.Errorf("reading the server's URL %q: %w", serverURL, err)
	}
	ip, err := o.AdvertisedAddress()
	if err != nil {
		return "", err
	}
	u.Host = net.JoinHostPort(ip.String(), u.Port())
	return u.String(), nil
}

// addClusterInfoViewer reconciles, on every replica at start as the default policy, the Role
// that lets system:anonymous get cluster-info; the authenticator lets anonymous GETs of it
// through (authentication.go).
func addClusterInfoViewer(srv *genericapiserver.GenericAPIServer, client kubernetes.Interface) error {
	return srv.AddPostStartHook("rbac/cluster-info-viewer", func(ctx genericapiserver.PostStartHookContext) error {
		// kube-public is created by another start-up hook; retry until it exists.
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			if err := bootstrap.ReconcileClusterInfoViewer(ctx, client); err != nil {
				klog.ErrorS(err, "Reconciling the cluster-info viewer role; retrying")
				return false, nil
			}
			return true, nil
		})
		if err != nil {
			return fmt.Errorf("reconciling the cluster-info viewer role: %w", err)
		}
		return nil
	})
}
