// Package csrapproving approves kubelet client certificate requests whose requester may have
// them: a new node's credentials need "create" on certificatesigningrequests/nodeclient, a node
// renewing its own (the CSR's common name is the requester) needs
// certificatesigningrequests/selfnodeclient, and a CSR made with a bootstrap token bound to a
// node must ask for that node (bootstraptoken.go). When enabled, it also approves a node's own
// kubelet serving certificate for names its Node object shows and that are no one else's
// (certificates.ApproveKubeletServing). Everything else waits for a human or another approver:
// this controller never denies, since a denial is final while a serving request may become
// approvable once its Node reports the names, and a name that belongs to someone else is for a
// human to judge, told by an event on the CSR.
package csrapproving

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	certinformers "k8s.io/client-go/informers/certificates/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/idplane/idplane/internal/certificates"
	"github.com/idplane/idplane/internal/controller/keyworker"
)

// Controller approves the kubelet CSRs its rules allow.
type Controller struct {
	client kubernetes.Interface
	authz  authorizer.Authorizer
	lister certlisters.CertificateSigningRequestLister
	csrs   cache.Indexer
	// secrets are kube-system's, where bootstrap tokens live.
	secrets corelisters.SecretNamespaceLister
	// nodes is nil unless kubelet serving CSRs are approved.
	nodes corelisters.NodeLister
	// nodeClaims finds Nodes by the names they claim (certificates.NodeClaims).
	nodeClaims cache.Indexer
	apiServer  certificates.ServerNames
	recorder   record.EventRecorder
	synced     []cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[string]
}

// Config are the optional parts of the approver.
type Config struct {
	// ApproveKubeletServing also approves kubernetes.io/kubelet-serving CSRs a node asks for
	// itself, for names its Node object shows.
	ApproveKubeletServing bool
	// Nodes is the Node informer; required with ApproveKubeletServing.
	Nodes coreinformers.NodeInformer
	// APIServer are the names the API server's serving certificate covers, which no node gets.
	APIServer certificates.ServerNames
	// Secrets is the Secret informer, for the bootstrap tokens' bindings; required.
	Secrets coreinformers.SecretInformer
	// Recorder reports on a CSR why it was left for a human; required.
	Recorder record.EventRecorder
}

// servingRequesterIndex finds the kubelet serving CSRs a requester asked for, to look at them
// again when the requester's Node changes.
const servingRequesterIndex = "csrapproving.kubelet-serving-requester"

// nodeClaimIndex finds the Nodes that claim a name.
const nodeClaimIndex = "csrapproving.node-claims"

// nameRefusedReason is the event reason of a serving CSR left pending for a name that is not the
// node's to have.
const nameRefusedReason = "KubeletServingNameRefused"

