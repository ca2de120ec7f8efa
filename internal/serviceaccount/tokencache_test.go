package serviceaccount

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

func (f fixture) cachedAuthenticator(g Getter, size int) *Authenticator {
	return NewAuthenticator(AuthenticatorConfig{
		Issuers: []string{"https://old.test", testIssuer}, Keys: f.keys,
		APIAudiences: authenticator.Audiences{testIssuer}, Getter: g, Clock: f.clock, CacheSize: size,
	})
}

func legacyFixture(t *testing.T, f fixture) (string, objects) {
	t.Helper()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa-token", UID: "tok-uid", Annotations: map[string]string{
			corev1.ServiceAccountNameKey: "sa", corev1.ServiceAccountUIDKey: "sa-uid",
		}},
		Type: corev1.SecretTypeServiceAccountToken,
	}
	raw, err := f.issuer.IssueLegacy(context.Background(), testSA, secret)
	if err != nil {
		t.Fatal(err)
	}
	secret.Data = map[string][]byte{corev1.ServiceAccountTokenKey: []byte(raw)}
	o := liveObjects()
	o["secrets/ns/sa-token"] = secret
	return raw, o
}

// TestCachedSameAsUncached: a hit answers exactly what the uncached path answers, and when the
// objects change without any event reaching the cache (an informer that has not delivered yet),
// the hit still refuses the token: the object checks run on every use.
func TestCachedSameAsUncached(t *testing.T) {
	f := newFixture(t, ecKey(t))
	legacyRaw, legacyObjects := legacyFixture(t, f)
	cases := []struct {
		name    string
		raw     string
		objects objects
		dep     string // the object whose removal must refuse the token
	}{
		{"pod-bound", f.issue(t, Binding{ServiceAccount: testSA, Pod: testPod, Node: testNode}).Raw, liveObjects(), "pods/ns/pod"},
		{"secret-bound", f.issue(t, Binding{ServiceAccount: testSA, Secret: testSecret}).Raw, liveObjects(), "secrets/ns/secret"},
		{"node-bound", f.issue(t, Binding{ServiceAccount: testSA, Node: testNode}).Raw, liveObjects(), "nodes//node"},
		{"unbound", f.issue(t, Binding{ServiceAccount: testSA}).Raw, liveObjects(), "serviceaccounts/ns/sa"},
		{"legacy", legacyRaw, legacyObjects, "secrets/ns/sa-token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			want, wantOK, wantErr := f.authenticator(tc.objects).AuthenticateToken(ctx, tc.raw)
			if !wantOK || wantErr != nil {
				t.Fatalf("uncached AuthenticateToken = %v, %v", wantOK, wantErr)
			}
			a := f.cachedAuthenticator(tc.objects, 10)
			for i := range 2 {
				got, ok, err := a.AuthenticateToken(ctx, tc.raw)
				if !ok || err != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("call %d: AuthenticateToken = %+v, %v, %v; want %+v", i, got, ok, err, want)
				}
			}
			if n := a.cache.len(); n != 1 {
				t.Fatalf("cache holds %d entries, want 1", n)
			}
			if _, ok := a.cache.get(hashToken(tc.raw), f.clock.Now()); !ok {
				t.Fatal("the token is not in the cache")
			}
			// Another audience is asked for: refused on a hit as on the uncached path.
			vault := authenticator.WithAudiences(ctx, authenticator.Audiences{"vault"})
			if _, ok, err := a.AuthenticateToken(vault, tc.raw); ok || err == nil || !strings.Contains(err.Error(), "match none") {
				t.Errorf("hit for another audience = %v, %v", ok, err)
			}
			delete(tc.objects, tc.dep)
			_, ok, err := a.AuthenticateToken(ctx, tc.raw)
			if ok || err == nil || !strings.Contains(err.Error(), "has been deleted") {
				t.Errorf("hit after %s went = %v, %v; want refused as deleted", tc.dep, ok, err)
			}
		})
	}
}

// TestCachedTokenGoesWithItsKey: when the key that verified a cached token is no longer accepted
// (an external signer stopped publishing it), the hit is refused as the uncached path refuses it.
func TestCachedTokenGoesWithItsKey(t *testing.T) {
	f := newFixture(t, ecKey(t))
	raw := f.issue(t, Binding{ServiceAccount: testSA, Pod: testPod, Node: testNode}).Raw
	a := f.cachedAuthenticator(liveObjects(), 10)
	if _, ok, err := a.AuthenticateToken(context.Background(), raw); !ok || err != nil {
		t.Fatalf("AuthenticateToken = %v, %v", ok, err)
	}
	rotated, err := NewKeys(ecKey(t))
	if err != nil {
		t.Fatal(err)
	}
	a.keys = rotated
	_, ok, err := a.AuthenticateToken(context.Background(), raw)
	if ok || err == nil || !strings.Contains(err.Error(), "not an accepted key") {
		t.Errorf("after the key went AuthenticateToken = %v, %v; want refused", ok, err)
	}
	if n := a.cache.len(); n != 0 {
		t.Errorf("cache holds %d entries after the key went", n)
	}
}

