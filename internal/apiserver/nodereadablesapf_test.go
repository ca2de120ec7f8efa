package apiserver

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestNodeReadablesWatchFreesItsSeat: priority and fairness counts a watch against its priority
// level only while it starts; a node's bulk watch, which the library's watch cache does not
// serve, must say when its start is done, or every node would hold a seat of the system level
// for as long as it runs and a fleet would exhaust it.
func TestNodeReadablesWatchFreesItsSeat(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	mustCreate(t, s.client.CoreV1().Secrets("default").Create, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s1"}})
	ensureServiceAccount(t, s.client, "default", "default")
	mustCreate(t, s.client.CoreV1().Pods("default").Create, newPod("p", onNode("node1"), withSecretVolume("s1")))
	node1 := newReadablesClient(t, s.userConfig(t, "system:node:node1", "system:nodes"))

	initial := true
	for _, opts := range []metav1.ListOptions{
		forNode("node1"),
		{FieldSelector: forNode("node1").FieldSelector, SendInitialEvents: &initial, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true},
		{FieldSelector: forNode("node1").FieldSelector, ResourceVersion: "0"},
	} {
		w, err := node1.watch(ctx, "", opts)
		if err != nil {
			t.Fatalf("watch %+v: %v", opts, err)
		}
		defer w.Stop()
		if ev := <-w.ResultChan(); ev.Type != watch.Added {
			t.Fatalf("watch %+v: first event %v, want the secret ADDED", opts, ev.Type)
		}
	}
	eventually(t, "no seat of the system level held by the three open watches", func() error {
		m := scrapeMetrics(t, s.testServer)
		if _, found := m("apiserver_flowcontrol_current_executing_seats", nil); !found {
			return fmt.Errorf("no priority and fairness metrics: is it on?")
		}
		if seats, _ := m("apiserver_flowcontrol_current_executing_seats", map[string]string{"priority_level": "system"}); seats != 0 {
			return fmt.Errorf("%v seats executing at the system level", seats)
		}
		return nil
	})
}
