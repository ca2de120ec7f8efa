// Package noderestriction is the NodeRestriction admission plugin: the Node authorizer lets a node
// reach what its pods need, and this plugin narrows what a node may write to its own Node, Lease
// and CSINode, the mirror pods of its static pods, and the pods bound to it.
package noderestriction

import (
	"context"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"

	"github.com/idplane/idplane/internal/nodeidentity"
)

// PluginName names the plugin in --enable-admission-plugins.
const PluginName = "NodeRestriction"

// Register adds the plugin to plugins.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) {
		return New(), nil
	})
}

// Plugin restricts the writes of requests made by nodes; everyone else passes untouched.
type Plugin struct {
	*admission.Handler
	pods  corev1listers.PodLister
	nodes corev1listers.NodeLister
	// client reads a pod or node the caches do not have yet: a node acts on a pod it learned of
	// from its own watch, which may be ahead of this server's cache.
	client kubernetes.Interface
	// apiAudiences are the audiences of a projected token source that names none.
	apiAudiences authenticator.Audiences
}

var (
	_ admission.MutationInterface                  = (*Plugin)(nil)
	_ admission.ValidationInterface                = (*Plugin)(nil)
	_ admission.InitializationValidator            = (*Plugin)(nil)
	_ initializer.WantsExternalKubeInformerFactory = (*Plugin)(nil)
	_ initializer.WantsExternalKubeClientSet       = (*Plugin)(nil)
)

// New returns a plugin that still needs its informer factory.
func New() *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update, admission.Delete)}
}

// SetExternalKubeInformerFactory takes the pod and node listers the plugin looks requests up in.
// Until both caches have synced the plugin refuses the node requests that need them rather than
// mistake an empty cache for a missing object.
func (p *Plugin) SetExternalKubeInformerFactory(f informers.SharedInformerFactory) {
	pods, nodes := f.Core().V1().Pods(), f.Core().V1().Nodes()
	p.pods, p.nodes = pods.Lister(), nodes.Lister()
	podsSynced, nodesSynced := pods.Informer().HasSynced, nodes.Informer().HasSynced
	p.SetReadyFunc(func() bool { return podsSynced() && nodesSynced() })
}

// SetExternalKubeClientSet takes the client that reads what the caches miss.
func (p *Plugin) SetExternalKubeClientSet(c kubernetes.Interface) { p.client = c }

// SetAPIAudiences takes the audiences the server identifies as.
func (p *Plugin) SetAPIAudiences(a authenticator.Audiences) { p.apiAudiences = a }

// ValidateInitialization fails when the informer factory or the API audiences were never given.
func (p *Plugin) ValidateInitialization() error {
	if p.pods == nil || p.nodes == nil || p.client == nil {
		return fmt.Errorf("%s requires a pod and a node lister and a client", PluginName)
	}
	if len(p.apiAudiences) == 0 {
		return fmt.Errorf("%s requires the API audiences", PluginName)
	}
	return nil
}

var (
	podsResource     = corev1.Resource("pods")
	nodesResource    = corev1.Resource("nodes")
	pvcsResource     = corev1.Resource("persistentvolumeclaims")
	accountsResource = corev1.Resource("serviceaccounts")
	leasesResource   = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	csiNodesResource = schema.GroupResource{Group: "storage.k8s.io", Resource: "csinodes"}
	csrsResource     = schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}
	pcrsResource     = schema.GroupResource{Group: "certificates.k8s.io", Resource: "podcertificaterequests"}
)

// Admit judges a node's request in the mutating phase, before the object is validated: a node's
// forbidden request is refused whatever its shape, and a caller who may not make the request
// learns nothing of the validation rules. It changes nothing.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	return p.admit(ctx, a)
}

// Validate judges the request again after every mutating plugin, so that the object stored is
// one the rules allowed, whatever a later plugin changed.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	return p.admit(ctx, a)
}

func (p *Plugin) admit(ctx context.Context, a admission.Attributes) error {
	nodeName, isNode := nodeidentity.NodeName(a.GetUserInfo())
	if !isNode {
		return nil
	}
	if nodeName == "" {
		return forbid(a, "could not determine node from user %q", a.GetUserInfo().GetName())
	}
	switch a.GetResource().GroupResource() {
	case podsResource:
		switch a.GetSubresource() {
		case "":
			return p.admitPod(ctx, nodeName, a)
		case "status":
			return admitPodStatus(nodeName, a)
		case "eviction":
			return p.admitEviction(ctx, nodeName, a)
		default:
			return forbid(a, "unexpected pod subresource %q, only 'status' and 'eviction' are allowed", a.GetSubresource())
		}
	case nodesResource:
		return admitNode(nodeName, a)
	case pvcsResource:
		return admitPVCStatus(nodeName, a)
	case accountsResource:
		return p.admitToken(ctx, nodeName, a)
	case leasesResource:
		return admitLease(nodeName, a)
	case csiNodesResource:
		return admitCSINode(nodeName, a)
	case csrsResource:
		return admitCSR(nodeName, a)
	case pcrsResource:
		return p.admitPodCertificateRequest(ctx, nodeName, a)
	}
	return nil
}

// forbid is the 403 every rule answers with; its message names the rule.
func forbid(a admission.Attributes, format string, args ...any) error {
	return admission.NewForbidden(a, fmt.Errorf(format, args...))
}

// errNotReady refuses a lookup while the caches are still filling.
var errNotReady = errors.New("not yet ready to handle request: the pod and node caches have not synced")

// getPod reads a pod from the cache, and from the store when the cache does not have it yet. As
// upstream, a missing pod answers NotFound (the request fails either way); any other failure is
// a 403.
func (p *Plugin) getPod(ctx context.Context, a admission.Attributes, namespace, name string) (*corev1.Pod, error) {
	if !p.WaitForReady() {
		return nil, admission.NewForbidden(a, errNotReady)
	}
	pod, err := p.pods.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		pod, err = p.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil, err
	}
	if err != nil {
		return nil, admission.NewForbidden(a, fmt.Errorf("looking up pod %s/%s: %w", namespace, name, err))
	}
	return pod, nil
}

// getNode reads the requesting node's Node as getPod reads pods.
func (p *Plugin) getNode(ctx context.Context, a admission.Attributes, name string) (*corev1.Node, error) {
	if !p.WaitForReady() {
		return nil, admission.NewForbidden(a, errNotReady)
	}
	node, err := p.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		node, err = p.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil, err
	}
	if err != nil {
		return nil, admission.NewForbidden(a, fmt.Errorf("looking up node %s: %w", name, err))
	}
	return node, nil
}

// targetName is the name of the object a request acts on. A create names it in the object (the
// attributes carry no name under generateName), and each object of a deletecollection arrives with
// an empty name and the stored object as the old object.
func targetName(a admission.Attributes) string {
	if name := a.GetName(); name != "" {
		return name
	}
	obj := a.GetOldObject()
	if a.GetOperation() == admission.Create {
		obj = a.GetObject()
	}
	if obj == nil {
		return ""
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetName()
}