func TestCacheInvalidation(t *testing.T) {
	f := newFixture(t, ecKey(t))
	podRaw := f.issue(t, Binding{ServiceAccount: testSA, Pod: testPod, Node: testNode}).Raw
	legacyRaw, legacyObjects := legacyFixture(t, f)
	deleting := testPod.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: testNow}
	recreated := testPod.DeepCopy()
	recreated.UID = "other-uid"
	relabelled := testPod.DeepCopy()
	relabelled.Labels = map[string]string{"a": "b"}
	tokenSecret := legacyObjects["secrets/ns/sa-token"].(*corev1.Secret)
	newToken := tokenSecret.DeepCopy()
	newToken.Data = map[string][]byte{corev1.ServiceAccountTokenKey: []byte("other")}

	cases := []struct {
		name      string
		raw       string
		objects   objects
		kind      string
		event     func(h cache.ResourceEventHandler)
		wantEntry bool
	}{
		{"pod deleted", podRaw, liveObjects(), "pods", func(h cache.ResourceEventHandler) { h.OnDelete(testPod) }, false},
		{"pod deleted, seen at relist", podRaw, liveObjects(), "pods", func(h cache.ResourceEventHandler) {
			h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/pod", Obj: testPod})
		}, false},
		{"pod marked for deletion", podRaw, liveObjects(), "pods", func(h cache.ResourceEventHandler) { h.OnUpdate(testPod, deleting) }, false},
		{"pod replaced", podRaw, liveObjects(), "pods", func(h cache.ResourceEventHandler) { h.OnUpdate(testPod, recreated) }, false},
		{"service account deleted", podRaw, liveObjects(), "serviceaccounts", func(h cache.ResourceEventHandler) { h.OnDelete(testSA) }, false},
		{"pod updated otherwise", podRaw, liveObjects(), "pods", func(h cache.ResourceEventHandler) { h.OnUpdate(testPod, relabelled) }, true},
		{"another pod deleted", podRaw, liveObjects(), "pods", func(h cache.ResourceEventHandler) {
			h.OnDelete(&corev1.Pod{ObjectMeta: meta("ns", "other", "x")})
		}, true},
		{"a node of that name deleted", podRaw, liveObjects(), "nodes", func(h cache.ResourceEventHandler) { h.OnDelete(testNode) }, true},
		{"legacy secret deleted", legacyRaw, legacyObjects, "secrets", func(h cache.ResourceEventHandler) { h.OnDelete(tokenSecret) }, false},
		{"legacy secret holds another token", legacyRaw, legacyObjects, "secrets", func(h cache.ResourceEventHandler) { h.OnUpdate(tokenSecret, newToken) }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := f.cachedAuthenticator(tc.objects, 10)
			if _, ok, err := a.AuthenticateToken(context.Background(), tc.raw); !ok || err != nil {
				t.Fatalf("AuthenticateToken = %v, %v", ok, err)
			}
			tc.event(a.cache.handler(tc.kind))
			if got := a.cache.len() == 1; got != tc.wantEntry {
				t.Errorf("entry kept = %v, want %v", got, tc.wantEntry)
			}
		})
	}
}

// blockingGetter holds a pod lookup until released, so a test can deliver an event while a
// verification is in flight.
type blockingGetter struct {
	objects
	entered chan struct{}
	release chan struct{}
}

func (g blockingGetter) Pod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	pod, err := g.objects.Pod(ctx, ns, name)
	close(g.entered)
	<-g.release
	return pod, err
}

// TestDeleteDuringVerification: the pod is read as live, then deleted before the verification
// finishes. The review in flight may succeed (it read the pod before the delete, as the uncached
// path would), but it must not leave a cached success behind.
func TestDeleteDuringVerification(t *testing.T) {
	f := newFixture(t, ecKey(t))
	raw := f.issue(t, Binding{ServiceAccount: testSA, Pod: testPod, Node: testNode}).Raw
	o := liveObjects()
	g := blockingGetter{objects: o, entered: make(chan struct{}), release: make(chan struct{})}
	a := f.cachedAuthenticator(g, 10)
	done := make(chan error)
	go func() {
		_, _, err := a.AuthenticateToken(context.Background(), raw)
		done <- err
	}()
	<-g.entered
	delete(o, "pods/ns/pod")
	a.cache.handler("pods").OnDelete(testPod)
	close(g.release)
	if err := <-done; err != nil {
		t.Fatalf("verification in flight: %v", err)
	}
	if n := a.cache.len(); n != 0 {
		t.Fatalf("cache holds %d entries after the pod was deleted during verification", n)
	}
	a.getter = o
	if _, ok, err := a.AuthenticateToken(context.Background(), raw); ok || err == nil {
		t.Errorf("after delete AuthenticateToken = %v, %v; want refused", ok, err)
	}
}

