package serviceaccount

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

func namespace(name string, phase corev1.NamespacePhase) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: phase}}
}

func account(namespace, name string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
}

// terminatingRefusal is NamespaceLifecycle's answer to a create in a terminating namespace.
func terminatingRefusal() error {
	err := apierrors.NewForbidden(corev1.Resource("serviceaccounts"), DefaultName, errors.New("namespace is being terminated"))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: corev1.NamespaceTerminatingCause})
	return err
}

func TestSync(t *testing.T) {
	cases := []struct {
		name      string
		namespace *corev1.Namespace // in the cache; nil: not there
		accounts  []*corev1.ServiceAccount
		createErr error // the server's answer to the create
		creates   int
		wantErr   bool
	}{
		{name: "active namespace without it", namespace: namespace("team", corev1.NamespaceActive), creates: 1},
		{name: "active namespace with only other accounts", namespace: namespace("team", corev1.NamespaceActive),
			accounts: []*corev1.ServiceAccount{account("team", "robot"), account("other", DefaultName)}, creates: 1},
		{name: "active namespace with it", namespace: namespace("team", corev1.NamespaceActive),
			accounts: []*corev1.ServiceAccount{account("team", DefaultName)}},
		{name: "terminating namespace", namespace: namespace("team", corev1.NamespaceTerminating)},
		{name: "namespace gone", namespace: nil},
		{name: "created meanwhile", namespace: namespace("team", corev1.NamespaceActive),
			createErr: apierrors.NewAlreadyExists(corev1.Resource("serviceaccounts"), DefaultName), creates: 1},
		{name: "namespace deleted meanwhile", namespace: namespace("team", corev1.NamespaceActive),
			createErr: apierrors.NewNotFound(corev1.Resource("namespaces"), "team"), creates: 1},
		{name: "namespace terminating meanwhile", namespace: namespace("team", corev1.NamespaceActive),
			createErr: terminatingRefusal(), creates: 1},
		{name: "admission not ready is retried", namespace: namespace("team", corev1.NamespaceActive),
			createErr: apierrors.NewForbidden(corev1.Resource("serviceaccounts"), DefaultName, errors.New("not yet ready to handle request")),
			creates:   1, wantErr: true},
		{name: "server error is retried", namespace: namespace("team", corev1.NamespaceActive),
			createErr: apierrors.NewInternalError(errors.New("etcd down")), creates: 1, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			if tc.createErr != nil {
				client.PrependReactor("create", "serviceaccounts", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, tc.createErr
				})
			}
			factory := informers.NewSharedInformerFactory(client, 0)
			namespaces, accounts := factory.Core().V1().Namespaces(), factory.Core().V1().ServiceAccounts()
			c, err := New(client, namespaces, accounts)
			if err != nil {
				t.Fatal(err)
			}
			if tc.namespace != nil {
				if err := namespaces.Informer().GetIndexer().Add(tc.namespace); err != nil {
					t.Fatal(err)
				}
			}
			for _, sa := range tc.accounts {
				if err := accounts.Informer().GetIndexer().Add(sa); err != nil {
					t.Fatal(err)
				}
			}
			err = c.sync(context.Background(), "team")
			if (err != nil) != tc.wantErr {
				t.Errorf("sync: %v, want error %v", err, tc.wantErr)
			}
			var creates int
			for _, a := range client.Actions() {
				create, ok := a.(k8stesting.CreateAction)
				if !ok {
					t.Errorf("unexpected request %s %s", a.GetVerb(), a.GetResource().Resource)
					continue
				}
				creates++
				sa := create.GetObject().(*corev1.ServiceAccount)
				if create.GetNamespace() != "team" || sa.Name != DefaultName {
					t.Errorf("created serviceaccount %s/%s, want team/%s", create.GetNamespace(), sa.Name, DefaultName)
				}
			}
			if creates != tc.creates {
				t.Errorf("%d creates, want %d", creates, tc.creates)
			}
		})
	}
}

func TestEvents(t *testing.T) {
	cases := []struct {
		name string
		do   func(*Controller)
		want []string
	}{
		{"namespace added", func(c *Controller) { c.namespaceChanged(namespace("a", corev1.NamespaceActive)) }, []string{"a"}},
		{"default deleted", func(c *Controller) { c.accountDeleted(account("a", DefaultName)) }, []string{"a"}},
		{"default deleted, seen late", func(c *Controller) {
			c.accountDeleted(cache.DeletedFinalStateUnknown{Key: "a/default", Obj: account("a", DefaultName)})
		}, []string{"a"}},
		{"another account deleted", func(c *Controller) { c.accountDeleted(account("a", "robot")) }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			factory := informers.NewSharedInformerFactory(client, 0)
			c, err := New(client, factory.Core().V1().Namespaces(), factory.Core().V1().ServiceAccounts())
			if err != nil {
				t.Fatal(err)
			}
			tc.do(c)
			var got []string
			for c.queue.Len() > 0 {
				key, _ := c.queue.Get()
				got = append(got, key)
				c.queue.Done(key)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("queued %v, want %v", got, tc.want)
			}
		})
	}
}

// The running controller creates the account in existing and new namespaces and recreates it.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(namespace("existing", corev1.NamespaceActive), namespace("leaving", corev1.NamespaceTerminating))
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, factory.Core().V1().Namespaces(), factory.Core().V1().ServiceAccounts())
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx, 1)
	}()
	defer func() {
		cancel()
		<-done
		factory.Shutdown()
	}()
	waitFor := func(ns string) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, DefaultName, metav1.GetOptions{})
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("no serviceaccount %s/%s", ns, DefaultName)
		}
	}
	waitFor("existing")
	factory.WaitForCacheSync(ctx.Done())
	if _, err := client.CoreV1().Namespaces().Create(ctx, namespace("new", corev1.NamespaceActive), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("new")
	if err := client.CoreV1().ServiceAccounts("new").Delete(ctx, DefaultName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("new")
	if _, err := client.CoreV1().ServiceAccounts("leaving").Get(ctx, DefaultName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("serviceaccount in a terminating namespace: %v", err)
	}
}
