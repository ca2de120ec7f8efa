package serviceaccount

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
)

// InformerGetter reads the objects tokens name from shared informers. Only when an informer does
// not hold an object does it ask the server, so that a token for an object created a moment ago is
// not refused while its watch event is in flight; the client must not itself authenticate with a
// service-account token, or a lookup would recurse.
type InformerGetter struct {
	client          kubernetes.Interface
	serviceAccounts corev1listers.ServiceAccountLister
	pods            corev1listers.PodLister
	secrets         corev1listers.SecretLister
	nodes           corev1listers.NodeLister
}

// NewInformerGetter registers the four informers with f; they start with the factory.
func NewInformerGetter(client kubernetes.Interface, f informers.SharedInformerFactory) *InformerGetter {
	core := f.Core().V1()
	return &InformerGetter{
		client:          client,
		serviceAccounts: core.ServiceAccounts().Lister(),
		pods:            core.Pods().Lister(),
		secrets:         core.Secrets().Lister(),
		nodes:           core.Nodes().Lister(),
	}
}

var _ Getter = (*InformerGetter)(nil)

func (g *InformerGetter) ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	return orLive(g.serviceAccounts.ServiceAccounts(namespace).Get(name))(func() (*corev1.ServiceAccount, error) {
		return g.client.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
	})
}

func (g *InformerGetter) Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return orLive(g.pods.Pods(namespace).Get(name))(func() (*corev1.Pod, error) {
		return g.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	})
}

func (g *InformerGetter) Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	return orLive(g.secrets.Secrets(namespace).Get(name))(func() (*corev1.Secret, error) {
		return g.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	})
}

func (g *InformerGetter) Node(ctx context.Context, name string) (*corev1.Node, error) {
	return orLive(g.nodes.Get(name))(func() (*corev1.Node, error) {
		return g.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	})
}

// orLive keeps the informer's answer unless it is "not found", in which case the server's answer
// decides.
func orLive[T any](cached T, err error) func(get func() (T, error)) (T, error) {
	return func(get func() (T, error)) (T, error) {
		if apierrors.IsNotFound(err) {
			return get()
		}
		return cached, err
	}
}
