package objects

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	nodev1alpha1 "github.com/idplane/idplane/api/node/v1alpha1"
)

// refusingServer lists nodereadables in discovery but answers the node's list and watch of them
// with code, and serves secret ns/s and configmap ns/c to watches of one object, as a server
// enforcing the Node authorizer does. It records every request for secrets, configmaps and
// nodereadables.
type refusingServer struct {
	code int

	mu       sync.Mutex
	requests []string
	bulk     int
}

func (s *refusingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	if strings.Contains(r.URL.Path, "/secrets") || strings.Contains(r.URL.Path, "/configmaps") || strings.Contains(r.URL.Path, "/nodereadables") {
		s.requests = append(s.requests, fmt.Sprintf("%s %s watch=%s fieldSelector=%s", r.Method, r.URL.Path, q.Get("watch"), q.Get("fieldSelector")))
	}
	if r.URL.Path == "/apis/node.idplane.io/v1alpha1/nodereadables" {
		s.bulk++
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	status := func(code int, reason metav1.StatusReason) {
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: int32(code), Reason: reason})
	}
	objects := map[string]runtime.Object{
		"/api/v1/namespaces/ns/secrets": &corev1.Secret{TypeMeta: metav1.TypeMeta{Kind: "Secret", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", ResourceVersion: "5"}, Data: map[string][]byte{"k": []byte("from its own watch")}},
		"/api/v1/namespaces/ns/configmaps": &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", ResourceVersion: "6"}, Data: map[string]string{"k": "from its own watch"}},
	}
	switch obj, ok := objects[r.URL.Path]; {
	case r.URL.Path == "/apis/node.idplane.io/v1alpha1":
		_ = json.NewEncoder(w).Encode(metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: nodev1alpha1.SchemeGroupVersion.String(),
			APIResources: []metav1.APIResource{{Name: nodev1alpha1.ResourceName, Namespaced: true, Kind: "NodeReadable", Verbs: []string{"list", "watch"}}},
		})
	case r.URL.Path == "/apis/node.idplane.io/v1alpha1/nodereadables":
		status(s.code, metav1.StatusReasonUnknown)
	case !ok:
		status(http.StatusNotFound, metav1.StatusReasonNotFound)
	case q.Get("fieldSelector") != "metadata.name="+obj.(metav1.Object).GetName():
		// The Node authorizer's answer to anything but a watch of one object by name.
		status(http.StatusForbidden, metav1.StatusReasonForbidden)
	case q.Get("watch") != "true":
		list := map[string]any{"kind": obj.GetObjectKind().GroupVersionKind().Kind + "List", "apiVersion": "v1",
			"metadata": map[string]any{"resourceVersion": "10"}, "items": []runtime.Object{obj}}
		_ = json.NewEncoder(w).Encode(list)
	default:
		if q.Get("sendInitialEvents") == "true" {
			kind := obj.GetObjectKind().GroupVersionKind().Kind
			_ = json.NewEncoder(w).Encode(map[string]any{"type": watch.Added, "object": obj})
			_ = json.NewEncoder(w).Encode(map[string]any{"type": watch.Bookmark, "object": map[string]any{"kind": kind, "apiVersion": "v1",
				"metadata": map[string]any{"resourceVersion": "10", "annotations": map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}})
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
}

func (s *refusingServer) seen() (requests []string, bulk int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...), s.bulk
}

// TestCacheFallsBackWhenTheBulkWatchIsRefused: discovery says nodereadables are served, but the
// server refuses the node's list (403 from a policy, 404 or 405 from an older idplane or a proxy).
// The cache moves to one watch per object, tells the pods to read again, and reads what they
// use; it reads nothing a per-object node would not (only lists and watches of one object by
// name). A passing failure (503) is retried instead.
func TestCacheFallsBackWhenTheBulkWatchIsRefused(t *testing.T) {
	for _, tc := range []struct {
		code     int
		fallBack bool
	}{
		{http.StatusForbidden, true},
		{http.StatusNotFound, true},
		{http.StatusMethodNotAllowed, true},
		{http.StatusServiceUnavailable, false},
	} {
		t.Run(http.StatusText(tc.code), func(t *testing.T) {
			fakeServer := &refusingServer{code: tc.code}
			srv := httptest.NewServer(fakeServer)
			defer srv.Close()
			// Stopped before the server closes, which waits for the watches to end.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			config := &rest.Config{Host: srv.URL}
			api, err := NewReadablesClient(config, nil)
			if err != nil {
				t.Fatal(err)
			}
			rec := &recorder{}
			c := Open(ctx, kubernetes.NewForConfigOrDie(config), Options{NodeName: node, Readables: api}, rec.changed)
			// The refusal may come back, and the cache fall back, before Open's caller looks: the
			// server's side says whether the bulk watch was tried.
			eventually(t, "discovery saying the bulk watch is served, and the cache trying it", func() bool {
				_, bulk := fakeServer.seen()
				return bulk >= 1
			})
			c.Use("ns/p", []Ref{{Secret, "ns", "s"}}, false)
			c.Use("ns/q", []Ref{{ConfigMap, "ns", "c"}}, false)

			if !tc.fallBack {
				// Two attempts: the first error was handled without falling back.
				eventually(t, "the informer retrying", func() bool { _, bulk := fakeServer.seen(); return bulk >= 2 })
				if c.fellBack() {
					t.Fatalf("a %d made the cache give up the bulk watch", tc.code)
				}
				if requests, _ := fakeServer.seen(); strings.Contains(strings.Join(requests, "\n"), "/secrets") {
					t.Errorf("per-object watches while the bulk watch is retried: %q", requests)
				}
				return
			}
			// A read waiting for the refused bulk watch is served by the object's own watch.
			s, err := c.Secret(ctx, "ns", "s")
			if err != nil || string(s.Data["k"]) != "from its own watch" {
				t.Fatalf("Secret = %v, %v", s, err)
			}
			if cm, err := c.ConfigMap(ctx, "ns", "c"); err != nil || cm.Data["k"] != "from its own watch" {
				t.Fatalf("ConfigMap = %v, %v", cm, err)
			}
			eventually(t, "the pods told to read again", func() bool { return rec.saw("ns/p") && rec.saw("ns/q") })
			// A pod that comes later gets its own watch too.
			c.Use("ns/r", []Ref{{Secret, "ns", "s"}, {Secret, "ns", "other"}}, false)
			requests, bulk := fakeServer.seen()
			if bulk != 1 {
				t.Errorf("the refused bulk list was asked %d times, want once", bulk)
			}
			for _, r := range requests {
				switch {
				case strings.Contains(r, "/nodereadables") && strings.HasSuffix(r, "fieldSelector=nodeName="+node):
				case strings.HasPrefix(r, "GET /api/v1/namespaces/ns/secrets watch="),
					strings.HasPrefix(r, "GET /api/v1/namespaces/ns/configmaps watch="):
					if !strings.HasSuffix(r, "fieldSelector=metadata.name=s") && !strings.HasSuffix(r, "fieldSelector=metadata.name=c") &&
						!strings.HasSuffix(r, "fieldSelector=metadata.name=other") {
						t.Errorf("a read beyond the pods' objects: %s", r)
					}
				default:
					t.Errorf("an unexpected request: %s", r)
				}
			}
		})
	}
}