// New returns the controller; authz is the server's own authorizer, asked as each CSR's requester.
func New(client kubernetes.Interface, authz authorizer.Authorizer, csrs certinformers.CertificateSigningRequestInformer, cfg Config) (*Controller, error) {
	if cfg.Secrets == nil || cfg.Recorder == nil {
		return nil, fmt.Errorf("approving CSRs needs the Secret informer and an event recorder")
	}
	c := &Controller{
		client:   client,
		authz:    authz,
		lister:   csrs.Lister(),
		csrs:     csrs.Informer().GetIndexer(),
		secrets:  cfg.Secrets.Lister().Secrets(metav1.NamespaceSystem),
		recorder: cfg.Recorder,
		synced:   []cache.InformerSynced{csrs.Informer().HasSynced, cfg.Secrets.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 30*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "csrapproving"}),
	}
	if cfg.ApproveKubeletServing {
		if cfg.Nodes == nil {
			return nil, fmt.Errorf("approving kubelet serving CSRs needs the Node informer")
		}
		c.apiServer = cfg.APIServer
		if err := c.watchNodes(csrs, cfg.Nodes); err != nil {
			return nil, err
		}
	}
	enqueue := func(obj any) {
		if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok && c.handles(csr) {
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

// watchNodes looks again at a node's pending serving CSRs when the Node appears or its names
// change: a kubelet asks for its serving certificate about when it first reports its addresses.
func (c *Controller) watchNodes(csrs certinformers.CertificateSigningRequestInformer, nodes coreinformers.NodeInformer) error {
	err := csrs.Informer().AddIndexers(cache.Indexers{servingRequesterIndex: func(obj any) ([]string, error) {
		csr, ok := obj.(*certificatesv1.CertificateSigningRequest)
		if !ok || csr.Spec.SignerName != certificatesv1.KubeletServingSignerName {
			return nil, nil
		}
		return []string{csr.Spec.Username}, nil
	}})
	if err != nil {
		return fmt.Errorf("indexing certificatesigningrequests: %w", err)
	}
	err = nodes.Informer().AddIndexers(cache.Indexers{nodeClaimIndex: func(obj any) ([]string, error) {
		if n, ok := obj.(*corev1.Node); ok {
			return certificates.NodeClaims(n), nil
		}
		return nil, nil
	}})
	if err != nil {
		return fmt.Errorf("indexing nodes: %w", err)
	}
	c.nodes, c.nodeClaims = nodes.Lister(), nodes.Informer().GetIndexer()
	c.synced = append(c.synced, nodes.Informer().HasSynced)
	nodeChanged := func(obj any) {
		n, ok := obj.(*corev1.Node)
		if !ok {
			return
		}
		pending, err := c.csrs.ByIndex(servingRequesterIndex, nodeUserPrefix+n.Name)
		if err != nil {
			klog.ErrorS(err, "Finding the kubelet serving CSRs of a node", "node", n.Name)
			return
		}
		for _, obj := range pending {
			if csr := obj.(*certificatesv1.CertificateSigningRequest); undecided(csr) {
				c.queue.Add(csr.Name)
			}
		}
	}
	_, err = nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: nodeChanged,
		UpdateFunc: func(old, obj any) {
			o, ok1 := old.(*corev1.Node)
			n, ok2 := obj.(*corev1.Node)
			// Heartbeats change the status all the time; only the names matter here.
			if ok1 && ok2 && (!slices.Equal(o.Status.Addresses, n.Status.Addresses) || o.Labels[corev1.LabelHostname] != n.Labels[corev1.LabelHostname]) {
				nodeChanged(obj)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("watching nodes: %w", err)
	}
	return nil
}

const nodeUserPrefix = "system:node:"

// handles reports an undecided CSR of a signer this approver answers for.
func (c *Controller) handles(csr *certificatesv1.CertificateSigningRequest) bool {
	switch csr.Spec.SignerName {
	case certificatesv1.KubeAPIServerClientKubeletSignerName:
	case certificatesv1.KubeletServingSignerName:
		if c.nodes == nil {
			return false
		}
	default:
		return false
	}
	return undecided(csr)
}

// undecided reports a CSR nobody has approved, denied or failed yet.
func undecided(csr *certificatesv1.CertificateSigningRequest) bool {
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
	synced := func() bool {
		for _, s := range c.synced {
			if !s() {
				return false
			}
		}
		return true
	}
	keyworker.Run(ctx, c.queue, synced, workers, "Approving certificate signing request", c.sync)
}

func (c *Controller) sync(ctx context.Context, name string) error {
	csr, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !c.handles(csr) {
		return nil
	}
	parsed, err := certificates.ParseRequest(csr.Spec.Request)
	if err != nil {
		return nil
	}
	if csr.Spec.SignerName == certificatesv1.KubeletServingSignerName {
		return c.syncServing(ctx, csr, parsed)
	}
	// Only what the kubelet client signer would sign is approved here; the rest is a human's call.
	policy, ok := certificates.PolicyFor(certificatesv1.KubeAPIServerClientKubeletSignerName)
	if !ok || policy.Check(&certificates.Request{CSR: parsed, Usages: csr.Spec.Usages}) != nil {
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
	if allowed, err = c.tokenAllows(ctx, csr, parsed.Subject.CommonName); err != nil || !allowed {
		return err
	}
	return c.approve(ctx, csr, message)
}

// syncServing approves a kubelet serving CSR when certificates.ApproveKubeletServing allows it
// against the Node the cache holds now, and otherwise leaves it pending.
func (c *Controller) syncServing(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, parsed *x509.CertificateRequest) error {
	req := &certificates.KubeletServingRequest{Username: csr.Spec.Username, Groups: csr.Spec.Groups, Usages: csr.Spec.Usages, CSR: parsed, APIServer: c.apiServer}
	for _, name := range certificates.RequestNames(parsed) {
		claimants, err := c.nodeClaims.ByIndex(nodeClaimIndex, name)
		if err != nil {
			return fmt.Errorf("finding the nodes that claim the names of CSR %q: %w", csr.Name, err)
		}
		for _, obj := range claimants {
			req.Claimants = append(req.Claimants, obj.(*corev1.Node))
		}
	}
	if name, ok := strings.CutPrefix(parsed.Subject.CommonName, nodeUserPrefix); ok && name != "" {
		node, err := c.nodes.Get(name)
		switch {
		case err == nil:
			req.Node = node
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("looking up the node of CSR %q: %w", csr.Name, err)
		}
	}
	if err := certificates.ApproveKubeletServing(req); err != nil {
		klog.V(2).InfoS("Leaving kubelet serving CSR pending", "csr", csr.Name, "reason", err)
		if refused := (*certificates.RefusedNamesError)(nil); errors.As(err, &refused) {
			c.recorder.Event(csr, corev1.EventTypeWarning, nameRefusedReason, refusedMessage(refused.Names))
		}
		return nil
	}
	return c.approve(ctx, csr, "Auto approving kubelet serving certificate for names its node reports.")
}

// maxEventMessage is the longest event message the API accepts.
const maxEventMessage = 1024

// refusedMessage names the refused names, as many as an event's message holds, and how many more.
func refusedMessage(names []string) string {
	msg := "Left pending for a human to decide: "
	shown := 0
	for _, n := range names {
		if shown > 0 {
			n = "; " + n
		}
		more := ""
		if rest := len(names) - shown - 1; rest > 0 {
			more = fmt.Sprintf("; and %d more", rest)
		}
		if shown > 0 && len(msg)+len(n)+len(more) > maxEventMessage {
			break
		}
		msg += n
		shown++
	}
	if rest := len(names) - shown; rest > 0 {
		msg += fmt.Sprintf("; and %d more", rest)
	}
	if len(msg) > maxEventMessage {
		// One name alone is too long: DNS names in a CSR are ASCII, so cutting bytes is safe.
		msg = msg[:maxEventMessage-len("...")] + "..."
	}
	return msg
}

func (c *Controller) approve(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, message string) error {
	csr = csr.DeepCopy()
	now := metav1.Now()
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "AutoApproved", Message: message,
		LastUpdateTime: now, LastTransitionTime: now,
	})
	if _, err := c.client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("approving CSR %q: %w", csr.Name, err)
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
