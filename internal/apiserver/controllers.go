package apiserver

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/idplane/idplane/internal/authz/node"
	"github.com/idplane/idplane/internal/authz/rbac"
	"github.com/idplane/idplane/internal/authz/rbac/bootstrap"
	"github.com/idplane/idplane/internal/controller/clusterroleaggregation"
	"github.com/idplane/idplane/internal/controller/csrapproving"
	"github.com/idplane/idplane/internal/controller/csrcleaner"
	"github.com/idplane/idplane/internal/controller/csrsigning"
	"github.com/idplane/idplane/internal/controller/everynamespace"
	namespacecontroller "github.com/idplane/idplane/internal/controller/namespace"
	"github.com/idplane/idplane/internal/controller/rootcacertpublisher"
	"github.com/idplane/idplane/internal/controller/serviceaccount"
	"github.com/idplane/idplane/internal/controller/serviceaccounttokens"
	"github.com/idplane/idplane/internal/controller/tokencleaner"
	"github.com/idplane/idplane/internal/controller/trustbundlepublisher"
)

// systemNamespaces exist from the first start; NamespaceLifecycle keeps the first three from
// being deleted.
var systemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// certificateControllers answer the Certificates API: the built-in signers, the kubelet-client
// approver and the publisher of the signers' CAs.
type certificateControllers struct {
	signing   *csrsigning.Controller
	approving *csrapproving.Controller
	publisher *trustbundlepublisher.Publisher
}

// namespaceContentControllers put in every active namespace what workloads there expect: the
// default ServiceAccount, the CA that verifies the server, and the legacy tokens of the
// service-account token secrets users create.
type namespaceContentControllers struct {
	serviceAccounts *everynamespace.Loop
	rootCA          *everynamespace.Loop
	tokens          *serviceaccounttokens.Controller
}

// newNamespaceContentControllers builds them on the shared informers; caPEM is the cluster CA,
// which signs the serving certificate.
func newNamespaceContentControllers(client kubernetes.Interface, factory informers.SharedInformerFactory, caPEM []byte, issuer serviceaccounttokens.Issuer) (namespaceContentControllers, error) {
	core := factory.Core().V1()
	tokens, err := serviceaccounttokens.New(client, issuer, caPEM, core.Secrets(), core.ServiceAccounts())
	if err != nil {
		return namespaceContentControllers{}, fmt.Errorf("building the tokens controller: %w", err)
	}
	serviceAccounts, err := serviceaccount.New(client, core.Namespaces(), core.ServiceAccounts())
	if err != nil {
		return namespaceContentControllers{}, fmt.Errorf("building the service account controller: %w", err)
	}
	rootCA, err := rootcacertpublisher.New(client, core.Namespaces(), core.ConfigMaps(), caPEM)
	if err != nil {
		return namespaceContentControllers{}, fmt.Errorf("building the root CA publisher: %w", err)
	}
	return namespaceContentControllers{serviceAccounts: serviceAccounts, rootCA: rootCA, tokens: tokens}, nil
}

// addControllers registers the built-in controllers and start-up tasks as post-start hooks; the
// server reports ready only once every hook has returned.
// nodeGraph is nil when mode Node is off.
func addControllers(srv *genericapiserver.GenericAPIServer, client kubernetes.Interface, dyn dynamic.Interface, factory informers.SharedInformerFactory, rbacIndex *rbac.Authorizer, nodeGraph *node.Populator, content namespaceContentControllers, certs certificateControllers) error {
	namespaces, err := namespacecontroller.New(client, dyn, factory.Core().V1().Namespaces())
	if err != nil {
		return err
	}
	aggregation, err := clusterroleaggregation.New(client, factory.Rbac().V1().ClusterRoles())
	if err != nil {
		return err
	}
	cleaner := csrcleaner.New(client, factory.Certificates().V1().CertificateSigningRequests(), clock.RealClock{})
	tokenCleaner, err := tokencleaner.New(client, factory.Core().V1().Secrets(), clock.RealClock{})
	if err != nil {
		return fmt.Errorf("building the bootstrap token cleaner: %w", err)
	}
	type hook struct {
		name string
		run  func(context.Context) error
	}
	hooks := []hook{
		{"start-informers", func(ctx context.Context) error {
			factory.Start(ctx.Done())
			return nil
		}},
		{"system-namespaces", func(ctx context.Context) error { return ensureNamespaces(ctx, client) }},
		{"rbac/bootstrap-roles", func(ctx context.Context) error { return bootstrapRBAC(ctx, client, rbacIndex) }},
		{"namespace-controller", func(ctx context.Context) error {
			go namespaces.Run(ctx, 2)
			return nil
		}},
		{"serviceaccount-controller", func(ctx context.Context) error {
			go content.serviceAccounts.Run(ctx, 1)
			return nil
		}},
		{"root-ca-cert-publisher", func(ctx context.Context) error {
			go content.rootCA.Run(ctx, 1)
			return nil
		}},
		{"serviceaccount-tokens-controller", func(ctx context.Context) error {
			go content.tokens.Run(ctx, 1)
			return nil
		}},
		{"clusterrole-aggregation-controller", func(ctx context.Context) error {
			go aggregation.Run(ctx, 1)
			return nil
		}},
		{"csr-signing-controller", func(ctx context.Context) error {
			go certs.signing.Run(ctx, 2)
			return nil
		}},
		{"csr-approving-controller", func(ctx context.Context) error {
			go certs.approving.Run(ctx, 1)
			return nil
		}},
		{"csr-cleaner", func(ctx context.Context) error {
			go cleaner.Run(ctx)
			return nil
		}},
		{"bootstrap-token-cleaner", func(ctx context.Context) error {
			go tokenCleaner.Run(ctx, 1)
			return nil
		}},
		{"trust-bundle-publisher", func(ctx context.Context) error {
			go certs.publisher.Run(ctx)
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
	for _, h := range hooks {
		err := srv.AddPostStartHook(h.name, func(ctx genericapiserver.PostStartHookContext) error { return h.run(ctx) })
		if err != nil {
			return err
		}
	}
	return nil
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

// bootstrapRBAC reconciles the default policy, retrying while the server is still coming up, and
// then waits until the RBAC index has seen it, so that a ready server authorizes by it.
func bootstrapRBAC(ctx context.Context, client kubernetes.Interface, index *rbac.Authorizer) error {
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
	return wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) {
		return index.HasSynced(), nil
	})
}
