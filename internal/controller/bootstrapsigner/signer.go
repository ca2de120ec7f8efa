// Package bootstrapsigner keeps kube-public/cluster-info signed: one detached JWS of its
// kubeconfig (jws-kubeconfig-<token-id>) per bootstrap token whose usage-bootstrap-signing is
// "true" and that has not expired, re-signed when the kubeconfig changes and removed when the
// token goes. It can also publish the kubeconfig itself, so that the server, not an installer,
// tells joining nodes where it is: it creates the ConfigMap when it is missing and updates a
// kubeconfig it wrote itself when the server's address or CA changed, but leaves alone one that
// someone else wrote (an administrator naming a load balancer, kubeadm), as upstream does.
package bootstrapsigner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/cluster-bootstrap/token/jws"
	bootstrapsecret "k8s.io/cluster-bootstrap/util/secrets"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/idplane/idplane/internal/clusterinfo"
	"github.com/idplane/idplane/internal/controller/keyworker"
)

// key is the queue's only item: every change leads to one look at the one ConfigMap.
const key = clusterinfo.Namespace + "/" + clusterinfo.Name

// PublishedAnnotation holds the SHA-256 (hex) of the kubeconfig the signer last published: a
// kubeconfig with another hash was written by someone else, and is theirs.
const PublishedAnnotation = "idplane.io/published-kubeconfig-sha256"

// Config says what the signer publishes and how it tells the time.
type Config struct {
	// Kubeconfig, when set, is published as cluster-info's kubeconfig: the signer creates the
	// ConfigMap, writes it where the kubeconfig is missing or is one the signer wrote before, and
	// signs whatever kubeconfig is there. Empty, the signer signs whatever kubeconfig the
	// ConfigMap holds and creates nothing, as kube-controller-manager's.
	Kubeconfig []byte
	// Clock decides expiry and schedules the look at a token's expiration.
	Clock clock.WithTicker
}

// Signer keeps the signatures of cluster-info current.
type Signer struct {
	client     kubernetes.Interface
	configMaps corelisters.ConfigMapNamespaceLister
	secrets    corelisters.SecretNamespaceLister
	synced     []cache.InformerSynced
	kubeconfig string
	clock      clock.PassiveClock
	queue      workqueue.TypedRateLimitingInterface[string]
}

// New returns the signer over the shared ConfigMap and Secret informers.
func New(client kubernetes.Interface, configMaps coreinformers.ConfigMapInformer, secrets coreinformers.SecretInformer, c Config) (*Signer, error) {
	s := &Signer{
		client:     client,
		configMaps: configMaps.Lister().ConfigMaps(clusterinfo.Namespace),
		secrets:    secrets.Lister().Secrets(metav1.NamespaceSystem),
		synced:     []cache.InformerSynced{configMaps.Informer().HasSynced, secrets.Informer().HasSynced},
		kubeconfig: string(c.Kubeconfig),
		clock:      c.Clock,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 30*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "bootstrapsigner", Clock: c.Clock}),
	}
	_, err := configMaps.Informer().AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			cm, ok := tombstoned(obj).(*corev1.ConfigMap)
			return ok && cm.Namespace == clusterinfo.Namespace && cm.Name == clusterinfo.Name
		},
		Handler: s.handler(),
	})
	if err != nil {
		return nil, fmt.Errorf("watching configmaps: %w", err)
	}
	_, err = secrets.Informer().AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			secret, ok := tombstoned(obj).(*corev1.Secret)
			return ok && secret.Namespace == metav1.NamespaceSystem && secret.Type == bootstrapapi.SecretTypeBootstrapToken
		},
		Handler: s.handler(),
	})
	if err != nil {
		return nil, fmt.Errorf("watching secrets: %w", err)
	}
	// The first look happens even with no event: with nothing to sign, a published kubeconfig
	// must still be created.
	s.queue.Add(key)
	return s, nil
}

func (s *Signer) handler() cache.ResourceEventHandler {
	enqueue := func(any) { s.queue.Add(key) }
	return cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue}
}

