package apiserver

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/idplane/idplane/internal/controller/nodelifecycle"
)

// NodeLifecycleOptions time the node lifecycle controller, as kube-controller-manager's flags of
// the same names.
type NodeLifecycleOptions struct {
	// GracePeriod is how long a node's lease and heartbeat may stand still before its
	// conditions turn Unknown and it is tainted unreachable.
	GracePeriod time.Duration
	// MonitorPeriod spaces the controller's passes over the nodes.
	MonitorPeriod time.Duration
}

func defaultNodeLifecycleOptions() NodeLifecycleOptions {
	return NodeLifecycleOptions{GracePeriod: nodelifecycle.DefaultGracePeriod, MonitorPeriod: nodelifecycle.DefaultMonitorPeriod}
}

// AddFlags registers the flags.
func (o *NodeLifecycleOptions) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.GracePeriod, "node-monitor-grace-period", o.GracePeriod, "How long a node's lease (kube-node-lease) and Ready heartbeat may go unrenewed before its conditions become Unknown, it is tainted node.kubernetes.io/unreachable and its pods are marked not Ready. Keep it above the agents' lease duration (40s).")
	fs.DurationVar(&o.MonitorPeriod, "node-monitor-period", o.MonitorPeriod, "How often the node lifecycle controller looks at the nodes' leases.")
}

// Validate reports flags out of range.
func (o *NodeLifecycleOptions) Validate() []error {
	var errs []error
	if o.GracePeriod <= 0 {
		errs = append(errs, fmt.Errorf("--node-monitor-grace-period %v must be positive", o.GracePeriod))
	}
	if o.MonitorPeriod <= 0 {
		errs = append(errs, fmt.Errorf("--node-monitor-period %v must be positive", o.MonitorPeriod))
	}
	return errs
}

// nodeLifecycleController is the leader controller that marks silent nodes. Its events, on the
// nodes and their pods, go through its own broadcaster for the term.
var nodeLifecycleController = controller{"node-lifecycle-controller", func(cc controllerContext) (func(context.Context), error) {
	events := record.NewBroadcaster()
	c, err := nodelifecycle.New(cc.client, cc.informers.Nodes(), cc.informers.Leases(), cc.informers.Pods(), nodelifecycle.Config{
		GracePeriod:   cc.nodeLifecycle.GracePeriod,
		MonitorPeriod: cc.nodeLifecycle.MonitorPeriod,
		Clock:         clock.RealClock{},
		Recorder:      events.NewRecorder(clientscheme.Scheme, corev1.EventSource{Component: "node-controller"}),
	})
	return func(ctx context.Context) {
		events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cc.client.CoreV1().Events("")})
		defer events.Shutdown()
		c.Run(ctx)
	}, err
}}
