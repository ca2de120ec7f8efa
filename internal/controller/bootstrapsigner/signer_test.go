package bootstrapsigner

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/cluster-bootstrap/token/jws"
	testclock "k8s.io/utils/clock/testing"

	"github.com/idplane/idplane/internal/clusterinfo"
)

var now = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

const (
	kubeconfigA = "apiVersion: v1\nkind: Config\nclusters:\n- name: \"\"\n  cluster:\n    server: https://a.example:6443\n"
	kubeconfigB = "apiVersion: v1\nkind: Config\nclusters:\n- name: \"\"\n  cluster:\n    server: https://b.example:6443\n"
)

// token returns a bootstrap token secret; mutate adjusts it to the case.
func token(id string, mutate ...func(*corev1.Secret)) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id, Namespace: metav1.NamespaceSystem},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		Data: map[string][]byte{
			bootstrapapi.BootstrapTokenIDKey:           []byte(id),
			bootstrapapi.BootstrapTokenSecretKey:       []byte(secretOf(id)),
			bootstrapapi.BootstrapTokenUsageSigningKey: []byte("true"),
		},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func secretOf(id string) string { return id + "0123456789" }

func expiring(d time.Duration) func(*corev1.Secret) {
	return func(s *corev1.Secret) {
		s.Data[bootstrapapi.BootstrapTokenExpirationKey] = []byte(now.Add(d).Format(time.RFC3339))
	}
}

func sig(t *testing.T, kubeconfig, id string) string {
	t.Helper()
	s, err := jws.ComputeDetachedSignature(kubeconfig, id, secretOf(id))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func clusterInfo(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: clusterinfo.Namespace, Name: clusterinfo.Name, ResourceVersion: "1"},
		Data:       data,
	}
}

// published marks cm as holding the kubeconfig the signer published.
func published(cm *corev1.ConfigMap, kubeconfig string) *corev1.ConfigMap {
	cm.Annotations = map[string]string{PublishedAnnotation: sha256Hex(kubeconfig)}
	return cm
}

