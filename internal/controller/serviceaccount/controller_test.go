package serviceaccount

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/idplane/idplane/internal/controller/everynamespace"
	"github.com/idplane/idplane/internal/controller/everynamespace/everynamespacetest"
)

func account(namespace, name string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
}

func TestEnsure(t *testing.T) {
	cases := []struct {
		name      string
		accounts  []*corev1.ServiceAccount
		createErr error // the server's answer to the create
		creates   int
		wantErr   bool
	}{
		{name: "without it", creates: 1},
		{name: "with only other accounts",
			accounts: []*corev1.ServiceAccount{account("team", "robot"), account("other", DefaultName)}, creates: 1},
		{name: "with it", accounts: []*corev1.ServiceAccount{account("team", DefaultName)}},
		{name: "created meanwhile",
			createErr: apierrors.NewAlreadyExists(corev1.Resource("serviceaccounts"), DefaultName), creates: 1},
		{name: "namespace deleted meanwhile",
			createErr: apierrors.NewNotFound(corev1.Resource("namespaces"), "team"), creates: 1},
		{name: "namespace terminating meanwhile",
			createErr: everynamespacetest.TerminatingRefusal(corev1.Resource("serviceaccounts"), DefaultName), creates: 1},
		{name: "admission not ready is retried",
			createErr: apierrors.NewForbidden(corev1.Resource("serviceaccounts"), DefaultName, errors.New("not yet ready to handle request")),
			creates:   1, wantErr: true},
		{name: "server error is retried", createErr: apierrors.NewInternalError(errors.New("etcd down")), creates: 1, wantErr: true},
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
			accounts := factory.Core().V1().ServiceAccounts()
			c := &controller{client: client, accounts: accounts.Lister()}
			for _, sa := range tc.accounts {
				if err := accounts.Informer().GetIndexer().Add(sa); err != nil {
					t.Fatal(err)
				}
			}
			err := c.ensure(context.Background(), "team")
			if (err != nil) != tc.wantErr {
				t.Errorf("ensure: %v, want error %v", err, tc.wantErr)
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

// The running controller keeps the account; everynamespacetest says where and when.
func TestRun(t *testing.T) {
	everynamespacetest.Run(t, everynamespacetest.Controller{
		New: func(client kubernetes.Interface, factory informers.SharedInformerFactory) (*everynamespace.Loop, error) {
			return New(client, factory.Core().V1().Namespaces(), factory.Core().V1().ServiceAccounts())
		},
		Resource: corev1.SchemeGroupVersion.WithResource("serviceaccounts"),
		Name:     DefaultName,
	})
}
