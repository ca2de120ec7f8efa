// Package serviceaccount serves serviceaccounts/token: TokenRequests bound to the service account
// and, when asked, to a pod, secret or node. Service accounts themselves are stored as the
// registry's table describes them (internal/registry/resources).
package serviceaccount

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/audit"
	apiserviceaccount "k8s.io/apiserver/pkg/authentication/serviceaccount"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/utils/ptr"

	"github.com/idplane/idplane/internal/serviceaccount"
	"github.com/idplane/idplane/internal/validation"
)

// defaultTokenLifetimeSec is the lifetime of a token whose request names none.
const defaultTokenLifetimeSec = 3600

// TokenConfig is how TokenRequests are answered.
type TokenConfig struct {
	Issuer *serviceaccount.Issuer
	// APIAudiences are the audiences of a token whose request names none.
	APIAudiences []string
	// MaxExpiration, when positive, shortens longer requests to it.
	MaxExpiration time.Duration
	// ExtendExpiration issues serviceaccount.InjectedTokenSeconds requests bound to pods for
	// serviceaccount.ExtendedTokenLifetime, whatever the maximum, as upstream.
	ExtendExpiration bool
	// ExtendedLifetime, when positive, replaces serviceaccount.ExtendedTokenLifetime: an external
	// signer that signs nothing longer than its maximum gets min(a year, that maximum).
	ExtendedLifetime time.Duration
}

// Getters are the storage the bound objects of a token are read from.
type Getters struct {
	ServiceAccounts, Pods, Secrets, Nodes rest.Getter
}

// liveReadTimeout bounds a shared read of a service account: the default request timeout, so that
// a read shared by several requests gives up no sooner than each one's own read would have.
const liveReadTimeout = time.Minute

// NewTokenREST returns the serviceaccounts/token subresource.
func NewTokenREST(c TokenConfig, g Getters) rest.Storage {
	r := &tokenREST{config: c, getters: g}
	r.accounts = newSharedReads(r.readServiceAccount, liveReadTimeout)
	return r
}

// tokenREST issues tokens (serviceaccounts/token); nothing is stored.
type tokenREST struct {
	config  TokenConfig
	getters Getters
	// accounts reads service accounts live (a token is never issued for an account the store
	// no longer holds, or holds under another UID), one read shared by concurrent requests.
	accounts *sharedReads[objectKey, *corev1.ServiceAccount]
}

type objectKey struct{ namespace, name string }

func (r *tokenREST) readServiceAccount(ctx context.Context, k objectKey) (*corev1.ServiceAccount, error) {
	obj, err := r.getters.ServiceAccounts.Get(genericapirequest.WithNamespace(ctx, k.namespace), k.name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.ServiceAccount), nil
}

var (
	_ rest.NamedCreater                   = &tokenREST{}
	_ rest.GroupVersionKindProvider       = &tokenREST{}
	_ rest.SingularNameProvider           = &tokenREST{}
	_ rest.SubresourceObjectMetaPreserver = &tokenREST{}
)

var tokenRequestKind = authenticationv1.SchemeGroupVersion.WithKind("TokenRequest")

// tokenRequestConflict is what a conflict about a TokenRequest names, as upstream.
var tokenRequestConflict = schema.GroupResource{Group: tokenRequestKind.Group, Resource: tokenRequestKind.Kind}

// PreserveRequestObjectMetaSystemFieldsOnSubresourceCreate keeps the request's metadata.uid for
// Create: it names the service account the caller means, and a token is refused rather than
// issued for a successor of that account. Create clears the other system fields itself.
func (r *tokenREST) PreserveRequestObjectMetaSystemFieldsOnSubresourceCreate() bool { return true }

func (r *tokenREST) New() runtime.Object     { return &authenticationv1.TokenRequest{} }
func (r *tokenREST) Destroy()                {}
func (r *tokenREST) NamespaceScoped() bool   { return true }
func (r *tokenREST) GetSingularName() string { return "token" }

