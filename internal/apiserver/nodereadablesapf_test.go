package apiserver

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestNodeReadablesWatchFreesItsSeat: priority and fairness counts a watch against its priority
// level only while it starts; a node's bulk watch, which the library's watch cache does not
// serve, must say when its start is done, or every node would hold a seat of the system level
// for as long as it runs and a fleet would exhaust it.
func TestNodeReadablesWatchFreesItsSeat(t *testing.T) {
	s, node1 := startNodeWithSecret(t)
	ctx := context.Background()

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

// TestNodeReadablesPlainWatch: a watch from "now" (resourceVersion unset or "0", as kubectl get
// -w asks), which the library turns into one with initial events but no bookmarks, gets the
// node's items and then stays open: no end-of-initial-events bookmark, which the library's
// handler takes only on a watch-list (it reset the stream on a nil hook before).
func TestNodeReadablesPlainWatch(t *testing.T) {
	s, node1 := startNodeWithSecret(t)
	ctx := context.Background()
	for _, rv := range []string{"", "0"} {
		w, err := node1.watch(ctx, "", metav1.ListOptions{FieldSelector: forNode("node1").FieldSelector, ResourceVersion: rv})
		if err != nil {
			t.Fatalf("watch from %q: %v", rv, err)
		}
		// The node's two items (its pod's secret and kube-root-ca.crt), then a change.
		for range 2 {
			if ev := <-w.ResultChan(); ev.Type != watch.Added {
				t.Fatalf("watch from %q: %v %+v, want the node's items ADDED", rv, ev.Type, ev.Object)
			}
		}
		mustUpdateSecretData(t, s.testServer, "default", "s1")
		if ev := <-w.ResultChan(); ev.Type != watch.Modified {
			t.Fatalf("watch from %q: %v %+v after the secret changed, want MODIFIED", rv, ev.Type, ev.Object)
		}
		w.Stop()
	}
}

func mustUpdateSecretData(t *testing.T, s *testServer, namespace, name string) {
	t.Helper()
	sec, err := s.client.CoreV1().Secrets(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec.Data = map[string][]byte{"k": []byte(sec.ResourceVersion)}
	if _, err := s.client.CoreV1().Secrets(namespace).Update(context.Background(), sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
