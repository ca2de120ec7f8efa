package serviceaccount

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// TestInformerGetter: the informer answers what it holds, even when the server has moved on; what
// it does not hold, the server answers.
func TestInformerGetter(t *testing.T) {
	ctx := context.Background()
	cached := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cached", UID: "cached-uid"}}
	fresh := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "fresh", UID: "fresh-uid"}}
	client := fake.NewClientset(fresh)
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	g := NewInformerGetter(client, factory)
	if err := factory.Core().V1().ServiceAccounts().Informer().GetStore().Add(cached); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, account string
		wantUID       string
		wantNotFound  bool
	}{
		{"held by the informer", "cached", "cached-uid", false},
		{"created a moment ago", "fresh", "fresh-uid", false},
		{"nowhere", "gone", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sa, err := g.ServiceAccount(ctx, "ns", tc.account)
			if tc.wantNotFound {
				if !apierrors.IsNotFound(err) {
					t.Fatalf("err = %v, want NotFound", err)
				}
				return
			}
			if err != nil || string(sa.UID) != tc.wantUID {
				t.Fatalf("ServiceAccount = %v, %v; want UID %s", sa, err, tc.wantUID)
			}
		})
	}
}