// newSigner returns a signer whose informer caches hold objs (not started: tests call sync).
func newSigner(t *testing.T, clk *testclock.FakeClock, publish string, objs ...runtime.Object) (*Signer, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	cms, secrets := factory.Core().V1().ConfigMaps(), factory.Core().V1().Secrets()
	s, err := New(client, cms, secrets, Config{Kubeconfig: []byte(publish), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.queue.ShutDown)
	for _, o := range objs {
		store := secrets.Informer().GetStore()
		if _, ok := o.(*corev1.ConfigMap); ok {
			store = cms.Informer().GetStore()
		}
		if err := store.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return s, client
}

// written is the data of the cluster-info the sync created or updated, nil when it wrote none.
func written(t *testing.T, client *fake.Clientset) map[string]string {
	t.Helper()
	var out map[string]string
	n := 0
	for _, a := range client.Actions() {
		switch a := a.(type) {
		case k8stesting.CreateActionImpl:
			out = a.GetObject().(*corev1.ConfigMap).Data
			n++
		case k8stesting.UpdateActionImpl:
			out = a.GetObject().(*corev1.ConfigMap).Data
			n++
		}
	}
	if n > 1 {
		t.Fatalf("%d writes, want at most one", n)
	}
	return out
}

func TestSync(t *testing.T) {
	cases := []struct {
		name    string
		publish string
		objs    func(t *testing.T) []runtime.Object
		// want is the data written; nil means no write.
		want func(t *testing.T) map[string]string
	}{
		{"signs with a signing token",
			"", func(t *testing.T) []runtime.Object {
				return []runtime.Object{clusterInfo(map[string]string{"kubeconfig": kubeconfigA}), token("abcdef")}
			}, func(t *testing.T) map[string]string {
				return map[string]string{"kubeconfig": kubeconfigA, "jws-kubeconfig-abcdef": sig(t, kubeconfigA, "abcdef")}
			}},
		{"signs with every signing token, keeps other keys",
			"", func(t *testing.T) []runtime.Object {
				return []runtime.Object{clusterInfo(map[string]string{"kubeconfig": kubeconfigA, "other": "x"}), token("abcdef"), token("ghijkl", expiring(time.Hour))}
			}, func(t *testing.T) map[string]string {
				return map[string]string{"kubeconfig": kubeconfigA, "other": "x",
					"jws-kubeconfig-abcdef": sig(t, kubeconfigA, "abcdef"), "jws-kubeconfig-ghijkl": sig(t, kubeconfigA, "ghijkl")}
			}},
		{"re-signs a changed kubeconfig",
			"", func(t *testing.T) []runtime.Object {
				return []runtime.Object{clusterInfo(map[string]string{"kubeconfig": kubeconfigB, "jws-kubeconfig-abcdef": sig(t, kubeconfigA, "abcdef")}), token("abcdef")}
			}, func(t *testing.T) map[string]string {
				return map[string]string{"kubeconfig": kubeconfigB, "jws-kubeconfig-abcdef": sig(t, kubeconfigB, "abcdef")}
			}},
		{"up to date: no write",
			"", func(t *testing.T) []runtime.Object {
				return []runtime.Object{clusterInfo(map[string]string{"kubeconfig": kubeconfigA, "jws-kubeconfig-abcdef": sig(t, kubeconfigA, "abcdef")}), token("abcdef")}
			}, nil},
		{"removes the signature of a deleted token",
			"", func(t *testing.T) []runtime.Object {
				return []runtime.Object{clusterInfo(map[string]string{"kubeconfig": kubeconfigA, "jws-kubeconfig-abcdef": sig(t, kubeconfigA, "abcdef")})}
			}, func(t *testing.T) map[string]string {
				return map[string]string{"kubeconfig": kubeconfigA}
			}},
		{"removes the signature of an expired token",
			"", func(t *testing.T) []runtime.Object {
				return []runtime.Object{clusterInfo(map[string]string{"kubeconfig": kubeconfigA, "jws-kubeconfig-abcdef": sig(t, kubeconfigA, "abcdef")}), token("abcdef", expiring(-time.Second))}
			}, func(t *testing.T) map[string]string {
				return map[string]string{"kubeconfig": kubeconfigA}
			}},
		{"tokens that may not sign sign nothing",
			"", func(t *testing.T) []runtime.Object {
				return []runtime.Object{clusterInfo(map[string]string{"kubeconfig": kubeconfigA}),
					token("aaaaaa", func(s *corev1.Secret) { delete(s.Data, bootstrapapi.BootstrapTokenUsageSigningKey) }),
					token("bbbbbb", func(s *corev1.Secret) { s.Data[bootstrapapi.BootstrapTokenUsageSigningKey] = []byte("false") }),
					token("cccccc", func(s *corev1.Secret) { s.Name = "bootstrap-token-dddddd" }),
					token("eeeeee", func(s *corev1.Secret) { s.Namespace = "default" }),
					token("ffffff", func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque }),
					token("gggggg", func(s *corev1.Secret) { delete(s.Data, bootstrapapi.BootstrapTokenIDKey) }),
					token("hhhhhh", func(s *corev1.Secret) { delete(s.Data, bootstrapapi.BootstrapTokenSecretKey) }),
				}
			}, nil},
		{"a secret of another form signs, as upstream's e2e tokens",
			"", func(t *testing.T) []runtime.Object {
				return []runtime.Object{clusterInfo(map[string]string{"kubeconfig": kubeconfigA}),
					token("a1b2c3", func(s *corev1.Secret) { s.Data[bootstrapapi.BootstrapTokenSecretKey] = []byte("tokenSecret") })}
			}, func(t *testing.T) map[string]string {
				s, err := jws.ComputeDetachedSignature(kubeconfigA, "a1b2c3", "tokenSecret")
				if err != nil {
					t.Fatal(err)
				}
				return map[string]string{"kubeconfig": kubeconfigA, "jws-kubeconfig-a1b2c3": s}
			}},
		{"no cluster-info and nothing to publish: nothing written",
			"", func(t *testing.T) []runtime.Object { return []runtime.Object{token("abcdef")} }, nil},
		{"no kubeconfig: nothing signed",
			"", func(t *testing.T) []runtime.Object {
				return []runtime.Object{clusterInfo(map[string]string{"other": "x"}), token("abcdef")}
			}, nil},
		{"publishes a missing cluster-info, signed",
			kubeconfigA, func(t *testing.T) []runtime.Object { return []runtime.Object{token("abcdef")} },
			func(t *testing.T) map[string]string {
				return map[string]string{"kubeconfig": kubeconfigA, "jws-kubeconfig-abcdef": sig(t, kubeconfigA, "abcdef")}
			}},
		{"publishes without tokens",
			kubeconfigA, func(t *testing.T) []runtime.Object { return nil },
			func(t *testing.T) map[string]string { return map[string]string{"kubeconfig": kubeconfigA} }},
		{"leaves a kubeconfig someone else wrote, and signs it",
			kubeconfigA, func(t *testing.T) []runtime.Object {
				return []runtime.Object{clusterInfo(map[string]string{"kubeconfig": kubeconfigB, "jws-kubeconfig-abcdef": sig(t, kubeconfigA, "abcdef")}), token("abcdef")}
			}, func(t *testing.T) map[string]string {
				return map[string]string{"kubeconfig": kubeconfigB, "jws-kubeconfig-abcdef": sig(t, kubeconfigB, "abcdef")}
			}},
		{"leaves a kubeconfig edited after it published its own",
			kubeconfigA, func(t *testing.T) []runtime.Object {
				return []runtime.Object{published(clusterInfo(map[string]string{"kubeconfig": kubeconfigB, "jws-kubeconfig-abcdef": sig(t, kubeconfigB, "abcdef")}), kubeconfigA), token("abcdef")}
			}, nil},
		{"updates the kubeconfig it published before",
			kubeconfigA, func(t *testing.T) []runtime.Object {
				return []runtime.Object{published(clusterInfo(map[string]string{"kubeconfig": kubeconfigB, "jws-kubeconfig-abcdef": sig(t, kubeconfigB, "abcdef")}), kubeconfigB), token("abcdef")}
			}, func(t *testing.T) map[string]string {
				return map[string]string{"kubeconfig": kubeconfigA, "jws-kubeconfig-abcdef": sig(t, kubeconfigA, "abcdef")}
			}},
		{"publishes where the kubeconfig was removed",
			kubeconfigA, func(t *testing.T) []runtime.Object {
				return []runtime.Object{clusterInfo(map[string]string{"other": "x"}), token("abcdef")}
			}, func(t *testing.T) map[string]string {
				return map[string]string{"other": "x", "kubeconfig": kubeconfigA, "jws-kubeconfig-abcdef": sig(t, kubeconfigA, "abcdef")}
			}},
		{"published and signed: no write",
			kubeconfigA, func(t *testing.T) []runtime.Object {
				return []runtime.Object{published(clusterInfo(map[string]string{"kubeconfig": kubeconfigA, "jws-kubeconfig-abcdef": sig(t, kubeconfigA, "abcdef")}), kubeconfigA), token("abcdef")}
			}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, client := newSigner(t, testclock.NewFakeClock(now), tc.publish, tc.objs(t)...)
			if err := s.sync(context.Background(), key); err != nil {
				t.Fatal(err)
			}
			got := written(t, client)
			var want map[string]string
			if tc.want != nil {
				want = tc.want(t)
			}
			if (got == nil) != (want == nil) || !maps.Equal(got, want) {
				t.Errorf("wrote %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
				t.Logf("got %v\nwant %v", got, want)
			}
		})
	}
}

// TestExpiryIsScheduled checks that the signer looks again when a signing token expires, not
// only when the token cleaner deletes it.
func TestExpiryIsScheduled(t *testing.T) {
	clk := testclock.NewFakeClock(now)
	s, _ := newSigner(t, clk, "", clusterInfo(map[string]string{"kubeconfig": kubeconfigA}), token("abcdef", expiring(time.Hour)), token("ghijkl", expiring(2*time.Hour)))
	// Drain the initial key New queues.
	k, _ := s.queue.Get()
	s.queue.Done(k)
	if err := s.sync(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if s.queue.Len() != 0 {
		t.Fatalf("queue holds %d keys before the expiry", s.queue.Len())
	}
	clk.Step(time.Hour - time.Second)
	if s.queue.Len() != 0 {
		t.Fatalf("queue holds %d keys a second before the expiry", s.queue.Len())
	}
	clk.Step(time.Second)
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return s.queue.Len() == 1, nil
	}); err != nil {
		t.Fatal("the key was not queued again at the first token's expiry")
	}
}

