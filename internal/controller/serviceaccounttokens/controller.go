// Package serviceaccounttokens fills the kubernetes.io/service-account-token secrets users create
// with a legacy token of their service account, the cluster CA and the namespace, and deletes such
// secrets once their service account is gone, so that their tokens stop authenticating.
package serviceaccounttokens

import (
	"bytes"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corev1informers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/idplane/idplane/internal/controller/keyworker"
)

// Issuer signs legacy tokens.
type Issuer interface {
	IssueLegacy(context.Context, *corev1.ServiceAccount, *corev1.Secret) (string, error)
}

// Controller keeps service-account token secrets filled and removes those of deleted accounts.
type Controller struct {
	client   kubernetes.Interface
	issuer   Issuer
	caPEM    []byte
	secrets  corev1listers.SecretLister
	accounts corev1listers.ServiceAccountLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
}

// New returns the controller; caPEM is the CA bundle written beside each token.
func New(client kubernetes.Interface, issuer Issuer, caPEM []byte, secrets corev1informers.SecretInformer, accounts corev1informers.ServiceAccountInformer) (*Controller, error) {
	c := &Controller{
		client: client, issuer: issuer, caPEM: caPEM,
		secrets: secrets.Lister(), accounts: accounts.Lister(),
		synced: []cache.InformerSynced{secrets.Informer().HasSynced, accounts.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "serviceaccount-tokens"}),
	}
	enqueueSecret := func(obj any) {
		if s, ok := obj.(*corev1.Secret); ok && s.Type == corev1.SecretTypeServiceAccountToken {
			c.queue.Add(s.Namespace + "/" + s.Name)
		}
	}
	if _, err := secrets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueSecret,
		UpdateFunc: func(_, obj any) { enqueueSecret(obj) },
	}); err != nil {
		return nil, fmt.Errorf("watching secrets: %w", err)
	}
	if _, err := accounts.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: c.enqueueTokensOf}); err != nil {
		return nil, fmt.Errorf("watching service accounts: %w", err)
	}
	return c, nil
}

// enqueueTokensOf queues the token secrets of a deleted account: they must go with it.
func (c *Controller) enqueueTokensOf(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	sa, ok := obj.(*corev1.ServiceAccount)
	if !ok {
		return
	}
	secrets, err := c.secrets.Secrets(sa.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, s := range secrets {
		if s.Type == corev1.SecretTypeServiceAccountToken && s.Annotations[corev1.ServiceAccountNameKey] == sa.Name {
			c.queue.Add(s.Namespace + "/" + s.Name)
		}
	}
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	synced := func() bool {
		for _, s := range c.synced {
			if !s() {
				return false
			}
		}
		return true
	}
	keyworker.Run(ctx, c.queue, synced, workers, "Syncing service-account token secret", c.sync)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	secret, err := c.secrets.Secrets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if secret.Type != corev1.SecretTypeServiceAccountToken || secret.DeletionTimestamp != nil {
		return nil
	}
	sa, err := c.account(ctx, secret)
	if err != nil {
		return err
	}
	if sa == nil {
		return c.delete(ctx, secret)
	}
	if c.filled(secret, sa) {
		return nil
	}
	return c.fill(ctx, secret, sa)
}

// account returns the service account a secret names, or nil when it no longer exists (or exists
// as another object of the same name). A cache miss is checked against the server before a secret
// is deleted for it.
func (c *Controller) account(ctx context.Context, secret *corev1.Secret) (*corev1.ServiceAccount, error) {
	name := secret.Annotations[corev1.ServiceAccountNameKey]
	sa, err := c.accounts.ServiceAccounts(secret.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		sa, err = c.client.CoreV1().ServiceAccounts(secret.Namespace).Get(ctx, name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("looking up service account %s/%s: %w", secret.Namespace, name, err)
	}
	if uid := secret.Annotations[corev1.ServiceAccountUIDKey]; uid != "" && types.UID(uid) != sa.UID {
		return nil, nil
	}
	return sa, nil
}

func (c *Controller) filled(secret *corev1.Secret, sa *corev1.ServiceAccount) bool {
	return len(secret.Data[corev1.ServiceAccountTokenKey]) > 0 &&
		bytes.Equal(secret.Data[corev1.ServiceAccountRootCAKey], c.caPEM) &&
		string(secret.Data[corev1.ServiceAccountNamespaceKey]) == secret.Namespace &&
		secret.Annotations[corev1.ServiceAccountUIDKey] == string(sa.UID)
}

func (c *Controller) fill(ctx context.Context, secret *corev1.Secret, sa *corev1.ServiceAccount) error {
	s := secret.DeepCopy()
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	s.Annotations[corev1.ServiceAccountUIDKey] = string(sa.UID)
	if len(s.Data[corev1.ServiceAccountTokenKey]) == 0 {
		token, err := c.issuer.IssueLegacy(ctx, sa, s)
		if err != nil {
			return err
		}
		s.Data[corev1.ServiceAccountTokenKey] = []byte(token)
	}
	s.Data[corev1.ServiceAccountRootCAKey] = c.caPEM
	s.Data[corev1.ServiceAccountNamespaceKey] = []byte(s.Namespace)
	_, err := c.client.CoreV1().Secrets(s.Namespace).Update(ctx, s, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("filling token secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	klog.V(2).InfoS("Filled service-account token secret", "secret", klog.KObj(s), "serviceAccount", sa.Name)
	return nil
}

// delete removes a token secret of an account that is gone; the UID precondition keeps a secret
// recreated meanwhile.
func (c *Controller) delete(ctx context.Context, secret *corev1.Secret) error {
	err := c.client.CoreV1().Secrets(secret.Namespace).Delete(ctx, secret.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &secret.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting token secret %s/%s of a deleted service account: %w", secret.Namespace, secret.Name, err)
	}
	klog.V(2).InfoS("Deleted the token secret of a deleted service account", "secret", klog.KObj(secret))
	return nil
}
