// Package agent runs idplane's node side: it gets the node's identity (TLS bootstrap, then
// rotation), registers and heartbeats the Node, writes the volumes and runtime specs of the pods
// bound to the node, and mirrors static pods. It runs no containers: it prepares on disk what a
// container runtime would be given.
package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/idplane/idplane/internal/agent/credentials"
	"github.com/idplane/idplane/internal/agent/discovery"
	"github.com/idplane/idplane/internal/agent/nodestatus"
	"github.com/idplane/idplane/internal/agent/objects"
	"github.com/idplane/idplane/internal/agent/pods"
	"github.com/idplane/idplane/internal/agent/runtimespec"
	"github.com/idplane/idplane/internal/agent/staticpod"
)

// The pods' client's rate limit: it bounds what the agent asks of the server when many pods
// arrive at once (a node restart, a large rollout).
const (
	podsQPS   = 100
	podsBurst = 200
)

// Config is the agent's configuration.
type Config struct {
	// ServerURL overrides the API server address of the kubeconfigs when set.
	ServerURL string
	// BootstrapKubeconfig holds the bootstrap token; unused once RootDir/kubeconfig is valid.
	BootstrapKubeconfig string
	NodeName            string
	// RootDir holds the node's kubeconfig and keys (pki/) and its pods' files (pods/).
	RootDir string
	// PodManifestPath is a directory of static pod manifests, or empty.
	PodManifestPath string
	Hostname        string
	// Addresses are the node's IPs, published on the Node and in the serving certificate.
	Addresses []net.IP
	// Discovery, instead of BootstrapKubeconfig, finds the cluster with a bootstrap token and
	// the CA's hash; also unused once RootDir/kubeconfig is valid.
	Discovery *discovery.Config
}

// Run runs the agent until ctx ends or a part of it fails for good.
func Run(ctx context.Context, c Config) error {
	logger := klog.FromContext(ctx)
	creds := credentials.Config{
		RootDir: c.RootDir, NodeName: c.NodeName, BootstrapKubeconfig: c.BootstrapKubeconfig,
		ServerURL: c.ServerURL, Hostname: c.Hostname, Addresses: c.Addresses,
	}
	if c.Discovery != nil {
		if c.BootstrapKubeconfig != "" {
			return errors.New("a bootstrap kubeconfig and token discovery exclude each other: give one way to join")
		}
		d := *c.Discovery
		if err := d.Validate(); err != nil {
			return err
		}
		creds.Discover = func(ctx context.Context) (*rest.Config, error) { return discovery.Discover(ctx, d) }
	}
	id, err := credentials.Start(ctx, creds)
	if err != nil {
		return fmt.Errorf("getting the node's credentials: %w", err)
	}
	defer id.Stop()
	logger.Info("Node credentials ready", "node", c.NodeName)
	return RunNode(ctx, Node{
		RESTConfig: id.RESTConfig(), NodeName: c.NodeName, RootDir: c.RootDir, Hostname: c.Hostname,
		Addresses: c.Addresses, PodManifestPath: c.PodManifestPath,
	})
}

// Node is a node whose identity is settled: its client configuration and where its files go.
// Run builds one from the credentials it obtains; bench/nodesim builds one per simulated node,
// with a certificate it minted and a scratch root, and so runs this same code.
type Node struct {
	// RESTConfig authenticates as the node; it is copied, never changed.
	RESTConfig *rest.Config
	NodeName   string
	// RootDir holds the pods' files (pods/).
	RootDir         string
	PodManifestPath string
	Hostname        string
	Addresses       []net.IP
	// Clock drives the pods' token refreshes and retries and the status checks; nil is the real
	// clock.
	Clock clock.WithTicker
	// LeaseDuration and StatusUpdateFrequency override nodestatus's defaults when set.
	LeaseDuration         time.Duration
	StatusUpdateFrequency time.Duration
	// PerObjectWatches keeps one watch per secret and configmap, as a stock kubelet does, even
	// where the server offers the node's bulk watch (nodereadables): for benchmarks comparing
	// the two.
	PerObjectWatches bool
}