// TestRun drives the signer through its informers: a token appears, then goes.
func TestRun(t *testing.T) {
	client := fake.NewClientset()
	// The fake delivers only events after a watch began: the test creates the token once the
	// secrets informer watches.
	secretsWatched := make(chan struct{})
	var once sync.Once
	client.PrependWatchReactor("secrets", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(a.GetResource(), a.GetNamespace(), a.(k8stesting.WatchActionImpl).ListOptions)
		once.Do(func() { close(secretsWatched) })
		return true, w, err
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	s, err := New(client, factory.Core().V1().ConfigMaps(), factory.Core().V1().Secrets(), Config{Kubeconfig: []byte(kubeconfigA), Clock: testclock.NewFakeClock(now)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	go s.Run(ctx)
	waitFor := func(what string, ok func(map[string]string) bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			cm, err := client.CoreV1().ConfigMaps(clusterinfo.Namespace).Get(ctx, clusterinfo.Name, metav1.GetOptions{})
			return err == nil && ok(cm.Data), nil
		})
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	waitFor("the published cluster-info", func(d map[string]string) bool { return d["kubeconfig"] == kubeconfigA })
	<-secretsWatched
	if _, err := client.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, token("abcdef"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the token's signature", func(d map[string]string) bool { return d["jws-kubeconfig-abcdef"] == sig(t, kubeconfigA, "abcdef") })
	if err := client.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, "bootstrap-token-abcdef", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the signature's removal", func(d map[string]string) bool { _, ok := d["jws-kubeconfig-abcdef"]; return !ok })
	// An administrator's kubeconfig is theirs: signed, not replaced.
	if _, err := client.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, token("ghijkl"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the second token's signature", func(d map[string]string) bool { return d["jws-kubeconfig-ghijkl"] == sig(t, kubeconfigA, "ghijkl") })
	cm, err := client.CoreV1().ConfigMaps(clusterinfo.Namespace).Get(ctx, clusterinfo.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["kubeconfig"] = kubeconfigB
	if _, err := client.CoreV1().ConfigMaps(clusterinfo.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the edited kubeconfig signed", func(d map[string]string) bool {
		return d["kubeconfig"] == kubeconfigB && d["jws-kubeconfig-ghijkl"] == sig(t, kubeconfigB, "ghijkl")
	})
	if err := client.CoreV1().ConfigMaps(clusterinfo.Namespace).Delete(ctx, clusterinfo.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("cluster-info published again", func(d map[string]string) bool { return d["kubeconfig"] == kubeconfigA })
}
