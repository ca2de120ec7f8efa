// Package serviceaccount gives every active namespace a ServiceAccount named "default": pods that
// name no service account run as it, so it has to exist wherever pods may be created.
package serviceaccount

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/idplane/idplane/internal/controller/everynamespace"
)

// DefaultName is the ServiceAccount every active namespace gets.
const DefaultName = "default"

// controller creates the default ServiceAccount in namespaces that lack it.
type controller struct {
	client   kubernetes.Interface
	accounts corelisters.ServiceAccountLister
}

// New returns the controller on the shared informers.
func New(client kubernetes.Interface, namespaces coreinformers.NamespaceInformer, accounts coreinformers.ServiceAccountInformer) (*everynamespace.Loop, error) {
	c := &controller{client: client, accounts: accounts.Lister()}
	return everynamespace.New(namespaces, everynamespace.Config{
		Queue: "serviceaccount", What: "Ensuring the default service account",
		Name: DefaultName, Objects: accounts.Informer(), Ensure: c.ensure,
	})
}

func (c *controller) ensure(ctx context.Context, namespace string) error {
	_, err := c.accounts.ServiceAccounts(namespace).Get(DefaultName)
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading serviceaccount %s/%s from the cache: %w", namespace, DefaultName, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DefaultName, Namespace: namespace}}
	_, err = c.client.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{})
	if err == nil || apierrors.IsAlreadyExists(err) || everynamespace.NamespaceGone(err) {
		return nil
	}
	return fmt.Errorf("creating serviceaccount %s/%s: %w", namespace, DefaultName, err)
}
