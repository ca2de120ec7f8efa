package apiserver

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/idplane/idplane/internal/authz/node"
	"github.com/idplane/idplane/internal/authz/rbac"
	"github.com/idplane/idplane/internal/authz/rbac/bootstrap"
	"github.com/idplane/idplane/internal/certificates"
	"github.com/idplane/idplane/internal/certificates/podcert"
	"github.com/idplane/idplane/internal/controller/bootstrapsigner"
	"github.com/idplane/idplane/internal/controller/clusterroleaggregation"
	"github.com/idplane/idplane/internal/controller/csrapproving"
	"github.com/idplane/idplane/internal/controller/csrcleaner"
	"github.com/idplane/idplane/internal/controller/csrsigning"
	namespacecontroller "github.com/idplane/idplane/internal/controller/namespace"
	"github.com/idplane/idplane/internal/controller/pcrcleaner"
	"github.com/idplane/idplane/internal/controller/rootcacertpublisher"
	"github.com/idplane/idplane/internal/controller/serviceaccount"
	"github.com/idplane/idplane/internal/controller/serviceaccounttokens"
	"github.com/idplane/idplane/internal/controller/tokencleaner"
	"github.com/idplane/idplane/internal/controller/trustbundlepublisher"
	"github.com/idplane/idplane/internal/leaderelection"
	"github.com/idplane/idplane/internal/snapshot"
)

// systemNamespaces exist from the first start; NamespaceLifecycle keeps the first three from
// being deleted.
var systemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// controllerContext is what the leader's controllers are built from. informers is new for each
// term (see termInformers): a lost term leaves no event handlers or shut-down queues behind on
// the server's own informers, and the next term starts clean.
type controllerContext struct {
	client     kubernetes.Interface
	dyn        dynamic.Interface
	authorizer authorizer.Authorizer
	// caPEM is the cluster CA, which signs the serving certificate.
	caPEM  []byte
	issuer serviceaccounttokens.Issuer
	// signers are the built-in kubernetes.io signers; their CAs are read again when their files
	// change, on every replica (hook signing-ca-reload).
	signers         map[string]csrsigning.Signer
	signingDuration time.Duration
	// approveKubeletServing lets the approver approve nodes' own kubelet serving CSRs.
	approveKubeletServing bool
	// apiServerNames are the names the serving certificate covers, which no node's may.
	apiServerNames certificates.ServerNames
	nodeLifecycle  NodeLifecycleOptions
	// shared are the server's informers, which the terms' informers draw on.
	shared    *sharedInformers
	informers *termInformers
	// clusterInfo is the kubeconfig the bootstrap signer publishes in kube-public/cluster-info.
	clusterInfo []byte
	// podCerts are the built-in pod certificate signers' CAs, podCertOptions their settings.
	podCerts       podCertCAs
	podCertOptions PodCertificateOptions
	// snapshots takes the scheduled snapshots; nil without --snapshot-schedule.
	snapshots *snapshot.Scheduler
}

// controller builds one controller and returns how to run it until ctx ends.
type controller struct {
	name  string
	build func(controllerContext) (run func(ctx context.Context), err error)
}

