package apiserver

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
)

// The server's parts read two kinds of secret, never the others: service-account token secrets
// (legacy tokens, the token secrets controller, the token cache) and bootstrap token secrets in
// kube-system (the bootstrap authenticator, signer, cleaner and the CSR approver). Each kind has
// an informer selected by the secret's type, which cannot change after creation, so an
// informer never holds the cluster's other secrets (most of them, and often the largest). A
// token naming a secret of another type (bound to it) is checked with a live GET, as the token
// getter does for any secret its informer does not hold, and never cached (no event would end
// its entry). The node-scoped bulk watch follows every secret with a feed that keeps none, and
// reads the ones it sends from the watch cache.

// narrowSecretInformer makes f's Secret informer, the one Core().V1().Secrets() returns to every
// consumer, hold service-account token secrets only. It must run before anything asks f for
// secrets.
func narrowSecretInformer(f informers.SharedInformerFactory) {
	f.InformerFor(&corev1.Secret{}, func(client kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return newSecretInformerOfType(client, metav1.NamespaceAll, corev1.SecretTypeServiceAccountToken, resync)
	})
}

// bootstrapTokenSecretsKey is the key of the bootstrap token secrets informer in a factory: a
// type of its own, so the factory holds that informer next to its Secret informer, starts and
// stops it with the others, and returns the same one to every caller.
type bootstrapTokenSecretsKey struct{ corev1.Secret }

// bootstrapTokenSecrets is f's informer of the bootstrap token secrets in kube-system.
func bootstrapTokenSecrets(f informers.SharedInformerFactory) coreinformers.SecretInformer {
	i := f.InformerFor(&bootstrapTokenSecretsKey{}, func(client kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return newSecretInformerOfType(client, metav1.NamespaceSystem, bootstrapapi.SecretTypeBootstrapToken, resync)
	})
	return typedInformer[corelisters.SecretLister]{i, corelisters.NewSecretLister(i.GetIndexer())}
}

func newSecretInformerOfType(client kubernetes.Interface, namespace string, typ corev1.SecretType, resync time.Duration) cache.SharedIndexInformer {
	selector := fields.OneTermEqualSelector("type", string(typ)).String()
	return coreinformers.NewFilteredSecretInformer(client, namespace, resync,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		func(o *metav1.ListOptions) { o.FieldSelector = selector })
}
