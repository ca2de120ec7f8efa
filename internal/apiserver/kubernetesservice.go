package apiserver

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	netutils "k8s.io/utils/net"

	"github.com/idplane/idplane/internal/controller/kubernetesservice"
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

// kubernetesServiceFirstSyncRetry spaces the first sync's attempts, made while the server's own
// start-up (the default namespace, the RBAC policy) may still be under way.
const kubernetesServiceFirstSyncRetry = 100 * time.Millisecond

// kubernetesService runs this replica's part in keeping the default/kubernetes Service: every
// replica, leader or not, renews its own Lease and writes the endpoints, as kube-apiservers do.
// The server turns ready once the Service and this replica's endpoint are written; it takes
// itself out of the endpoints before it stops serving.
func (a *assembly) kubernetesService(srv *genericapiserver.GenericAPIServer) error {
	clusterIP, err := a.o.KubernetesServiceIP()
	if err != nil {
		return err
	}
	advertised, err := a.o.AdvertisedAddress()
	if err != nil {
		return err
	}
	// Writing the deprecated v1 Endpoints is the point: no need to log the warning each time.
	quiet := rest.CopyConfig(a.cfg.LoopbackClientConfig)
	quiet.WarningHandler = rest.NoWarnings{}
	client, err := kubernetes.NewForConfig(quiet)
	if err != nil {
		return fmt.Errorf("building the kubernetes Service's client: %w", err)
	}
	c, err := kubernetesservice.New(kubernetesservice.Config{
		Client: client, Clock: a.o.kubernetesServiceClock,
		Address: advertised, Port: int32(a.in.listener.Addr().(*net.TCPAddr).Port), ClusterIP: clusterIP,
	})
	if err != nil {
		return err
	}
	loop, stopLoop := context.WithCancel(context.Background())
	done := make(chan struct{})
	// The post-start hook runs in its own goroutine and may come after the pre-shutdown hook.
	var once sync.Once
	err = srv.AddPostStartHook("kubernetes-service", func(hookCtx genericapiserver.PostStartHookContext) error {
		// A stop during the first sync ends its retries too: the replica is on its way out.
		first, cancel := context.WithCancel(hookCtx)
		defer cancel()
		defer context.AfterFunc(loop, cancel)()
		err := wait.PollUntilContextCancel(first, kubernetesServiceFirstSyncRetry, true, func(ctx context.Context) (bool, error) {
			if err := c.Sync(ctx); err != nil {
				klog.FromContext(ctx).V(2).Info("Writing the kubernetes Service; retrying", "err", err)
				return false, nil
			}
			return true, nil
		})
		if err != nil {
			return fmt.Errorf("writing the kubernetes Service: %w", err)
		}
		once.Do(func() {
			stopped := c.Start(loop)
			go func() {
				<-stopped
				close(done)
			}()
		})
		return nil
	})
	if err != nil {
		stopLoop()
		return err
	}
	return srv.AddPreShutdownHook("kubernetes-service", func() error {
		stopLoop()
		once.Do(func() { close(done) })
		<-done
		ctx, cancel := context.WithTimeout(context.Background(), a.o.RequestTimeout)
		defer cancel()
		if err := c.Stop(ctx); err != nil {
			// The Lease runs out on its own; meanwhile clients may still dial this replica.
			klog.ErrorS(err, "Taking this replica out of the kubernetes Service's endpoints")
		}
		return nil
	})
}
