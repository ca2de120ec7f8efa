package tokencleaner

import (
	"context"
	"slices"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testclock "k8s.io/utils/clock/testing"
)

var now = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func secret(name, namespace string, typ corev1.SecretType, expiration string) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID("uid-" + name)},
		Type:       typ,
		Data:       map[string][]byte{"token-id": []byte("abcdef"), "token-secret": []byte("0123456789abcdef")},
	}
	if expiration != "" {
		s.Data["expiration"] = []byte(expiration)
	}
	return s
}

func at(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }

const bootstrapType corev1.SecretType = "bootstrap.kubernetes.io/token"

// newCleaner returns a cleaner whose informer cache holds objs (not started: tests call sync).
func newCleaner(t *testing.T, clk *testclock.FakeClock, objs ...runtime.Object) (*Cleaner, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	secrets, csrs := factory.Core().V1().Secrets(), factory.Certificates().V1().CertificateSigningRequests()
	c, err := New(client, secrets, csrs, clk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.queue.ShutDown)
	for _, o := range objs {
		store := secrets.Informer().GetStore()
		if _, ok := o.(*certificatesv1.CertificateSigningRequest); ok {
			store = csrs.Informer().GetStore()
		}
		if err := store.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return c, client
}

func deletes(client *fake.Clientset) []k8stesting.DeleteActionImpl {
	var out []k8stesting.DeleteActionImpl
	for _, a := range client.Actions() {
		if d, ok := a.(k8stesting.DeleteActionImpl); ok {
			out = append(out, d)
		}
	}
	return out
}

func TestSync(t *testing.T) {
	deleting := metav1.NewTime(now)
	cases := []struct {
		name    string
		secret  *corev1.Secret
		deleted bool
	}{
		{"expired an hour ago", secret("bootstrap-token-abcdef", "kube-system", bootstrapType, at(-time.Hour)), true},
		{"expires this instant", secret("bootstrap-token-abcdef", "kube-system", bootstrapType, at(0)), true},
		{"expiration not RFC 3339 counts as expired", secret("bootstrap-token-abcdef", "kube-system", bootstrapType, "soon"), true},
		{"any name of the type", secret("my-token", "kube-system", bootstrapType, at(-time.Hour)), true},
		{"expires in a minute", secret("bootstrap-token-abcdef", "kube-system", bootstrapType, at(time.Minute)), false},
		{"never expires", secret("bootstrap-token-abcdef", "kube-system", bootstrapType, ""), false},
		{"other type", secret("bootstrap-token-abcdef", "kube-system", corev1.SecretTypeOpaque, at(-time.Hour)), false},
		{"other namespace", secret("bootstrap-token-abcdef", "default", bootstrapType, at(-time.Hour)), false},
		{"already being deleted", func() *corev1.Secret {
			s := secret("bootstrap-token-abcdef", "kube-system", bootstrapType, at(-time.Hour))
			s.DeletionTimestamp = &deleting
			return s
		}(), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, client := newCleaner(t, testclock.NewFakeClock(now), tc.secret)
			if err := c.sync(context.Background(), tc.secret.Name); err != nil {
				t.Fatal(err)
			}
			ds := deletes(client)
			if got := len(ds) > 0; got != tc.deleted {
				t.Fatalf("deleted %v, want %v", got, tc.deleted)
			}
			if !tc.deleted {
				return
			}
			d := ds[0]
			if d.Namespace != "kube-system" || d.Name != tc.secret.Name {
				t.Errorf("deleted %s/%s", d.Namespace, d.Name)
			}
			if p := d.DeleteOptions.Preconditions; p == nil || p.UID == nil || *p.UID != tc.secret.UID {
				t.Errorf("preconditions %+v, want UID %s", p, tc.secret.UID)
			}
		})
	}
}

