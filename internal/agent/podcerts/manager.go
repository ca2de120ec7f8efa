// Package podcerts gets the certificates of projected podCertificate volume sources: for each
// source of a pod on the node it makes a key of the requested type, asks the source's signer for
// a certificate with a PodCertificateRequest made as the node, waits for the signer's answer,
// checks the issued chain against the key, and asks again with a new key from the certificate's
// beginRefreshAt (plus jitter). Keys and chains are kept under the agent's state directory,
// owner-only, so a restarted agent asks for nothing it already holds. It writes no pod files;
// the agent puts the credentials into the volumes and re-syncs a pod at NextRefresh or when one
// of its requests changes.
package podcerts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/idplane/idplane/internal/agent/objects"
)

const (
	// maxJitter spreads the refreshes of certificates issued together, as the kubelet does; the
	// API keeps beginRefreshAt at least 10 minutes before notAfter, so it stays inside validity.
	maxJitter = 5 * time.Minute
	// abandonAfter is how long a request the agent made may be missing from its watch before it
	// is taken as deleted (by the cleaner, or by someone) and made again: until then a miss is
	// the watch lagging.
	abandonAfter = 10 * time.Minute
	// The wait after a failed create doubles from initialBackoff up to maxBackoff.
	initialBackoff = time.Second
	maxBackoff     = 2 * time.Minute
	// generateName prefixes the names of the requests, as the kubelet's.
	generateName = "req-"
)

// Config is what a Manager needs.
type Config struct {
	NodeName string
	// StateDir holds the keys and chains; it is created owner-only.
	StateDir string
	Client   kubernetes.Interface
	Clock    clock.PassiveClock
	// OnChange is told the namespace and name of the pod a request of the node's is for,
	// whenever one is added, changes or goes.
	OnChange func(namespace, podName string)
	// Jitter returns a duration in [0, max); nil draws one at random.
	Jitter func(max time.Duration) time.Duration
}

// Manager gets and keeps the certificates of the node's pods. It is safe for concurrent use.
type Manager struct {
	c        Config
	store    *store
	informer cache.SharedIndexInformer
	lister   certlisters.PodCertificateRequestLister

	mu   sync.Mutex // guards pods and uids
	pods map[types.UID]map[sourceKey]*entry
	// uids caches the UIDs of the node ("") and of service accounts ("namespace/name") that
	// requests name: each costs a read otherwise, for every request. A create that fails drops
	// the ones it used, so an object recreated under its name is read again.
	uids map[string]types.UID

	// The watch starts with the first source asked for, so a node with no pod certificates
	// neither lists requests nor needs the API; running is closed by Run with the context the
	// watch runs in.
	running  chan struct{}
	runCtx   context.Context
	watching sync.Once
}

// sourceKey names one podCertificate source of a pod.
type sourceKey struct {
	volume string
	index  int
}

// entry is the state of one source. Its lock is held through a request, so that two syncs of a
// pod make one request, not two; it is taken before Manager.mu, never while holding it.
type entry struct {
	sync.Mutex
	loaded bool
	rec    record
	// refused is the signer's (or the agent's) final answer; nothing is asked again for the pod.
	refused *RefusedError
	// After a failed create: when the next may be made, the wait that led there.
	retryAt time.Time
	backoff time.Duration
}

// New opens the state directory and returns a Manager; Run starts its watch.
func New(c Config) (*Manager, error) {
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Jitter == nil {
		c.Jitter = func(max time.Duration) time.Duration { return rand.N(max) }
	}
	st, err := openStore(c.StateDir)
	if err != nil {
		return nil, err
	}
	m := &Manager{c: c, store: st, pods: map[types.UID]map[sourceKey]*entry{}, uids: map[string]types.UID{}, running: make(chan struct{})}
	// A node may list and watch only the requests naming itself.
	m.informer = cache.NewSharedIndexInformer(
		objects.NodeListWatch(c.Client.CertificatesV1().PodCertificateRequests(metav1.NamespaceAll), c.NodeName),
		&certificatesv1.PodCertificateRequest{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	m.lister = certlisters.NewPodCertificateRequestLister(m.informer.GetIndexer())
	if c.OnChange != nil {
		tell := func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if r, ok := obj.(*certificatesv1.PodCertificateRequest); ok {
				c.OnChange(r.Namespace, r.Spec.PodName)
			}
		}
		_, err := m.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: tell, UpdateFunc: func(_, obj any) { tell(obj) }, DeleteFunc: tell,
		})
		if err != nil {
			st.close()
			return nil, fmt.Errorf("watching podcertificaterequests: %w", err)
		}
	}
	return m, nil
}