// leaderControllers act for the whole cluster (they sign, approve, delete and create objects), so
// with leader election they run on one replica at a time. What every replica needs to serve,
// the informers behind admission and authorization and the node graph, is not here.
var leaderControllers = []controller{
	{"namespace-controller", func(cc controllerContext) (func(context.Context), error) {
		c, err := namespacecontroller.New(cc.client, cc.dyn, cc.informers.Namespaces())
		return func(ctx context.Context) { c.Run(ctx, 2) }, err
	}},
	{"serviceaccount-controller", func(cc controllerContext) (func(context.Context), error) {
		c, err := serviceaccount.New(cc.client, cc.informers.Namespaces(), cc.informers.ServiceAccounts())
		return func(ctx context.Context) { c.Run(ctx, 1) }, err
	}},
	{"root-ca-cert-publisher", func(cc controllerContext) (func(context.Context), error) {
		core := cc.informers
		c, err := rootcacertpublisher.New(cc.client, core.Namespaces(), core.ConfigMaps(), cc.caPEM)
		return func(ctx context.Context) { c.Run(ctx, 1) }, err
	}},
	{"serviceaccount-tokens-controller", func(cc controllerContext) (func(context.Context), error) {
		core := cc.informers
		c, err := serviceaccounttokens.New(cc.client, cc.issuer, cc.caPEM, core.ServiceAccountTokenSecrets(), core.ServiceAccounts())
		return func(ctx context.Context) { c.Run(ctx, 1) }, err
	}},
	{"clusterrole-aggregation-controller", func(cc controllerContext) (func(context.Context), error) {
		c, err := clusterroleaggregation.New(cc.client, cc.informers.ClusterRoles())
		return func(ctx context.Context) { c.Run(ctx, 1) }, err
	}},
	{"csr-signing-controller", func(cc controllerContext) (func(context.Context), error) {
		c, err := csrsigning.New(cc.client, cc.informers.CertificateSigningRequests(), csrsigning.Config{
			Signers: cc.signers, MaxDuration: cc.signingDuration, Clock: clock.RealClock{},
		})
		return func(ctx context.Context) { c.Run(ctx, 2) }, err
	}},
	{"csr-approving-controller", func(cc controllerContext) (func(context.Context), error) {
		// The approver asks the server's own authorizer whether the requester may self-request.
		events := record.NewBroadcaster()
		cfg := csrapproving.Config{
			ApproveKubeletServing: cc.approveKubeletServing,
			Secrets:               cc.informers.BootstrapTokenSecrets(),
			Recorder:              events.NewRecorder(clientscheme.Scheme, corev1.EventSource{Component: "csrapproving"}),
		}
		if cc.approveKubeletServing {
			cfg.Nodes, cfg.APIServer = cc.informers.Nodes(), cc.apiServerNames
		}
		c, err := csrapproving.New(cc.client, cc.authorizer, cc.informers.CertificateSigningRequests(), cfg)
		return func(ctx context.Context) {
			events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cc.client.CoreV1().Events("")})
			defer events.Shutdown()
			c.Run(ctx, 1)
		}, err
	}},
	{"bootstrap-token-cleaner", func(cc controllerContext) (func(context.Context), error) {
		c, err := tokencleaner.New(cc.client, cc.informers.BootstrapTokenSecrets(), cc.informers.CertificateSigningRequests(), clock.RealClock{})
		return func(ctx context.Context) { c.Run(ctx, 1) }, err
	}},
	{"bootstrap-signer", func(cc controllerContext) (func(context.Context), error) {
		core := cc.informers
		c, err := bootstrapsigner.New(cc.client, core.ConfigMaps(), core.BootstrapTokenSecrets(), bootstrapsigner.Config{Kubeconfig: cc.clusterInfo, Clock: clock.RealClock{}})
		if err != nil {
			return nil, err
		}
		return c.Run, nil
	}},
	{"csr-cleaner", func(cc controllerContext) (func(context.Context), error) {
		c := csrcleaner.New(cc.client, cc.informers.CertificateSigningRequests(), clock.RealClock{})
		return c.Run, nil
	}},
	{"pod-certificate-request-cleaner", func(cc controllerContext) (func(context.Context), error) {
		return pcrcleaner.New(cc.client, cc.informers.PodCertificateRequests(), clock.RealClock{}).Run, nil
	}},
	{"trust-bundle-publisher", func(cc controllerContext) (func(context.Context), error) {
		cas := map[string]trustbundlepublisher.CA{}
		for name, s := range cc.signers {
			cas[name] = s.CA
		}
		// The SVIDs' trust anchor; the client-pod CA is for the API server alone to trust.
		if ca, ok := cc.podCerts[podcert.SPIFFESignerName]; ok {
			cas[podcert.SPIFFESignerName] = ca
		}
		return trustbundlepublisher.New(cc.client, cas).Run, nil
	}},
	{"podcertificate-signing-controller", podCertificateSigningController},
	// One replica snapshots the shared store: the others' archives would be the same.
	{"etcd-snapshotter", func(cc controllerContext) (func(context.Context), error) {
		if cc.snapshots == nil {
			return func(context.Context) {}, nil
		}
		return cc.snapshots.Run, nil
	}},
	nodeLifecycleController,
}