// RunNode runs the node's parts (status and lease, pods, static pods) until ctx ends or one of
// them fails for good.
func RunNode(ctx context.Context, c Node) error {
	logger := klog.FromContext(ctx)
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	// Each new pod costs about two requests (its token and its status); client-go's default limit
	// of 5 per second would hold a node receiving many pods for seconds.
	podsConfig := rest.CopyConfig(c.RESTConfig)
	podsConfig.QPS, podsConfig.Burst = podsQPS, podsBurst
	podsHTTP, err := rest.HTTPClientFor(podsConfig)
	if err != nil {
		return fmt.Errorf("building the node's client: %w", err)
	}
	client, err := kubernetes.NewForConfigAndClient(podsConfig, podsHTTP)
	if err != nil {
		return fmt.Errorf("building the node's client: %w", err)
	}
	// The bulk watch shares the pods' connection.
	readables, err := objects.NewReadablesClient(podsConfig, podsHTTP)
	if err != nil {
		return fmt.Errorf("building the node's client: %w", err)
	}
	// Heartbeats have a client, and so a rate limit, of their own: a burst of pods must not delay
	// the Lease renewal that keeps the node alive.
	heartbeats, err := kubernetes.NewForConfig(rest.CopyConfig(c.RESTConfig))
	if err != nil {
		return fmt.Errorf("building the node's heartbeat client: %w", err)
	}
	// Containers reach the API server where the agent does: idplane has no service proxy to
	// route the kubernetes Service's ClusterIP.
	serviceEnv, err := runtimespec.KubernetesServiceEnv(podsConfig.Host)
	if err != nil {
		logger.Error(err, "Containers get no KUBERNETES_SERVICE_HOST: in-cluster clients will not find the API server")
	}

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "idplane-agent", Host: c.NodeName})

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	parts := []func(context.Context) error{
		func(ctx context.Context) error {
			return nodestatus.Run(ctx, heartbeats, nodestatus.Config{
				NodeName: c.NodeName, Hostname: c.Hostname, Addresses: nodeAddresses(c), OS: runtime.GOOS,
				LeaseDuration: c.LeaseDuration, StatusUpdateFrequency: c.StatusUpdateFrequency, Clock: c.Clock,
			})
		},
		pods.New(pods.Config{
			NodeName: c.NodeName, RootDir: c.RootDir, Client: client, Recorder: recorder, Clock: c.Clock,
			ServiceEnv: serviceEnv,
			Objects:    objects.Options{NodeName: c.NodeName, Readables: readables, PerObject: c.PerObjectWatches},
		}).Run,
	}
	if c.PodManifestPath != "" {
		parts = append(parts, func(ctx context.Context) error { return runStaticPods(ctx, client, c) })
	}
	errs := make(chan error, len(parts))
	for _, run := range parts {
		go func() {
			err := run(ctx)
			if err != nil {
				cancel(err)
			}
			errs <- err
		}()
	}
	var all []error
	for range parts {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// runStaticPods mirrors the manifests once the Node exists: mirror pods name it as their owner.
func runStaticPods(ctx context.Context, client kubernetes.Interface, c Node) error {
	var node *corev1.Node
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, c.NodeName, metav1.GetOptions{})
		if err != nil {
			klog.FromContext(ctx).V(2).Info("Waiting for the Node before mirroring static pods", "err", err)
			return false, nil
		}
		node = n
		return true, nil
	})
	if err != nil {
		return nil
	}
	syncer := staticpod.NewSyncer(staticpod.Config{
		Dir: c.PodManifestPath, NodeName: c.NodeName, NodeUID: node.UID, Clock: c.Clock,
	}, client, klog.FromContext(ctx).WithName("static-pods"))
	syncer.Run(ctx, 5*time.Minute)
	return nil
}

func nodeAddresses(c Node) []corev1.NodeAddress {
	var out []corev1.NodeAddress
	for _, ip := range c.Addresses {
		out = append(out, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip.String()})
	}
	if c.Hostname != "" {
		out = append(out, corev1.NodeAddress{Type: corev1.NodeHostName, Address: c.Hostname})
	}
	return out
}

// DefaultAddresses are the host's global unicast addresses, or loopback when it has none.
func DefaultAddresses() []net.IP {
	var out []net.IP
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() {
				out = append(out, n.IP)
			}
		}
	}
	if len(out) == 0 {
		out = []net.IP{net.ParseIP("127.0.0.1")}
	}
	return out
}