// Run lets the manager watch the node's requests (from the first source asked for) until ctx
// ends. Credentials waits for Run to have started.
func (m *Manager) Run(ctx context.Context) {
	m.runCtx = ctx
	close(m.running)
	<-ctx.Done()
}

// Close closes the state directory, once nothing calls the manager any more.
func (m *Manager) Close() error { return m.store.close() }

// watch starts the watch of the node's requests, once.
func (m *Manager) watch() {
	<-m.running
	m.watching.Do(func() { go m.informer.RunWithContext(m.runCtx) })
}

// HasSynced reports whether the watch has listed the node's requests.
func (m *Manager) HasSynced() bool { return m.informer.HasSynced() }

// RefusedError is a final answer for a source: the signer denied or failed its request, or the
// agent refused what came back or what the source asks. The pod's volume cannot be written.
type RefusedError struct {
	// Request is namespace/name of the request, empty when the agent refused before asking.
	Request string
	// Condition is Denied or Failed.
	Condition       string
	Reason, Message string
}

func (e *RefusedError) Error() string {
	if e.Request == "" {
		return fmt.Sprintf("%s: %s", e.Reason, e.Message)
	}
	verb := "was denied"
	if e.Condition == certificatesv1.PodCertificateRequestConditionTypeFailed {
		verb = "failed"
	}
	return fmt.Sprintf("PodCertificateRequest %s %s, reason=%q, message=%q", e.Request, verb, e.Reason, e.Message)
}

// IsRefused reports whether err is a final answer (waiting will not cure it).
func IsRefused(err error) bool {
	var r *RefusedError
	return errors.As(err, &r)
}

// Credentials returns the PKCS#8 PEM key and the PEM chain for source index of the projected
// volume volume of pod. Without a certificate yet it makes (or waits on) a request and returns
// an error for which IsRefused is false; a denial, a failure, or a chain the agent refuses is a
// *RefusedError. A certificate due for refresh is still returned, while a new one is requested,
// until it expires.
func (m *Manager) Credentials(ctx context.Context, pod *corev1.Pod, volume string, index int, src *corev1.PodCertificateProjection) (key, chain []byte, err error) {
	if pod == nil || src == nil {
		return nil, nil, errors.New("pod certificate: pod and source are required")
	}
	if pod.UID == "" || pod.Namespace == "" || pod.Name == "" || pod.Spec.ServiceAccountName == "" {
		return nil, nil, fmt.Errorf("pod certificate for pod %s/%s: the pod has no namespace, name, UID or service account", pod.Namespace, pod.Name)
	}
	if _, ok := keyTypes[src.KeyType]; !ok {
		return nil, nil, &RefusedError{Reason: "UnsupportedKeyType", Message: fmt.Sprintf("key type %q is not supported; supported types: %s", src.KeyType, supportedKeyTypes())}
	}
	m.watch()
	e := m.entry(pod.UID, sourceKey{volume, index})
	e.Lock()
	defer e.Unlock()
	fp := fingerprint(src)
	if !e.loaded {
		m.load(ctx, pod.UID, volume, index, e, fp)
	}
	if e.rec.Source != "" && e.rec.Source != fp {
		// Not what this source asks for (a pod's sources do not change; a UID reused would).
		e.rec, e.refused, e.retryAt, e.backoff = record{}, nil, time.Time{}, 0
	}
	if e.refused != nil {
		return nil, nil, e.refused
	}
	now := m.c.Clock.Now()
	if e.rec.PendingName != "" {
		if err := m.checkPending(ctx, pod, volume, index, e, now); err != nil {
			return nil, nil, err
		}
	}
	valid := e.rec.Chain != nil && now.Before(e.rec.NotAfter)
	if e.rec.PendingName == "" && (!valid || !now.Before(e.rec.RefreshAt)) && !now.Before(e.retryAt) {
		if err := m.request(ctx, pod, volume, index, src, e, fp); err != nil {
			e.failed(m.c.Clock.Now())
			if valid {
				klog.FromContext(ctx).Error(err, "Refreshing a pod certificate; the current one stays", "pod", klog.KObj(pod), "volume", volume, "source", index)
				return e.rec.Key, e.rec.Chain, nil
			}
			return nil, nil, fmt.Errorf("pod certificate for volume %q source %d: %w", volume, index, err)
		}
	}
	if valid {
		return e.rec.Key, e.rec.Chain, nil
	}
	if e.rec.PendingName != "" {
		return nil, nil, fmt.Errorf("PodCertificateRequest %s/%s for volume %q source %d is not issued yet", pod.Namespace, e.rec.PendingName, volume, index)
	}
	return nil, nil, fmt.Errorf("pod certificate for volume %q source %d: next request at %s", volume, index, e.retryAt.UTC().Format(time.RFC3339))
}

