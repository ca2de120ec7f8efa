package serviceaccount

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// verifiedClaims are a token's claims once its signature has been checked: a function of the
// token's bytes and the key that verified it only. Everything that can change later (that key
// still accepted, expiry against the clock, the audiences a review asks for, the objects the
// token names) is checked again on every use, so a cached entry can never make a token authenticate where the uncached path would not.
type verifiedClaims struct {
	public jwt.Claims
	bound  privateClaims
	// legacy is set for tokens kept in secrets; bound is then empty.
	legacy *legacyClaims
	// key verified the signature; a hit needs it still accepted.
	key PublicKey
}

// objectKey names an object a token depends on; kind is the informer's resource.
type objectKey struct {
	kind, namespace, name string
}

// dependencies are the objects whose deletion ends the token: its service account and the object
// it is bound to (a pod-bound token's node claim is informational and checked through the pod).
func (v *verifiedClaims) dependencies() []objectKey {
	if l := v.legacy; l != nil {
		return []objectKey{{"serviceaccounts", l.Namespace, l.ServiceAccountName}, {"secrets", l.Namespace, l.SecretName}}
	}
	k := v.bound.Kubernetes
	deps := []objectKey{{"serviceaccounts", k.Namespace, k.ServiceAccount.Name}}
	switch {
	case k.Pod != nil:
		deps = append(deps, objectKey{"pods", k.Namespace, k.Pod.Name})
	case k.Secret != nil:
		deps = append(deps, objectKey{"secrets", k.Namespace, k.Secret.Name})
	case k.Node != nil:
		deps = append(deps, objectKey{"nodes", "", k.Node.Name})
	}
	return deps
}

// expiry is when the entry stops being served: the token's exp, or never for legacy tokens
// (which have none and go with their secret).
func (v *verifiedClaims) expiry() time.Time {
	if v.legacy != nil || v.public.Expiry == nil {
		return time.Time{}
	}
	return v.public.Expiry.Time()
}

type tokenHash [sha256.Size]byte

type cacheEntry struct {
	claims  *verifiedClaims
	expires time.Time
	deps    []objectKey
}

// tokenCache holds the verified claims of tokens that authenticated, keyed by the token's SHA-256,
// so that a repeated review skips parsing and the signature check. Entries go when an object a
// token names is deleted (informer events), at the token's expiry, or to make room.
//
// A verification in flight while an object is deleted must not leave an entry behind: the
// generation counter moves on every invalidation, and add refuses an entry whose verification
// began under an older generation. add and invalidate hold the same lock, so either the entry is
// added first and the invalidation removes it, or the invalidation comes first and add refuses.
type tokenCache struct {
	max int

	mu sync.Mutex
	// stores are, per kind, the informers' stores whose events invalidate entries (WatchObjects).
	// An entry is added only while every object it depends on is in them: one the informers do
	// not hold (a Secret of a type the server's Secret informer leaves out) would never be seen to
	// go, so its tokens are verified every time.
	stores     map[string]cache.Store
	generation uint64
	entries    map[tokenHash]*cacheEntry
	byObject   map[objectKey]map[tokenHash]struct{}
}

func newTokenCache(max int) *tokenCache {
	return &tokenCache{max: max, entries: map[tokenHash]*cacheEntry{}, byObject: map[objectKey]map[tokenHash]struct{}{}}
}

func hashToken(raw string) tokenHash { return sha256.Sum256([]byte(raw)) }

// get returns the claims of a token verified before, unless its entry has expired at now.
func (c *tokenCache) get(h tokenHash, now time.Time) (*verifiedClaims, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[h]
	if !ok {
		return nil, false
	}
	if !e.expires.IsZero() && !now.Before(e.expires) {
		c.removeLocked(h, e)
		return nil, false
	}
	return e.claims, true
}

// begin returns the generation a verification starts under; pass it to add.
func (c *tokenCache) begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.generation
}

