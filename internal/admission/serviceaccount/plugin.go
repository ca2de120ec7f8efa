// Package serviceaccount is the ServiceAccount admission plugin: every pod runs as a service
// account that exists in its namespace (default: "default"), and unless the pod or its account
// opts out, its containers get the account's API credentials in a projected token volume.
package serviceaccount

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
)

// PluginName names the plugin in --enable-admission-plugins.
const PluginName = "ServiceAccount"

const (
	// DefaultServiceAccountName is the account of a pod that names none.
	DefaultServiceAccountName = "default"
	// EnforceMountableSecretsAnnotation, set to true on a service account, limits its pods to the
	// secrets the account lists in secrets and imagePullSecrets.
	EnforceMountableSecretsAnnotation = "kubernetes.io/enforce-mountable-secrets"
	// defaultAccountLookups is how often a missing "default" account is looked for before a pod is
	// refused: the controller that creates it races the first pods of a new namespace.
	defaultAccountLookups = 10
)

// Register adds the plugin to plugins.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) {
		return New(), nil
	})
}

// Plugin sets and checks the service account of pods being created, and checks the ephemeral
// containers added to running pods.
type Plugin struct {
	*admission.Handler
	accounts corev1listers.ServiceAccountLister
	client   kubernetes.Interface
	// retryInterval is the wait between lookups of a missing default account.
	retryInterval func() time.Duration
}

var (
	_ admission.MutationInterface                  = (*Plugin)(nil)
	_ admission.ValidationInterface                = (*Plugin)(nil)
	_ admission.InitializationValidator            = (*Plugin)(nil)
	_ initializer.WantsExternalKubeInformerFactory = (*Plugin)(nil)
	_ initializer.WantsExternalKubeClientSet       = (*Plugin)(nil)
)

// New returns a plugin that still needs its informer factory and client.
func New() *Plugin {
	return &Plugin{
		Handler: admission.NewHandler(admission.Create, admission.Update),
		// Spread out so that the pods of a namespace waiting for its default account do not
		// ask the server in lockstep.
		retryInterval: func() time.Duration { return 100*time.Millisecond + rand.N(100*time.Millisecond) },
	}
}

// SetExternalKubeInformerFactory takes the service account lister. The plugin does not wait for
// the cache to sync: an account the cache misses is read from the server.
func (p *Plugin) SetExternalKubeInformerFactory(f informers.SharedInformerFactory) {
	p.accounts = f.Core().V1().ServiceAccounts().Lister()
}

// SetExternalKubeClientSet takes the client that reads accounts the cache does not hold yet.
func (p *Plugin) SetExternalKubeClientSet(c kubernetes.Interface) { p.client = c }

// ValidateInitialization fails when the lister or the client was never given.
func (p *Plugin) ValidateInitialization() error {
	if p.accounts == nil || p.client == nil {
		return fmt.Errorf("%s requires a service account lister and a client", PluginName)
	}
	return nil
}

// Admit gives a pod being created its default account, the account's token volume and, when the
// pod names none, the account's image pull secrets; then refuses it as Validate would, so that a
// pod the plugin will refuse is refused before it is validated.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pod := podOf(a)
	if pod == nil {
		return nil
	}
	// A mirror pod is never changed: its node would find it differs from the static pod and
	// replace it. It is refused now rather than after the other mutating plugins, as upstream.
	if isMirror(pod) {
		if a.GetOperation() == admission.Create && a.GetSubresource() == "" {
			return forbidMirrorReferences(a, pod)
		}
		return nil
	}
	if a.GetOperation() == admission.Update && a.GetSubresource() == "ephemeralcontainers" {
		if old, ok := a.GetOldObject().(*corev1.Pod); ok {
			mountTokenInNewEphemeral(pod, old)
		}
		return nil
	}
	if a.GetOperation() != admission.Create || a.GetSubresource() != "" {
		return nil
	}
	// Decoding has already made serviceAccountName the account the pod names through either
	// field; the deprecated field mirrors it, as conversion would for an old client.
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultServiceAccountName
		pod.Spec.DeprecatedServiceAccount = DefaultServiceAccountName
	}
	sa, err := p.account(ctx, a, pod)
	if err != nil {
		return err
	}
	if automount(pod, sa) {
		mountToken(pod)
	}
	if len(pod.Spec.ImagePullSecrets) == 0 {
		pod.Spec.ImagePullSecrets = slices.Clone(sa.ImagePullSecrets)
	}
	return forbidUnlistedSecrets(a, pod, sa)
}

