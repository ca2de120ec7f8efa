package serviceaccount

import (
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// LegacyIssuer is the issuer of tokens kept in kubernetes.io/service-account-token secrets.
const LegacyIssuer = "kubernetes/serviceaccount"

// InjectedTokenSeconds is the lifetime the ServiceAccount admission plugin asks for on a pod's
// behalf: an hour and seven seconds, an odd figure no client picks, so that TokenRequest can tell
// the plugin's tokens apart and issue them for ExtendedTokenLifetime with a warnafter claim at
// the hour. Clients written for the old never-expiring tokens then keep working while their use
// of tokens past the hour is counted as stale.
const (
	InjectedTokenSeconds  = 3607
	ExtendedTokenLifetime = 365 * 24 * time.Hour
)

// privateClaims are the "kubernetes.io" claim of a bound token: who the token speaks for and the
// objects whose life it is tied to.
type privateClaims struct {
	Kubernetes *kubernetesClaims `json:"kubernetes.io,omitempty"`
}

type kubernetesClaims struct {
	Namespace      string           `json:"namespace,omitempty"`
	ServiceAccount objectRef        `json:"serviceaccount"`
	Pod            *objectRef       `json:"pod,omitempty"`
	Secret         *objectRef       `json:"secret,omitempty"`
	Node           *objectRef       `json:"node,omitempty"`
	WarnAfter      *jwt.NumericDate `json:"warnafter,omitempty"`
}

type objectRef struct {
	Name string    `json:"name,omitempty"`
	UID  types.UID `json:"uid,omitempty"`
}

// legacyClaims are the flat claims of tokens kept in secrets, which predate bound tokens.
type legacyClaims struct {
	Namespace          string `json:"kubernetes.io/serviceaccount/namespace,omitempty"`
	SecretName         string `json:"kubernetes.io/serviceaccount/secret.name,omitempty"`
	ServiceAccountName string `json:"kubernetes.io/serviceaccount/service-account.name,omitempty"`
	ServiceAccountUID  string `json:"kubernetes.io/serviceaccount/service-account.uid,omitempty"`
}

// Binding names what a token speaks for and, optionally, the one object it is bound to: the token
// stops authenticating when that object goes. A pod-bound token also names the pod's node.
type Binding struct {
	ServiceAccount *corev1.ServiceAccount
	Pod            *corev1.Pod
	Secret         *corev1.Secret
	Node           *corev1.Node
}

func ref(name string, uid types.UID) *objectRef { return &objectRef{Name: name, UID: uid} }

func (b Binding) claims() *kubernetesClaims {
	c := &kubernetesClaims{
		Namespace:      b.ServiceAccount.Namespace,
		ServiceAccount: objectRef{Name: b.ServiceAccount.Name, UID: b.ServiceAccount.UID},
	}
	if b.Pod != nil {
		c.Pod = ref(b.Pod.Name, b.Pod.UID)
	}
	if b.Secret != nil {
		c.Secret = ref(b.Secret.Name, b.Secret.UID)
	}
	if b.Node != nil {
		c.Node = ref(b.Node.Name, b.Node.UID)
	}
	return c
}