// add caches v unless an object was invalidated since begin returned generation.
func (c *tokenCache) add(h tokenHash, v *verifiedClaims, generation uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if generation != c.generation {
		return
	}
	if _, ok := c.entries[h]; ok {
		return
	}
	deps := v.dependencies()
	if c.stores != nil && !c.holdsAll(deps) {
		return
	}
	if len(c.entries) >= c.max {
		// Any entry will do: map iteration picks one at random, and a dropped entry costs only a
		// verification.
		for victim, e := range c.entries {
			c.removeLocked(victim, e)
			break
		}
	}
	e := &cacheEntry{claims: v, expires: v.expiry(), deps: deps}
	c.entries[h] = e
	for _, d := range e.deps {
		set := c.byObject[d]
		if set == nil {
			set = map[tokenHash]struct{}{}
			c.byObject[d] = set
		}
		set[h] = struct{}{}
	}
}

// holdsAll says whether the informers hold every one of deps.
func (c *tokenCache) holdsAll(deps []objectKey) bool {
	for _, d := range deps {
		store := c.stores[d.kind]
		if store == nil {
			return false
		}
		if _, ok, err := store.GetByKey(cache.NewObjectName(d.namespace, d.name).String()); !ok || err != nil {
			return false
		}
	}
	return true
}

// invalidate drops every entry that depends on the object and fails any verification in flight.
func (c *tokenCache) invalidate(k objectKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.generation++
	for h := range c.byObject[k] {
		c.removeLocked(h, c.entries[h])
	}
}

// remove drops the entry of one token.
func (c *tokenCache) remove(h tokenHash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[h]; ok {
		c.removeLocked(h, e)
	}
}

func (c *tokenCache) removeLocked(h tokenHash, e *cacheEntry) {
	delete(c.entries, h)
	for _, d := range e.deps {
		set := c.byObject[d]
		delete(set, h)
		if len(set) == 0 {
			delete(c.byObject, d)
		}
	}
}

func (c *tokenCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// WatchObjects drops cached tokens when the objects they name go: deleted, replaced by another
// object of the same name (seen after a relist), or marked for deletion. It registers handlers
// on the same informers the Getter reads, and from then on caches only tokens whose objects those
// informers hold; without a cache it does nothing. It must be called before the first review.
func (a *Authenticator) WatchObjects(f informers.SharedInformerFactory) error {
	if a.cache == nil {
		return nil
	}
	core := f.Core().V1()
	stores := map[string]cache.Store{}
	for kind, inf := range map[string]cache.SharedIndexInformer{
		"serviceaccounts": core.ServiceAccounts().Informer(),
		"pods":            core.Pods().Informer(),
		"secrets":         core.Secrets().Informer(),
		"nodes":           core.Nodes().Informer(),
	} {
		if _, err := inf.AddEventHandler(a.cache.handler(kind)); err != nil {
			return err
		}
		stores[kind] = inf.GetStore()
	}
	a.cache.mu.Lock()
	a.cache.stores = stores
	a.cache.mu.Unlock()
	return nil
}

func (c *tokenCache) handler(kind string) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			o, okOld := oldObj.(metav1.Object)
			n, okNew := newObj.(metav1.Object)
			if !okOld || !okNew {
				return
			}
			if o.GetUID() != n.GetUID() || n.GetDeletionTimestamp() != nil || legacyTokenChanged(oldObj, newObj) {
				c.invalidate(objectKey{kind, n.GetNamespace(), n.GetName()})
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if m, ok := obj.(metav1.Object); ok {
				c.invalidate(objectKey{kind, m.GetNamespace(), m.GetName()})
			}
		},
	}
}

// legacyTokenChanged says whether a secret now holds another token: the one cached no longer
// matches it.
func legacyTokenChanged(oldObj, newObj any) bool {
	o, ok1 := oldObj.(*corev1.Secret)
	n, ok2 := newObj.(*corev1.Secret)
	return ok1 && ok2 && string(o.Data[corev1.ServiceAccountTokenKey]) != string(n.Data[corev1.ServiceAccountTokenKey])
}