func TestCacheExpiryAndSize(t *testing.T) {
	f := newFixture(t, ecKey(t))
	a := f.cachedAuthenticator(liveObjects(), 2)
	var raws []string
	for range 3 {
		raw := f.issue(t, Binding{ServiceAccount: testSA, Pod: testPod, Node: testNode}).Raw
		if _, ok, err := a.AuthenticateToken(context.Background(), raw); !ok || err != nil {
			t.Fatalf("AuthenticateToken = %v, %v", ok, err)
		}
		raws = append(raws, raw)
		f.clock.Step(time.Second) // a new iat, so a new token
	}
	if n := a.cache.len(); n != 2 {
		t.Fatalf("cache of size 2 holds %d entries", n)
	}
	// At exp the entry goes; within the clock-skew leeway the uncached path still accepts the
	// token, past it both refuse.
	f.clock.Step(time.Hour)
	for _, raw := range raws {
		if _, ok := a.cache.get(hashToken(raw), f.clock.Now()); ok {
			t.Errorf("entry served at the token's expiry")
		}
	}
	f.clock.Step(2 * clockSkew)
	if _, ok, err := a.AuthenticateToken(context.Background(), raws[2]); ok || err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired token = %v, %v", ok, err)
	}
}

// watchingAuthenticator is a cached authenticator reading client through factory's informers,
// whose events drop its entries; the informers run, synced, until the test ends.
func (f fixture) watchingAuthenticator(t *testing.T, client kubernetes.Interface, factory informers.SharedInformerFactory) (*Authenticator, context.Context) {
	t.Helper()
	a := f.cachedAuthenticator(NewInformerGetter(client, factory), 10)
	if err := a.WatchObjects(factory); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		factory.Shutdown()
	})
	factory.WaitForCacheSync(ctx.Done())
	return a, ctx
}

// TestWatchObjects drives the handlers through real informers: deleting the pod through the API
// empties the cache.
func TestWatchObjects(t *testing.T) {
	f := newFixture(t, ecKey(t))
	client := fake.NewClientset(testSA.DeepCopy(), testPod.DeepCopy(), testNode.DeepCopy())
	factory := informers.NewSharedInformerFactory(client, 0)
	a, ctx := f.watchingAuthenticator(t, client, factory)
	raw := f.issue(t, Binding{ServiceAccount: testSA, Pod: testPod, Node: testNode}).Raw
	if _, ok, err := a.AuthenticateToken(ctx, raw); !ok || err != nil {
		t.Fatalf("AuthenticateToken = %v, %v", ok, err)
	}
	if n := a.cache.len(); n != 1 {
		t.Fatalf("cache holds %d entries, want 1", n)
	}
	if err := client.CoreV1().Pods("ns").Delete(ctx, "pod", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return a.cache.len() == 0, nil
	}); err != nil {
		t.Fatalf("the pod's delete event never emptied the cache: %v", err)
	}
	if _, ok, err := a.AuthenticateToken(ctx, raw); ok || err == nil {
		t.Errorf("after delete AuthenticateToken = %v, %v; want refused", ok, err)
	}
}

// TestCacheOnlyWhatTheInformersHold: a token bound to an object the informers do not hold (a
// Secret of a type the server's Secret informer leaves out) is never cached, since no event would
// ever drop it: each review verifies it and reads the object live, so deleting the object refuses
// the token at once. A token whose objects the informers hold is cached as before.
func TestCacheOnlyWhatTheInformersHold(t *testing.T) {
	f := newFixture(t, ecKey(t))
	client := fake.NewClientset(testSA.DeepCopy(), testPod.DeepCopy(), testNode.DeepCopy(), testSecret.DeepCopy())
	factory := informers.NewSharedInformerFactory(client, 0)
	// The Secret informer follows another, empty cluster: it holds none of client's secrets.
	factory.InformerFor(&corev1.Secret{}, func(_ kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewSecretInformer(fake.NewClientset(), metav1.NamespaceAll, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	})
	a, ctx := f.watchingAuthenticator(t, client, factory)
	secretBound := f.issue(t, Binding{ServiceAccount: testSA, Secret: testSecret}).Raw
	for i := range 2 {
		if _, ok, err := a.AuthenticateToken(ctx, secretBound); !ok || err != nil {
			t.Fatalf("review %d of the secret-bound token = %v, %v", i, ok, err)
		}
	}
	if n := a.cache.len(); n != 0 {
		t.Fatalf("cache holds %d entries for a token bound to a secret no informer holds", n)
	}
	podBound := f.issue(t, Binding{ServiceAccount: testSA, Pod: testPod, Node: testNode}).Raw
	if _, ok, err := a.AuthenticateToken(ctx, podBound); !ok || err != nil {
		t.Fatalf("pod-bound token = %v, %v", ok, err)
	}
	if n := a.cache.len(); n != 1 {
		t.Fatalf("cache holds %d entries after the pod-bound token, want 1", n)
	}
	if err := client.CoreV1().Secrets(testSecret.Namespace).Delete(ctx, testSecret.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := a.AuthenticateToken(ctx, secretBound); ok || err == nil {
		t.Errorf("after the secret's deletion AuthenticateToken = %v, %v; want refused", ok, err)
	}
}