// Validate checks, after every mutating plugin, that a pod being created or given ephemeral
// containers runs as an account that exists, and only uses secrets the account allows; and that a
// mirror pod being created references no account, secret or credential projection.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pod := podOf(a)
	if pod == nil {
		return nil
	}
	create := a.GetOperation() == admission.Create && a.GetSubresource() == ""
	debug := a.GetOperation() == admission.Update && a.GetSubresource() == "ephemeralcontainers"
	if !create && !debug {
		return nil
	}
	// Debug containers of a mirror pod go on to the account check below, which refuses them: a
	// mirror pod has no account.
	if create && isMirror(pod) {
		return forbidMirrorReferences(a, pod)
	}
	sa, err := p.account(ctx, a, pod)
	if err != nil {
		return err
	}
	return forbidUnlistedSecrets(a, pod, sa)
}

// podOf returns the pod a request writes, or nil when the plugin has no business with it: another
// resource or subresource.
func podOf(a admission.Attributes) *corev1.Pod {
	if a.GetResource().GroupResource() != corev1.Resource("pods") {
		return nil
	}
	if s := a.GetSubresource(); s != "" && s != "ephemeralcontainers" {
		return nil
	}
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return nil
	}
	return pod
}

// account returns the pod's service account, or the 403 that refuses the pod without one.
func (p *Plugin) account(ctx context.Context, a admission.Attributes, pod *corev1.Pod) (*corev1.ServiceAccount, error) {
	ns, name := a.GetNamespace(), pod.Spec.ServiceAccountName
	if name == "" {
		return nil, admission.NewForbidden(a, fmt.Errorf("no service account specified for pod %s/%s", ns, pod.Name))
	}
	sa, err := p.lookup(ctx, ns, name)
	if err != nil {
		return nil, admission.NewForbidden(a, fmt.Errorf("error looking up service account %s/%s: %w", ns, name, err))
	}
	return sa, nil
}

// lookup reads an account from the cache and, when the cache misses it, from the server: the
// cache lags the store, and an account created a moment ago must not refuse its pods.
func (p *Plugin) lookup(ctx context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	sa, err := p.accounts.ServiceAccounts(ns).Get(name)
	if !apierrors.IsNotFound(err) {
		return sa, err
	}
	lookups := 1
	if name == DefaultServiceAccountName {
		lookups = defaultAccountLookups
	}
	interval := p.retryInterval()
	for i := range lookups {
		if i > 0 {
			t := time.NewTimer(interval)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
		}
		sa, err := p.client.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return sa, err
		}
	}
	// The server's NotFound names the resource in the plural; refusals name the account alike
	// whether the cache or the server missed it.
	return nil, apierrors.NewNotFound(corev1.Resource("serviceaccount"), name)
}

// automount reports whether the pod gets a token volume: the pod's choice, else its account's,
// else yes.
func automount(pod *corev1.Pod, sa *corev1.ServiceAccount) bool {
	if v := pod.Spec.AutomountServiceAccountToken; v != nil {
		return *v
	}
	if v := sa.AutomountServiceAccountToken; v != nil {
		return *v
	}
	return true
}

// enforcesMountableSecrets reports whether the account limits its pods to the secrets it lists.
func enforcesMountableSecrets(sa *corev1.ServiceAccount) bool {
	enforce, _ := strconv.ParseBool(sa.Annotations[EnforceMountableSecretsAnnotation])
	return enforce
}
