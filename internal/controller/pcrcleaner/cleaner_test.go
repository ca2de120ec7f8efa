package pcrcleaner

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	testclock "k8s.io/utils/clock/testing"
)

var now = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func pcr(namespace, name string, age time.Duration, answered bool) *certificatesv1.PodCertificateRequest {
	r := &certificatesv1.PodCertificateRequest{ObjectMeta: metav1.ObjectMeta{
		Namespace: namespace, Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1",
		CreationTimestamp: metav1.NewTime(now.Add(-age)),
	}}
	if answered {
		r.Status.Conditions = []metav1.Condition{{Type: "Issued", Status: metav1.ConditionTrue}}
	}
	return r
}

func sweep(t *testing.T, client *fake.Clientset) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory := informers.NewSharedInformerFactory(client, 0)
	c := New(client, factory.Certificates().V1().PodCertificateRequests(), testclock.NewFakePassiveClock(now))
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.Synced) {
		t.Fatal("cache did not sync")
	}
	return c.Sweep(ctx)
}

func remaining(t *testing.T, client *fake.Clientset) []string {
	t.Helper()
	list, err := client.CertificatesV1().PodCertificateRequests("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range list.Items {
		names = append(names, r.Namespace+"/"+r.Name)
	}
	slices.Sort(names)
	return names
}

// TestSweep: requests older than 15 minutes go, answered or not, in every namespace; younger
// ones stay.
func TestSweep(t *testing.T) {
	client := fake.NewClientset(
		pcr("a", "young", 14*time.Minute, false),
		pcr("a", "young-issued", time.Minute, true),
		pcr("a", "exactly-15m", 15*time.Minute, false),
		pcr("a", "old-pending", 16*time.Minute, false),
		pcr("b", "old-issued", time.Hour, true),
	)
	if err := sweep(t, client); err != nil {
		t.Fatal(err)
	}
	if got, want := remaining(t, client), []string{"a/exactly-15m", "a/young", "a/young-issued"}; !slices.Equal(got, want) {
		t.Errorf("remaining %v, want %v", got, want)
	}
}

// TestSweepGoesOnPastAFailure: one delete failing leaves the others done and is reported.
func TestSweepGoesOnPastAFailure(t *testing.T) {
	client := fake.NewClientset(pcr("a", "stuck", time.Hour, false), pcr("a", "old", time.Hour, false))
	client.PrependReactor("delete", "podcertificaterequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.DeleteAction).GetName() == "stuck" {
			return true, nil, errors.New("etcd unavailable")
		}
		return false, nil, nil
	})
	if err := sweep(t, client); err == nil {
		t.Error("a failed delete was not reported")
	}
	if got, want := remaining(t, client), []string{"a/stuck"}; !slices.Equal(got, want) {
		t.Errorf("remaining %v, want %v", got, want)
	}
}
