package apiserver

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/informers"
	certificatesv1informers "k8s.io/client-go/informers/certificates/v1"
	coordinationinformers "k8s.io/client-go/informers/coordination/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	rbacinformers "k8s.io/client-go/informers/rbac/v1"
	"k8s.io/client-go/kubernetes"
	certificatesv1listers "k8s.io/client-go/listers/certificates/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// sharedInformers is the server's shared informer factory as the leader's controllers see it:
// they may start informers on it only once the server runs, and only until it stops.
type sharedInformers struct {
	factory informers.SharedInformerFactory
	started chan struct{}
	stop    <-chan struct{}
}

func newSharedInformers(f informers.SharedInformerFactory) *sharedInformers {
	return &sharedInformers{factory: f, started: make(chan struct{})}
}

// run starts the factory's informers until stop closes; the server's start-up calls it once.
func (s *sharedInformers) run(stop <-chan struct{}) {
	s.stop = stop
	close(s.started)
	s.factory.Start(stop)
}

// running waits until the server runs and returns the channel that closes when it stops; false
// if ctx ended first.
func (s *sharedInformers) running(ctx context.Context) (<-chan struct{}, bool) {
	select {
	case <-s.started:
		return s.stop, true
	case <-ctx.Done():
		return nil, false
	}
}

// termInformers are the informers one leadership term's controllers read.
//
// The resources every replica's own parts already watch (secrets, service accounts, nodes and
// cluster roles for authentication, admission and RBAC; namespaces, pods and pod certificate
// requests where admission and the Node authorizer watch them) come from the server's shared factory, so
// the leader keeps one copy of each, not two. Those informers outlive the term; what the term
// adds to them (event handlers) it removes when it ends, so a lost term leaves nothing behind
// and the next term starts clean. The resources only controllers watch (config maps, leases and
// certificate signing requests) come from a factory of the term's own, started and shut down
// with it: a replica that does not lead never holds them.
type termInformers struct {
	shared informers.SharedInformerFactory
	own    informers.SharedInformerFactory

	mu       sync.Mutex
	handlers []termHandler
}

type termHandler struct {
	informer cache.SharedIndexInformer
	reg      cache.ResourceEventHandlerRegistration
}

func newTermInformers(client kubernetes.Interface, shared informers.SharedInformerFactory) *termInformers {
	return &termInformers{shared: shared, own: newInformerFactory(client)}
}

// start starts the informers the term asked for: the term's own until stop closes, the shared
// ones (if not running yet) until serverStop closes.
func (t *termInformers) start(stop, serverStop <-chan struct{}) {
	t.shared.Start(serverStop)
	t.own.Start(stop)
}

// end removes the term's event handlers from the shared informers and shuts its own down.
func (t *termInformers) end() {
	t.mu.Lock()
	handlers := t.handlers
	t.handlers = nil
	t.mu.Unlock()
	for _, h := range handlers {
		if err := h.informer.RemoveEventHandler(h.reg); err != nil {
			klog.ErrorS(err, "Removing a controller's event handler at the end of its term")
		}
	}
	t.own.Shutdown()
}

func (t *termInformers) Namespaces() coreinformers.NamespaceInformer {
	i := t.shared.Core().V1().Namespaces()
	return typedInformer[corelisters.NamespaceLister]{t.track(i.Informer()), i.Lister()}
}

func (t *termInformers) ServiceAccounts() coreinformers.ServiceAccountInformer {
	i := t.shared.Core().V1().ServiceAccounts()
	return typedInformer[corelisters.ServiceAccountLister]{t.track(i.Informer()), i.Lister()}
}

// ServiceAccountTokenSecrets are the service-account token secrets: the shared Secret informer
// holds no others.
func (t *termInformers) ServiceAccountTokenSecrets() coreinformers.SecretInformer {
	i := t.shared.Core().V1().Secrets()
	return typedInformer[corelisters.SecretLister]{t.track(i.Informer()), i.Lister()}
}

// BootstrapTokenSecrets are the bootstrap token secrets in kube-system; Secrets holds none.
func (t *termInformers) BootstrapTokenSecrets() coreinformers.SecretInformer {
	i := bootstrapTokenSecrets(t.shared)
	return typedInformer[corelisters.SecretLister]{t.track(i.Informer()), i.Lister()}
}

func (t *termInformers) Nodes() coreinformers.NodeInformer {
	i := t.shared.Core().V1().Nodes()
	return typedInformer[corelisters.NodeLister]{t.track(i.Informer()), i.Lister()}
}

func (t *termInformers) ClusterRoles() rbacinformers.ClusterRoleInformer {
	i := t.shared.Rbac().V1().ClusterRoles()
	return typedInformer[rbaclisters.ClusterRoleLister]{t.track(i.Informer()), i.Lister()}
}

func (t *termInformers) PodCertificateRequests() certificatesv1informers.PodCertificateRequestInformer {
	i := t.shared.Certificates().V1().PodCertificateRequests()
	return typedInformer[certificatesv1listers.PodCertificateRequestLister]{t.track(i.Informer()), i.Lister()}
}

func (t *termInformers) Pods() coreinformers.PodInformer {
	i := t.shared.Core().V1().Pods()
	return typedInformer[corelisters.PodLister]{t.track(i.Informer()), i.Lister()}
}

func (t *termInformers) Leases() coordinationinformers.LeaseInformer {
	return t.own.Coordination().V1().Leases()
}

func (t *termInformers) ConfigMaps() coreinformers.ConfigMapInformer {
	return t.own.Core().V1().ConfigMaps()
}

func (t *termInformers) CertificateSigningRequests() certificatesv1informers.CertificateSigningRequestInformer {
	return t.own.Certificates().V1().CertificateSigningRequests()
}

// typedInformer is a shared informer as a typed informer of client-go's, for the controllers'
// constructors.
type typedInformer[L any] struct {
	informer cache.SharedIndexInformer
	lister   L
}

func (i typedInformer[L]) Informer() cache.SharedIndexInformer { return i.informer }
func (i typedInformer[L]) Lister() L                           { return i.lister }

// track wraps a shared informer so that the handlers added through it are the term's.
func (t *termInformers) track(i cache.SharedIndexInformer) cache.SharedIndexInformer {
	return &termInformer{SharedIndexInformer: i, term: t}
}

// termInformer is a shared informer seen from one term.
type termInformer struct {
	cache.SharedIndexInformer
	term *termInformers
}

func (i *termInformer) add(reg cache.ResourceEventHandlerRegistration, err error) (cache.ResourceEventHandlerRegistration, error) {
	if err == nil {
		i.term.mu.Lock()
		i.term.handlers = append(i.term.handlers, termHandler{i.SharedIndexInformer, reg})
		i.term.mu.Unlock()
	}
	return reg, err
}

func (i *termInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return i.add(i.SharedIndexInformer.AddEventHandler(h))
}

func (i *termInformer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, resync time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return i.add(i.SharedIndexInformer.AddEventHandlerWithResyncPeriod(h, resync))
}

func (i *termInformer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, o cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return i.add(i.SharedIndexInformer.AddEventHandlerWithOptions(h, o))
}

// AddIndexers adds only the indexers the informer does not have yet. Indexes cannot be removed,
// so a controller's index stays from its first term; a later term's controller, the same code,
// asks for the same index by the same name and finds it.
func (i *termInformer) AddIndexers(indexers cache.Indexers) error {
	have := i.GetIndexer().GetIndexers()
	missing := cache.Indexers{}
	for name, f := range indexers {
		if _, ok := have[name]; !ok {
			missing[name] = f
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return i.SharedIndexInformer.AddIndexers(missing)
}