// load takes what an earlier run of the agent kept for the source, if it answers this source.
func (m *Manager) load(ctx context.Context, uid types.UID, volume string, index int, e *entry, fp string) {
	e.loaded = true
	r, err := m.store.load(uid, volume, index)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Ignoring kept pod certificate state", "podUID", uid, "volume", volume, "source", index)
		return
	}
	if r == nil || r.Source != fp {
		return
	}
	if r.Chain != nil {
		// What the agent wrote itself is checked again: a record it cannot use is dropped.
		if _, err := publicKey(r.Key); err != nil {
			klog.FromContext(ctx).Error(err, "Ignoring kept pod certificate state", "podUID", uid, "volume", volume, "source", index)
			return
		}
	}
	e.rec = *r
	e.refused = r.Refused
}

// checkPending looks at the request in flight and takes its answer.
func (m *Manager) checkPending(ctx context.Context, pod *corev1.Pod, volume string, index int, e *entry, now time.Time) error {
	name := pod.Namespace + "/" + e.rec.PendingName
	pcr, err := m.lister.PodCertificateRequests(pod.Namespace).Get(e.rec.PendingName)
	switch {
	case apierrors.IsNotFound(err):
		if now.Before(e.rec.PendingCreated.Add(abandonAfter)) {
			return nil
		}
		klog.FromContext(ctx).Info("A pod certificate request went before it was answered; asking again", "pod", klog.KObj(pod), "request", name)
		m.clearPending(pod.UID, volume, index, e)
		return nil
	case err != nil:
		return fmt.Errorf("reading PodCertificateRequest %s: %w", name, err)
	case pcr.Spec.PodUID != pod.UID:
		// Not the request the agent made (the name was reused after the cleaner removed ours).
		m.clearPending(pod.UID, volume, index, e)
		return nil
	}
	for _, c := range pcr.Status.Conditions {
		if c.Status != metav1.ConditionTrue {
			continue
		}
		switch c.Type {
		case certificatesv1.PodCertificateRequestConditionTypeDenied, certificatesv1.PodCertificateRequestConditionTypeFailed:
			return m.refuse(ctx, pod.UID, volume, index, e, &RefusedError{Request: name, Condition: c.Type, Reason: c.Reason, Message: c.Message})
		case certificatesv1.PodCertificateRequestConditionTypeIssued:
			got, err := acceptChain(&pcr.Status, e.rec.PendingKey, now)
			if err != nil {
				return m.refuse(ctx, pod.UID, volume, index, e, &RefusedError{Request: name, Condition: certificatesv1.PodCertificateRequestConditionTypeFailed,
					Reason: "InvalidCertificateChain", Message: "the agent refused the issued chain: " + err.Error()})
			}
			jitter := min(m.c.Jitter(maxJitter), got.notAfter.Sub(got.beginRefreshAt)/2)
			e.rec.Key, e.rec.Chain = e.rec.PendingKey, got.chain
			e.rec.NotBefore, e.rec.NotAfter, e.rec.BeginRefreshAt = got.notBefore, got.notAfter, got.beginRefreshAt
			e.rec.RefreshAt = got.beginRefreshAt.Add(jitter)
			e.rec.PendingName, e.rec.PendingKey, e.rec.PendingCreated = "", nil, time.Time{}
			m.save(ctx, pod.UID, volume, index, e)
			return nil
		}
	}
	return nil
}

