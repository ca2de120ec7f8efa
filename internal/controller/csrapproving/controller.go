// Package csrapproving approves kubelet client certificate requests whose requester may have
// them: a new node's credentials need "create" on certificatesigningrequests/nodeclient, a node
// renewing its own (the CSR's common name is the requester) needs
// certificatesigningrequests/selfnodeclient. Everything else waits for a human or another approver.
package csrapproving

import (
	"context"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	certinformers "k8s.io/client-go/informers/certificates/v1"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/idplane/idplane/internal/certificates"
	"github.com/idplane/idplane/internal/controller/keyworker"
)

// Controller approves the kubelet client CSRs its rules allow.
type Controller struct {
	client kubernetes.Interface
	authz  authorizer.Authorizer
	lister certlisters.CertificateSigningRequestLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
}

// New returns the controller; authz is the server's own authorizer, asked as each CSR's requester.
func New(client kubernetes.Interface, authz authorizer.Authorizer, csrs certinformers.CertificateSigningRequestInformer) (*Controller, error) {
	c := &Controller{
		client: client,
		authz:  authz,
		lister: csrs.Lister(),
		synced: csrs.Informer().HasSynced,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 30*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "csrapproving"}),
	}
	enqueue := func(obj any) {
		if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok && undecidedKubeletClient(csr) {
			c.queue.Add(csr.Name)
		}
	}
	_, err := csrs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("watching certificatesigningrequests: %w", err)
	}
	return c, nil
}

// undecidedKubeletClient reports a kubelet client CSR nobody has approved, denied or failed yet.
func undecidedKubeletClient(csr *certificatesv1.CertificateSigningRequest) bool {
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
		return false
	}
	for _, cond := range csr.Status.Conditions {
		switch cond.Type {
		case certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			return false
		}
	}
	return true
}

// Run approves until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	keyworker.Run(ctx, c.queue, c.synced, workers, "Approving certificate signing request", c.sync)
}

func (c *Controller) sync(ctx context.Context, name string) error {
	csr, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !undecidedKubeletClient(csr) {
		return nil
	}
	parsed, err := certificates.ParseRequest(csr.Spec.Request)
	if err != nil {
		return nil
	}
	// Only what the kubelet client signer would sign is approved here; the rest is a human's call.
	policy := certificates.Policies[certificatesv1.KubeAPIServerClientKubeletSignerName]
	if policy.Check(&certificates.Request{CSR: parsed, Usages: csr.Spec.Usages}) != nil {
		return nil
	}
	subresource, message := "nodeclient", "Auto approving kubelet client certificate after SubjectAccessReview."
	if parsed.Subject.CommonName == csr.Spec.Username {
		subresource, message = "selfnodeclient", "Auto approving self kubelet client certificate after SubjectAccessReview."
	}
	allowed, err := c.requesterMay(ctx, csr, subresource)
	if err != nil || !allowed {
		return err
	}
	csr = csr.DeepCopy()
	now := metav1.Now()
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "AutoApproved", Message: message,
		LastUpdateTime: now, LastTransitionTime: now,
	})
	if _, err := c.client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("approving CSR %q: %w", name, err)
	}
	return nil
}

// requesterMay asks the server's authorizer whether the CSR's requester may create the given
// subresource of certificatesigningrequests.
func (c *Controller) requesterMay(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, subresource string) (bool, error) {
	extra := map[string][]string{}
	for k, v := range csr.Spec.Extra {
		extra[k] = v
	}
	requester := &user.DefaultInfo{Name: csr.Spec.Username, UID: csr.Spec.UID, Groups: csr.Spec.Groups, Extra: extra}
	decision, _, err := c.authz.Authorize(ctx, authorizer.AttributesRecord{
		User: requester, Verb: "create", APIGroup: certificatesv1.GroupName, APIVersion: "*",
		Resource: "certificatesigningrequests", Subresource: subresource, ResourceRequest: true,
	})
	if err != nil {
		return false, fmt.Errorf("authorizing the requester of CSR %q: %w", csr.Name, err)
	}
	return decision == authorizer.DecisionAllow, nil
}
