// Package bootstraptoken authenticates bootstrap tokens: bearer tokens "<id>.<secret>" backed by
// a Secret "bootstrap-token-<id>" of type bootstrap.kubernetes.io/token in kube-system, which a
// new node uses to ask for its first client certificate. internal/jointoken issues them.
package bootstraptoken

import (
	"context"
	"crypto/subtle"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	corelisters "k8s.io/client-go/listers/core/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	bootstrapsecret "k8s.io/cluster-bootstrap/util/secrets"
	"k8s.io/cluster-bootstrap/util/tokens"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Authenticator answers bootstrap tokens from the kube-system secrets an informer holds. It reads
// no store on a miss: any client may present a token of bootstrap form, and a live read per guess
// would let unauthenticated clients drive the store.
type Authenticator struct {
	secrets corelisters.SecretNamespaceLister
	clock   clock.PassiveClock
}

// New returns the authenticator over the lister of kube-system secrets.
func New(secrets corelisters.SecretNamespaceLister, clk clock.PassiveClock) *Authenticator {
	return &Authenticator{secrets: secrets, clock: clk}
}

var _ authenticator.Token = (*Authenticator)(nil)

// AuthenticateToken accepts a token of bootstrap form whose secret matches, is meant for
// authentication and has not expired. As upstream, every refusal is "not authenticated" without
// an error, so other authenticators may still answer; a token not of bootstrap form is not this
// authenticator's to judge.
func (a *Authenticator) AuthenticateToken(_ context.Context, token string) (*authenticator.Response, bool, error) {
	id, secretPart, err := tokens.ParseToken(token)
	if err != nil {
		return nil, false, nil
	}
	name := bootstraputil.BootstrapTokenSecretName(id)
	secret, err := a.secrets.Get(name)
	if apierrors.IsNotFound(err) {
		klog.V(3).InfoS("No secret for bootstrap token", "secret", name)
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if why := a.refusal(secret, id, secretPart); why != "" {
		klog.V(3).InfoS("Bootstrap token refused", "secret", klog.KObj(secret), "reason", why)
		return nil, false, nil
	}
	groups, err := bootstrapsecret.GetGroups(secret)
	if err != nil {
		klog.V(3).InfoS("Bootstrap token refused", "secret", klog.KObj(secret), "reason", err)
		return nil, false, nil
	}
	// Beyond upstream, the user carries the UID of the secret that vouched for it: a CSR keeps its
	// requester's extra, so the approver can tell a CSR made with this token secret from one made
	// by another authenticator's user of the same name, and from one of a token since replaced.
	return &authenticator.Response{User: &user.DefaultInfo{
		Name: bootstrapapi.BootstrapUserPrefix + id, Groups: groups,
		Extra: map[string][]string{SecretUIDExtra: {string(secret.UID)}},
	}}, true, nil
}

// SecretUIDExtra is the user extra that holds the UID of the bootstrap token's secret.
const SecretUIDExtra = "idplane.io/bootstrap-token-secret-uid"

// refusal says why the secret does not vouch for the token, or "" when it does.
func (a *Authenticator) refusal(secret *corev1.Secret, id, secretPart string) string {
	switch {
	case secret.DeletionTimestamp != nil:
		return "the secret is being deleted"
	case secret.Type != bootstrapapi.SecretTypeBootstrapToken || secret.Data == nil:
		return "the secret is not of type " + string(bootstrapapi.SecretTypeBootstrapToken)
	// Compared in constant time: the secret part is the credential.
	case subtle.ConstantTimeCompare([]byte(bootstrapsecret.GetData(secret, bootstrapapi.BootstrapTokenSecretKey)), []byte(secretPart)) != 1:
		return "the token secret does not match " + bootstrapapi.BootstrapTokenSecretKey
	case bootstrapsecret.GetData(secret, bootstrapapi.BootstrapTokenIDKey) != id:
		return "the token id does not match " + bootstrapapi.BootstrapTokenIDKey
	case bootstrapsecret.HasExpired(secret, a.clock.Now()):
		return "the token has expired (or its expiration is not RFC 3339)"
	case bootstrapsecret.GetData(secret, bootstrapapi.BootstrapTokenUsageAuthentication) != "true":
		return "the secret is not marked " + bootstrapapi.BootstrapTokenUsageAuthentication + "=true"
	}
	return ""
}