// buildControllers builds every leader controller on a new term's informers.
func buildControllers(cc controllerContext) (*termInformers, []func(context.Context), error) {
	cc.informers = newTermInformers(cc.client, cc.shared.factory)
	runs := make([]func(context.Context), 0, len(leaderControllers))
	for _, c := range leaderControllers {
		run, err := c.build(cc)
		if err != nil {
			return nil, nil, fmt.Errorf("building the %s: %w", c.name, err)
		}
		runs = append(runs, run)
	}
	return cc.informers, runs, nil
}

// runControllers runs the leader controllers until ctx ends and returns once all have stopped,
// so that a replica's next term, or its lease release, never overlaps them.
func runControllers(ctx context.Context, cc controllerContext) {
	serverStop, ok := cc.shared.running(ctx)
	if !ok {
		return
	}
	term, runs, err := buildControllers(cc)
	if err != nil {
		// build checked the same construction at start-up.
		klog.ErrorS(err, "Starting the controllers")
		return
	}
	term.start(ctx.Done(), serverStop)
	var wg sync.WaitGroup
	for _, run := range runs {
		wg.Go(func() { run(ctx) })
	}
	wg.Wait()
	term.end()
}

// controllers puts the built-in controllers together: the start-up tasks every replica runs and
// the leader controllers, under leader election when it is on.
func (a *assembly) controllers(srv *genericapiserver.GenericAPIServer, authz authorizers, tokens tokenParts) error {
	signers, err := loadClusterSigners(a.o, time.Now())
	if err != nil {
		return err
	}
	apiServerNames, err := servingCertNames(a.in.servingCert)
	if err != nil {
		return err
	}
	cc := controllerContext{
		client: a.loopback.client, dyn: a.loopback.dyn, authorizer: a.cfg.Authorization.Authorizer,
		caPEM: a.in.caPEM, issuer: tokens.config.Issuer,
		signers: signers, signingDuration: a.o.ClusterSigningDuration,
		approveKubeletServing: a.o.ApproveKubeletServing, apiServerNames: apiServerNames,
		nodeLifecycle: a.o.NodeLifecycle,
		podCerts:      a.podCerts, podCertOptions: a.o.PodCertificates,
		shared: newSharedInformers(a.loopback.informers),
	}
	if err := a.podCerts.addReloadHook(srv); err != nil {
		return err
	}
	if cc.clusterInfo, err = clusterInfoKubeconfig(a.o, a.in.url, a.in.caPEM); err != nil {
		return err
	}
	if a.o.ClusterInfo.Anonymous {
		if err := addClusterInfoViewer(srv, cc.client); err != nil {
			return err
		}
	}
	if cc.snapshots, err = a.snapshotScheduler(); err != nil {
		return err
	}
	var elector *leaderelection.Elector
	if le := a.o.LeaderElection; le.LeaderElect {
		elector, err = leaderelection.New(leaderelection.Config{
			Leases: cc.client.CoordinationV1(), Namespace: le.ResourceNamespace, Name: le.ResourceName, Identity: a.in.identity,
			LeaseDuration: le.LeaseDuration.Duration, RenewDeadline: le.RenewDeadline.Duration, RetryPeriod: le.RetryPeriod.Duration,
			Lead: func(ctx context.Context) { runControllers(ctx, cc) },
		})
		if err != nil {
			return err
		}
	}
	return addControllers(srv, cc, authz.rbac, authz.nodeGraph, elector)
}