func tombstoned(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

// Run signs until ctx ends. One worker is all there is work for: there is one ConfigMap.
func (s *Signer) Run(ctx context.Context) {
	synced := func() bool {
		for _, f := range s.synced {
			if !f() {
				return false
			}
		}
		return true
	}
	keyworker.Run(ctx, s.queue, synced, 1, "Signing configmap "+key, s.sync)
}

// signingToken is a token the signer signs with.
type signingToken struct {
	id, secret string
	// expires in this much time; 0 means never.
	expires time.Duration
}

// signingTokens are the bootstrap tokens allowed to sign now, as upstream chooses them: named
// bootstrap-token-<its id>, with a secret, unexpired, and usage-bootstrap-signing "true". As
// upstream, a secret need not have the form of an authenticating one (upstream's own e2e tests
// sign with "tokenSecret"): only a holder of it can check the signature, and a joining agent
// refuses a malformed token before it reads anything.
func (s *Signer) signingTokens() ([]signingToken, error) {
	list, err := s.secrets.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing bootstrap token secrets: %w", err)
	}
	now := s.clock.Now()
	var out []signingToken
	for _, secret := range list {
		if secret.Type != bootstrapapi.SecretTypeBootstrapToken || secret.DeletionTimestamp != nil {
			continue
		}
		id := bootstrapsecret.GetData(secret, bootstrapapi.BootstrapTokenIDKey)
		sec := bootstrapsecret.GetData(secret, bootstrapapi.BootstrapTokenSecretKey)
		if nameID, ok := bootstrapsecret.ParseName(secret.Name); !ok || id == "" || nameID != id || sec == "" {
			continue
		}
		if bootstrapsecret.GetData(secret, bootstrapapi.BootstrapTokenUsageSigningKey) != "true" {
			continue
		}
		remaining, expired := bootstrapsecret.GetExpiration(secret, now)
		if expired {
			continue
		}
		out = append(out, signingToken{id: id, secret: sec, expires: remaining})
	}
	return out, nil
}

func (s *Signer) sync(ctx context.Context, _ string) error {
	cm, err := s.configMaps.Get(clusterinfo.Name)
	exists := err == nil
	switch {
	case apierrors.IsNotFound(err) && s.kubeconfig == "":
		return nil
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: clusterinfo.Namespace, Name: clusterinfo.Name}}
	case err != nil:
		return fmt.Errorf("reading configmap %s from the cache: %w", key, err)
	}
	tokens, err := s.signingTokens()
	if err != nil {
		return err
	}
	annotations, write := s.publish(cm)
	want, err := s.desired(cm.Data, write, tokens)
	if err != nil {
		return err
	}
	// Look again when the first signing token expires, whether or not the cleaner deletes it.
	var next time.Duration
	for _, t := range tokens {
		if t.expires > 0 && (next == 0 || t.expires < next) {
			next = t.expires
		}
	}
	if next > 0 {
		s.queue.AddAfter(key, next)
	}
	if exists && maps.Equal(cm.Data, want) && maps.Equal(cm.Annotations, annotations) {
		return nil
	}
	cm = cm.DeepCopy()
	cm.Data, cm.Annotations = want, annotations
	if !exists {
		_, err = s.client.CoreV1().ConfigMaps(clusterinfo.Namespace).Create(ctx, cm, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// The cache is behind; the ConfigMap's add event brings it back here.
			return keyworker.Wait(fmt.Errorf("creating configmap %s: %w", key, err))
		}
	} else {
		_, err = s.client.CoreV1().ConfigMaps(clusterinfo.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return keyworker.Wait(fmt.Errorf("updating configmap %s: %w", key, err))
		}
	}
	if err != nil {
		return fmt.Errorf("writing configmap %s: %w", key, err)
	}
	klog.FromContext(ctx).V(2).Info("Signed cluster-info", "configmap", key, "tokens", len(tokens))
	return nil
}

// publish tells whether the signer is to write its kubeconfig (the ConfigMap has none, or has
// the one the signer published last) and returns cm's annotations, with PublishedAnnotation set
// when it is.
func (s *Signer) publish(cm *corev1.ConfigMap) (map[string]string, bool) {
	if s.kubeconfig == "" {
		return cm.Annotations, false
	}
	current, ok := cm.Data[bootstrapapi.KubeConfigKey]
	if ok && current != s.kubeconfig && sha256Hex(current) != cm.Annotations[PublishedAnnotation] {
		return cm.Annotations, false
	}
	out := maps.Clone(cm.Annotations)
	if out == nil {
		out = map[string]string{}
	}
	out[PublishedAnnotation] = sha256Hex(s.kubeconfig)
	return out, true
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// desired is data with the signer's kubeconfig when it is to write it, and exactly the
// signatures of tokens; other keys stay as they are.
func (s *Signer) desired(data map[string]string, writeKubeconfig bool, tokens []signingToken) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range data {
		if !strings.HasPrefix(k, bootstrapapi.JWSSignatureKeyPrefix) {
			out[k] = v
		}
	}
	if writeKubeconfig {
		out[bootstrapapi.KubeConfigKey] = s.kubeconfig
	}
	content, ok := out[bootstrapapi.KubeConfigKey]
	if !ok {
		// Nothing to sign: a cluster-info without a kubeconfig carries no signatures either.
		return out, nil
	}
	for _, t := range tokens {
		sig, err := jws.ComputeDetachedSignature(content, t.id, t.secret)
		if err != nil {
			return nil, fmt.Errorf("signing %s with token %q: %w", key, t.id, err)
		}
		out[clusterinfo.SignatureKey(t.id)] = sig
	}
	return out, nil
}