// GroupVersionKind tells discovery that serviceaccounts/token takes a TokenRequest, not a ServiceAccount.
func (r *tokenREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return tokenRequestKind
}

func (r *tokenREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (_ runtime.Object, err error) {
	defer func() { serviceaccount.CountTokenRequest(statusCode(err)) }()
	req, ok := obj.(*authenticationv1.TokenRequest)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a TokenRequest: %T", obj))
	}
	namespace, _ := genericapirequest.NamespaceFrom(ctx)
	if req.Name != "" && req.Name != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("TokenRequest name %q does not match service account %q", req.Name, name))
	}
	req.Name, req.Namespace = name, namespace
	uid := req.UID
	rest.WipeObjectMetaSystemFields(req)
	if len(req.Spec.Audiences) == 0 {
		req.Spec.Audiences = slices.Clone(r.config.APIAudiences)
	}
	if req.Spec.ExpirationSeconds == nil {
		req.Spec.ExpirationSeconds = ptr.To[int64](defaultTokenLifetimeSec)
	}
	if errs := validation.ValidateTokenRequest(req); len(errs) > 0 {
		return nil, apierrors.NewInvalid(tokenRequestKind.GroupKind(), name, errs)
	}
	sa, err := r.accounts.get(ctx, objectKey{namespace, name})
	if err != nil {
		return nil, err
	}
	if uid != "" && uid != sa.UID {
		return nil, apierrors.NewConflict(tokenRequestConflict, name,
			fmt.Errorf("the UID in the token request (%s) does not match the UID of the service account (%s)", uid, sa.UID))
	}
	req.UID = sa.UID
	if createValidation != nil {
		if err := createValidation(ctx, req.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	binding, err := r.bind(ctx, sa, req.Spec.BoundObjectRef)
	if err != nil {
		return nil, err
	}
	if max := int64(r.config.MaxExpiration / time.Second); max > 0 && *req.Spec.ExpirationSeconds > max {
		warning.AddWarning(ctx, "", fmt.Sprintf("requested expiration of %d seconds shortened to %d seconds", *req.Spec.ExpirationSeconds, max))
		req.Spec.ExpirationSeconds = ptr.To(max)
	}
	issue := serviceaccount.TokenRequest{
		Binding:   binding,
		Audiences: req.Spec.Audiences,
		Lifetime:  time.Duration(*req.Spec.ExpirationSeconds) * time.Second,
	}
	if r.extends(req, binding) {
		issue.WarnAfter = issue.Lifetime
		issue.Lifetime = serviceaccount.ExtendedTokenLifetime
		if r.config.ExtendedLifetime > 0 {
			issue.Lifetime = r.config.ExtendedLifetime
		}
	}
	tok, err := r.config.Issuer.Issue(ctx, issue)
	if err != nil {
		// A signer still working when the request's time ran out is a timeout, as the library's
		// filter says at the deadline itself (the handler's context ends a little before it).
		if timedOut(ctx, time.Now()) {
			return nil, apierrors.NewTimeoutError(fmt.Sprintf("request did not complete within the allotted timeout: %v", err), 0)
		}
		return nil, apierrors.NewInternalError(err)
	}
	audit.AddAuditAnnotation(ctx, apiserviceaccount.IssuedCredentialIDAuditAnnotationKey, "JTI="+tok.ID)
	out := req.DeepCopy()
	// As upstream, the answer says when it was made: here, when the token was issued.
	out.CreationTimestamp = metav1.NewTime(tok.Issued)
	out.Status = authenticationv1.TokenRequestStatus{Token: tok.Raw, ExpirationTimestamp: metav1.NewTime(tok.Expires)}
	return out, nil
}

// timedOut says whether the request's time is up at now: its context ended, or its deadline has
// passed while the context's timer has yet to fire. A gRPC signer cancels its side of the call at
// the deadline, and its answer (DeadlineExceeded) can reach the handler before that timer does.
func timedOut(ctx context.Context, now time.Time) bool {
	if ctx.Err() != nil {
		return true
	}
	deadline, ok := ctx.Deadline()
	return ok && !now.Before(deadline)
}

// extends says whether the request is one the ServiceAccount admission plugin makes for a pod's
// API access: of exactly the injected lifetime, bound to a pod, for the API server itself.
func (r *tokenREST) extends(req *authenticationv1.TokenRequest, b serviceaccount.Binding) bool {
	return r.config.ExtendExpiration && b.Pod != nil &&
		*req.Spec.ExpirationSeconds == serviceaccount.InjectedTokenSeconds &&
		slices.Equal(req.Spec.Audiences, r.config.APIAudiences)
}

// bind looks up the object the token is to be bound to; its UID, when the request names one, must
// be the live object's, so that a token is never bound to a successor of the object meant.
func (r *tokenREST) bind(ctx context.Context, sa *corev1.ServiceAccount, ref *authenticationv1.BoundObjectReference) (serviceaccount.Binding, error) {
	b := serviceaccount.Binding{ServiceAccount: sa}
	if ref == nil {
		return b, nil
	}
	switch ref.Kind {
	case "Pod":
		pod, err := get[*corev1.Pod](ctx, r.getters.Pods, ref)
		if err != nil {
			return b, err
		}
		if pod.Spec.ServiceAccountName != sa.Name {
			return b, apierrors.NewBadRequest(fmt.Sprintf("cannot bind a token of service account %q to pod %q, which runs as service account %q", sa.Name, pod.Name, pod.Spec.ServiceAccountName))
		}
		b.Pod = pod
		if pod.Spec.NodeName != "" {
			if b.Node, err = r.podNode(ctx, pod.Spec.NodeName); err != nil {
				return b, err
			}
		}
	case "Secret":
		secret, err := get[*corev1.Secret](ctx, r.getters.Secrets, ref)
		if err != nil {
			return b, err
		}
		b.Secret = secret
	case "Node":
		node, err := get[*corev1.Node](genericapirequest.WithNamespace(ctx, ""), r.getters.Nodes, ref)
		if err != nil {
			return b, err
		}
		b.Node = node
	}
	ref.UID = boundUID(b)
	return b, nil
}

// podNode is the node a pod-bound token names beside the pod. The name comes from the pod, read
// live; the node's UID only describes where the pod runs, so it is read from the watch cache, as
// upstream does, and live only when the cache cannot answer. A node not (yet) registered is named
// without a UID rather than failing the request.
func (r *tokenREST) podNode(ctx context.Context, name string) (*corev1.Node, error) {
	ctx = genericapirequest.WithNamespace(ctx, "")
	obj, err := r.getters.Nodes.Get(ctx, name, &metav1.GetOptions{ResourceVersion: "0"})
	if err != nil {
		obj, err = r.getters.Nodes.Get(ctx, name, &metav1.GetOptions{})
	}
	switch {
	case apierrors.IsNotFound(err):
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, nil
	case err != nil:
		return nil, apierrors.NewInternalError(fmt.Errorf("reading node %q of the pod: %w", name, err))
	}
	return obj.(*corev1.Node), nil
}

func boundUID(b serviceaccount.Binding) types.UID {
	switch {
	case b.Pod != nil:
		return b.Pod.UID
	case b.Secret != nil:
		return b.Secret.UID
	}
	return b.Node.UID
}

func get[T metav1.Object](ctx context.Context, g rest.Getter, ref *authenticationv1.BoundObjectReference) (T, error) {
	var zero T
	obj, err := g.Get(ctx, ref.Name, &metav1.GetOptions{})
	if err != nil {
		return zero, err
	}
	o := obj.(T)
	if ref.UID != "" && ref.UID != o.GetUID() {
		return zero, apierrors.NewConflict(corev1.Resource(ref.Kind), ref.Name,
			fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record (%s): the object might have been deleted and then recreated", ref.UID, o.GetUID()))
	}
	return o, nil
}

func statusCode(err error) string {
	if err == nil {
		return "201"
	}
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		return strconv.Itoa(int(s.Status().Code))
	}
	return "500"
}