// A secret deleted or replaced since the cache saw it is no failure: nothing is retried.
func TestSyncToleratesGoneAndReplaced(t *testing.T) {
	for _, reason := range []string{"gone", "replaced"} {
		t.Run(reason, func(t *testing.T) {
			s := secret("bootstrap-token-abcdef", "kube-system", bootstrapType, at(-time.Hour))
			c, client := newCleaner(t, testclock.NewFakeClock(now), s)
			client.PrependReactor("delete", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
				if reason == "gone" {
					return true, nil, apierrors.NewNotFound(corev1.Resource("secrets"), s.Name)
				}
				return true, nil, apierrors.NewConflict(corev1.Resource("secrets"), s.Name, nil)
			})
			if err := c.sync(context.Background(), s.Name); err != nil {
				t.Fatalf("sync: %v", err)
			}
		})
	}
	t.Run("other errors are retried", func(t *testing.T) {
		s := secret("bootstrap-token-abcdef", "kube-system", bootstrapType, at(-time.Hour))
		c, client := newCleaner(t, testclock.NewFakeClock(now), s)
		client.PrependReactor("delete", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewServiceUnavailable("etcd down")
		})
		if err := c.sync(context.Background(), s.Name); err == nil {
			t.Fatal("sync hid a failed delete")
		}
	})
}

// A secret that expires later is looked at again when the clock reaches its expiration, and then
// deleted.
func TestRequeuedAtExpiry(t *testing.T) {
	clk := testclock.NewFakeClock(now)
	s := secret("bootstrap-token-abcdef", "kube-system", bootstrapType, at(time.Hour))
	c, client := newCleaner(t, clk, s)
	if err := c.sync(context.Background(), s.Name); err != nil {
		t.Fatal(err)
	}
	if n := c.queue.Len(); n != 0 || len(deletes(client)) != 0 {
		t.Fatalf("queue %d deletes %v right after the sync, want none", n, deletes(client))
	}
	clk.Step(time.Hour)
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return c.queue.Len() == 1, nil
	})
	if err != nil {
		t.Fatal("the secret was not queued again at its expiration")
	}
	key, _ := c.queue.Get()
	if key != s.Name {
		t.Fatalf("queued %q", key)
	}
	if err := c.sync(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if ds := deletes(client); len(ds) != 1 || ds[0].Name != s.Name {
		t.Fatalf("deletes %+v, want %s", ds, s.Name)
	}
}

// Run, through the informer: expired bootstrap tokens go, everything else stays, and a token
// goes once the clock passes its expiration.
func TestRun(t *testing.T) {
	clk := testclock.NewFakeClock(now)
	expired := secret("bootstrap-token-aaaaaa", "kube-system", bootstrapType, at(-time.Minute))
	later := secret("bootstrap-token-bbbbbb", "kube-system", bootstrapType, at(time.Hour))
	forever := secret("bootstrap-token-cccccc", "kube-system", bootstrapType, "")
	opaque := secret("bootstrap-token-dddddd", "kube-system", corev1.SecretTypeOpaque, at(-time.Minute))
	client := fake.NewClientset(expired, later, forever, opaque)
	ctx := runCleaner(t, client, clk)

	remaining := func() []string {
		list, err := client.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range list.Items {
			names = append(names, s.Name)
		}
		slices.Sort(names)
		return names
	}
	waitFor := func(want ...string) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return slices.Equal(remaining(), want), nil
		})
		if err != nil {
			t.Fatalf("secrets %v, want %v", remaining(), want)
		}
	}
	waitFor(later.Name, forever.Name, opaque.Name)
	clk.Step(time.Hour)
	waitFor(forever.Name, opaque.Name)
}

// runCleaner runs a cleaner on client's informers until the test ends, its caches synced.
func runCleaner(t *testing.T, client *fake.Clientset, clk *testclock.FakeClock) context.Context {
	t.Helper()
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, factory.Core().V1().Secrets(), factory.Certificates().V1().CertificateSigningRequests(), clk)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	go c.Run(ctx, 1)
	factory.WaitForCacheSync(ctx.Done())
	return ctx
}