// refuse records a final answer for the source, on disk too, and returns it.
func (m *Manager) refuse(ctx context.Context, uid types.UID, volume string, index int, e *entry, r *RefusedError) error {
	e.refused, e.rec.Refused = r, r
	e.rec.PendingName, e.rec.PendingKey, e.rec.PendingCreated = "", nil, time.Time{}
	m.save(ctx, uid, volume, index, e)
	return r
}

// clearPending forgets the request in flight; a current certificate stays.
func (m *Manager) clearPending(uid types.UID, volume string, index int, e *entry) {
	e.rec.PendingName, e.rec.PendingKey, e.rec.PendingCreated = "", nil, time.Time{}
	var err error
	if e.rec.Chain == nil {
		err = m.store.remove(uid, volume, index)
	} else {
		err = m.store.save(uid, volume, index, &e.rec)
	}
	if err != nil {
		klog.Background().Error(err, "Updating kept pod certificate state", "podUID", uid, "volume", volume, "source", index)
	}
}

// save keeps the record; a failure costs a new request after a restart, not the certificate.
// An entry the pod's Forget dropped meanwhile is not saved: its pod is gone.
func (m *Manager) save(ctx context.Context, uid types.UID, volume string, index int, e *entry) {
	m.mu.Lock()
	current := m.pods[uid][sourceKey{volume, index}] == e
	m.mu.Unlock()
	if !current {
		return
	}
	if err := m.store.save(uid, volume, index, &e.rec); err != nil {
		klog.FromContext(ctx).Error(err, "Keeping pod certificate state", "podUID", uid, "volume", volume, "source", index)
	}
}

// request makes a new key and asks the source's signer for a certificate for it, as the node.
func (m *Manager) request(ctx context.Context, pod *corev1.Pod, volume string, index int, src *corev1.PodCertificateProjection, e *entry, fp string) error {
	saKey := pod.Namespace + "/" + pod.Spec.ServiceAccountName
	saUID, err := m.uid(saKey, func() (types.UID, error) {
		sa, err := m.c.Client.CoreV1().ServiceAccounts(pod.Namespace).Get(ctx, pod.Spec.ServiceAccountName, metav1.GetOptions{})
		if err != nil {
			return "", fmt.Errorf("reading service account %s: %w", saKey, err)
		}
		return sa.UID, nil
	})
	if err != nil {
		return err
	}
	nodeUID, err := m.uid("", func() (types.UID, error) {
		node, err := m.c.Client.CoreV1().Nodes().Get(ctx, m.c.NodeName, metav1.GetOptions{})
		if err != nil {
			return "", fmt.Errorf("reading node %s: %w", m.c.NodeName, err)
		}
		return node.UID, nil
	})
	if err != nil {
		return err
	}
	keyPEM, stub, err := newKey(src.KeyType)
	if err != nil {
		return err
	}
	pcr := &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    pod.Namespace,
			GenerateName: generateName,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
			}},
		},
		Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName:                src.SignerName,
			PodName:                   pod.Name,
			PodUID:                    pod.UID,
			ServiceAccountName:        pod.Spec.ServiceAccountName,
			ServiceAccountUID:         saUID,
			NodeName:                  types.NodeName(m.c.NodeName),
			NodeUID:                   nodeUID,
			MaxExpirationSeconds:      src.MaxExpirationSeconds,
			StubPKCS10Request:         stub,
			UnverifiedUserAnnotations: src.UserAnnotations,
		},
	}
	created, err := m.c.Client.CertificatesV1().PodCertificateRequests(pod.Namespace).Create(ctx, pcr, metav1.CreateOptions{})
	if err != nil {
		m.mu.Lock()
		delete(m.uids, saKey)
		delete(m.uids, "")
		m.mu.Unlock()
		return fmt.Errorf("creating a PodCertificateRequest for signer %q: %w", src.SignerName, err)
	}
	e.rec.Source = fp
	e.rec.PendingName, e.rec.PendingKey = created.Name, keyPEM
	e.rec.PendingCreated = created.CreationTimestamp.Time
	if e.rec.PendingCreated.IsZero() {
		e.rec.PendingCreated = m.c.Clock.Now()
	}
	e.retryAt, e.backoff = time.Time{}, 0
	m.save(ctx, pod.UID, volume, index, e)
	klog.FromContext(ctx).V(2).Info("Requested a pod certificate", "pod", klog.KObj(pod), "volume", volume, "source", index, "request", created.Name, "signer", src.SignerName)
	return nil
}