// addControllers registers the start-up tasks every replica runs as post-start hooks (the server
// reports ready once they have returned) and starts the leader controllers: at once without
// leader election, else whenever this replica holds the lease. Readiness never waits for the
// lease: a replica that does not lead serves as well as one that does.
// nodeGraph is nil when mode Node is off; elector is nil without leader election.
func addControllers(srv *genericapiserver.GenericAPIServer, cc controllerContext, rbacIndex *rbac.Authorizer, nodeGraph *node.Populator, elector *leaderelection.Elector) error {
	// Fail at start-up, not in a term, if a controller cannot be built; on informers never
	// started, so that the check registers nothing with the server's own.
	check := cc
	check.shared = newSharedInformers(newInformerFactory(cc.client))
	if _, _, err := buildControllers(check); err != nil {
		return err
	}
	namespacesReady := make(chan struct{})
	type hook struct {
		name string
		run  func(context.Context) error
	}
	hooks := []hook{
		{"start-informers", func(ctx context.Context) error {
			cc.shared.run(ctx.Done())
			return nil
		}},
		{"system-namespaces", func(ctx context.Context) error {
			if err := ensureNamespaces(ctx, cc.client); err != nil {
				return err
			}
			close(namespacesReady)
			return nil
		}},
		// Reconciling is idempotent, so every replica does it at start, as kube-apiservers do.
		{"rbac/bootstrap-roles", func(ctx context.Context) error { return bootstrapRBAC(ctx, cc.client, rbacIndex, policyArrivalWait) }},
		{"signing-ca-reload", func(ctx context.Context) error {
			for _, s := range cc.signers {
				go s.CA.Run(ctx)
			}
			return nil
		}},
	}
	if nodeGraph != nil {
		hooks = append(hooks, hook{"node-authorizer-graph", func(ctx context.Context) error {
			return wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) {
				return nodeGraph.HasSynced(), nil
			})
		}})
	}
	if elector == nil {
		hooks = append(hooks, hook{"start-controllers", func(ctx context.Context) error {
			go runControllers(ctx, cc)
			return nil
		}})
	} else if err := addLeaderElection(srv, elector, namespacesReady); err != nil {
		return err
	}
	for _, h := range hooks {
		err := srv.AddPostStartHook(h.name, func(ctx genericapiserver.PostStartHookContext) error { return h.run(ctx) })
		if err != nil {
			return err
		}
	}
	return nil
}

// addLeaderElection campaigns from start-up, once the lease's namespace exists, and stops as the
// server begins to shut down: a pre-shutdown hook ends the term and releases the lease while the
// server still accepts the loopback client's requests, so another replica takes over at once
// instead of after the lease duration.
func addLeaderElection(srv *genericapiserver.GenericAPIServer, elector *leaderelection.Elector, namespacesReady <-chan struct{}) error {
	campaign, stopCampaign := context.WithCancel(context.Background())
	done := make(chan struct{})
	// The post-start hook runs in its own goroutine and may come after the pre-shutdown hook.
	var once sync.Once
	err := srv.AddPostStartHook("leader-election", func(genericapiserver.PostStartHookContext) error {
		once.Do(func() {
			go func() {
				defer close(done)
				select {
				case <-namespacesReady:
					elector.Run(campaign)
				case <-campaign.Done():
				}
			}()
		})
		return nil
	})
	if err != nil {
		stopCampaign()
		return err
	}
	return srv.AddPreShutdownHook("leader-election", func() error {
		stopCampaign()
		once.Do(func() { close(done) })
		<-done
		return nil
	})
}

func ensureNamespaces(ctx context.Context, client kubernetes.Interface) error {
	for _, name := range systemNamespaces {
		_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %q: %w", name, err)
		}
	}
	return nil
}

// policyArrivalWait bounds how long bootstrapRBAC waits for the RBAC index to hold the policy it
// wrote before it reconciles again (someone may have deleted a default object meanwhile).
const policyArrivalWait = 10 * time.Second

// bootstrapRBAC reconciles the default policy, retrying while the server is still coming up, and
// then waits until the RBAC index holds it (on a first start the informers synced on empty
// lists before the policy was written), so that a ready server authorizes by it. What it does not
// hold after arrivalWait is reconciled again.
func bootstrapRBAC(ctx context.Context, client kubernetes.Interface, index *rbac.Authorizer, arrivalWait time.Duration) error {
	var roles, bindings []string
	for _, r := range bootstrap.ClusterRoles() {
		roles = append(roles, r.Name)
	}
	for _, b := range bootstrap.ClusterRoleBindings() {
		bindings = append(bindings, b.Name)
	}
	for {
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			if err := bootstrap.Reconcile(ctx, client); err != nil {
				klog.ErrorS(err, "Reconciling the bootstrap RBAC policy; retrying")
				return false, nil
			}
			return true, nil
		})
		if err != nil {
			return fmt.Errorf("reconciling the bootstrap RBAC policy: %w", err)
		}
		err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, arrivalWait, true, func(context.Context) (bool, error) {
			return index.HasSynced() && index.HoldsClusterPolicy(roles, bindings), nil
		})
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("waiting for the RBAC index to hold the bootstrap policy: %w", ctx.Err())
		}
		klog.InfoS("The RBAC index does not hold the whole bootstrap policy yet; reconciling again", "waited", arrivalWait)
	}
}
