package everynamespace

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

const name = "kept"

func namespace(name string, phase corev1.NamespacePhase) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: phase}}
}

func configMap(namespace, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
}

// newLoop returns a loop keeping the configmap named name, with ensure as its Ensure, and the
// indexer of its namespace informer.
func newLoop(t *testing.T, ensure func(context.Context, string) error) (*Loop, cache.Indexer) {
	t.Helper()
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	namespaces := factory.Core().V1().Namespaces()
	l, err := New(namespaces, Config{
		Queue: "test", What: "Testing", Name: name, Objects: factory.Core().V1().ConfigMaps().Informer(), Ensure: ensure,
	})
	if err != nil {
		t.Fatal(err)
	}
	return l, namespaces.Informer().GetIndexer()
}

func TestEvents(t *testing.T) {
	kept := configMap("a", name)
	cases := []struct {
		name string
		do   func(*Loop)
		want []string
	}{
		{"active namespace", func(l *Loop) { l.namespaceChanged(namespace("a", corev1.NamespaceActive)) }, []string{"a"}},
		{"terminating namespace", func(l *Loop) { l.namespaceChanged(namespace("a", corev1.NamespaceTerminating)) }, nil},
		{"object changed", func(l *Loop) { l.objectChanged(kept) }, []string{"a"}},
		{"object deleted, seen late", func(l *Loop) {
			l.objectChanged(cache.DeletedFinalStateUnknown{Key: "a/" + name, Obj: kept})
		}, []string{"a"}},
		{"another object changed", func(l *Loop) { l.objectChanged(configMap("a", "app")) }, nil},
		{"another object deleted, seen late", func(l *Loop) {
			l.objectChanged(cache.DeletedFinalStateUnknown{Key: "a/app", Obj: configMap("a", "app")})
		}, nil},
		{"not an object", func(l *Loop) { l.objectChanged("a/" + name) }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := newLoop(t, nil)
			tc.do(l)
			var got []string
			for l.queue.Len() > 0 {
				key, _ := l.queue.Get()
				got = append(got, key)
				l.queue.Done(key)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("queued %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSync(t *testing.T) {
	failed := errors.New("etcd down")
	cases := []struct {
		name      string
		namespace *corev1.Namespace // in the cache; nil: not there
		ensureErr error
		ensured   bool
		wantErr   error
	}{
		{name: "active namespace", namespace: namespace("team", corev1.NamespaceActive), ensured: true},
		{name: "ensure fails", namespace: namespace("team", corev1.NamespaceActive), ensureErr: failed, ensured: true, wantErr: failed},
		{name: "terminating namespace", namespace: namespace("team", corev1.NamespaceTerminating)},
		{name: "namespace gone", namespace: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ensured []string
			l, namespaces := newLoop(t, func(_ context.Context, namespace string) error {
				ensured = append(ensured, namespace)
				return tc.ensureErr
			})
			if tc.namespace != nil {
				if err := namespaces.Add(tc.namespace); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.sync(context.Background(), "team"); !errors.Is(err, tc.wantErr) {
				t.Errorf("sync: %v, want %v", err, tc.wantErr)
			}
			var want []string
			if tc.ensured {
				want = []string{"team"}
			}
			if !slices.Equal(ensured, want) {
				t.Errorf("ensured %v, want %v", ensured, want)
			}
		})
	}
}