// uid returns a cached UID, reading and caching it when missing.
func (m *Manager) uid(key string, read func() (types.UID, error)) (types.UID, error) {
	m.mu.Lock()
	uid, ok := m.uids[key]
	m.mu.Unlock()
	if ok {
		return uid, nil
	}
	uid, err := read()
	if err != nil {
		return "", err
	}
	m.mu.Lock()
	m.uids[key] = uid
	m.mu.Unlock()
	return uid, nil
}

// failed sets when the next request may be made after one failed at now.
func (e *entry) failed(now time.Time) {
	if e.backoff == 0 {
		e.backoff = initialBackoff
	} else {
		e.backoff = min(2*e.backoff, maxBackoff)
	}
	e.retryAt = now.Add(e.backoff)
}

// fingerprint identifies what a source asks for (not where it is written).
func fingerprint(src *corev1.PodCertificateProjection) string {
	data, _ := json.Marshal(struct {
		Signer, KeyType string
		Max             *int32
		Annotations     map[string]string
	}{src.SignerName, src.KeyType, src.MaxExpirationSeconds, src.UserAnnotations})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// entry returns a source's entry, creating it.
func (m *Manager) entry(uid types.UID, k sourceKey) *entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	sources := m.pods[uid]
	if sources == nil {
		sources = map[sourceKey]*entry{}
		m.pods[uid] = sources
	}
	e := sources[k]
	if e == nil {
		e = &entry{}
		sources[k] = e
	}
	return e
}

// NextRefresh is the earliest time a source of the pod needs the agent (a refresh, the end of a
// backoff, or a request that may have gone), zero when none does: the agent re-syncs the pod
// then. A request's answer does not wait for it: OnChange brings the pod back.
func (m *Manager) NextRefresh(podUID types.UID) time.Time {
	m.mu.Lock()
	entries := make([]*entry, 0, len(m.pods[podUID]))
	for _, e := range m.pods[podUID] {
		entries = append(entries, e)
	}
	m.mu.Unlock()
	var earliest time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && (earliest.IsZero() || t.Before(earliest)) {
			earliest = t
		}
	}
	for _, e := range entries {
		e.Lock()
		switch {
		case e.refused != nil:
		case !e.retryAt.IsZero():
			consider(e.retryAt)
		case e.rec.PendingName != "":
			consider(e.rec.PendingCreated.Add(abandonAfter))
		case e.rec.Chain != nil:
			consider(e.rec.RefreshAt)
		}
		e.Unlock()
	}
	return earliest
}

// Forget drops every source of a pod (deleted pod), in memory and on disk.
func (m *Manager) Forget(podUID types.UID) error {
	m.mu.Lock()
	delete(m.pods, podUID)
	m.mu.Unlock()
	return m.store.removePod(podUID)
}

// Prune removes the kept state of every pod not in live: pods that went while the agent was
// not running.
func (m *Manager) Prune(live map[types.UID]bool) error {
	uids, err := m.store.pods()
	if err != nil {
		return err
	}
	var errs []error
	for _, uid := range uids {
		if live[uid] {
			continue
		}
		if _, err := podDir(uid); err != nil {
			continue
		}
		errs = append(errs, m.Forget(uid))
	}
	return errors.Join(errs...)
}
