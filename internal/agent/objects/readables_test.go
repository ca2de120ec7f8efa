package objects

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	nodev1alpha1 "github.com/idplane/idplane/api/node/v1alpha1"
)

const node = "n1"

// fakeReadables serves a list the test sets and hands each watch it opens to the test.
type fakeReadables struct {
	mu       sync.Mutex
	list     *nodev1alpha1.NodeReadableList
	lists    []metav1.ListOptions
	watches  []metav1.ListOptions
	watchers chan *watch.FakeWatcher
}

func newFakeReadables(items ...nodev1alpha1.NodeReadable) *fakeReadables {
	return &fakeReadables{watchers: make(chan *watch.FakeWatcher, 10), list: listOf("1", items...)}
}

func listOf(rv string, items ...nodev1alpha1.NodeReadable) *nodev1alpha1.NodeReadableList {
	return &nodev1alpha1.NodeReadableList{ListMeta: metav1.ListMeta{ResourceVersion: rv}, Items: items}
}

func (f *fakeReadables) setList(l *nodev1alpha1.NodeReadableList) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.list = l
}

func (f *fakeReadables) List(_ context.Context, o metav1.ListOptions) (*nodev1alpha1.NodeReadableList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists = append(f.lists, o)
	return f.list.DeepCopy(), nil
}

func (f *fakeReadables) Watch(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
	f.mu.Lock()
	f.watches = append(f.watches, o)
	f.mu.Unlock()
	w := watch.NewFakeWithChanSize(10, false)
	f.watchers <- w
	return w, nil
}

func (f *fakeReadables) listCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.lists)
}

// lastOptions are the options of the last list and the last watch.
func (f *fakeReadables) lastOptions() (list, watch metav1.ListOptions) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.lists) > 0 {
		list = f.lists[len(f.lists)-1]
	}
	if len(f.watches) > 0 {
		watch = f.watches[len(f.watches)-1]
	}
	return list, watch
}

// nextWatch is the next watch the informer opens.
func (f *fakeReadables) nextWatch(t *testing.T) *watch.FakeWatcher {
	t.Helper()
	var w *watch.FakeWatcher
	eventually(t, "the informer's watch", func() bool {
		select {
		case w = <-f.watchers:
			return true
		default:
			return false
		}
	})
	return w
}

func secretItem(ns, name, rv, value string) nodev1alpha1.NodeReadable {
	return nodev1alpha1.NodeReadable{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: nodev1alpha1.SecretPrefix + name, ResourceVersion: "item-" + rv},
		NodeName:   node,
		Secret: &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
			Data:       map[string][]byte{"k": []byte(value)},
		},
	}
}

func configMapItem(ns, name, rv, value string) nodev1alpha1.NodeReadable {
	return nodev1alpha1.NodeReadable{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: nodev1alpha1.ConfigMapPrefix + name, ResourceVersion: "item-" + rv},
		NodeName:   node,
		ConfigMap:  &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}, Data: map[string]string{"k": value}},
	}
}

// servingReadables is a fake clientset whose discovery lists nodereadables as served.
func servingReadables(objects ...runtime.Object) *fake.Clientset {
	client := fake.NewClientset(objects...)
	d := client.Discovery().(*fakediscovery.FakeDiscovery)
	d.Resources = append(d.Resources, &metav1.APIResourceList{
		GroupVersion: nodev1alpha1.SchemeGroupVersion.String(),
		APIResources: []metav1.APIResource{{Name: nodev1alpha1.ResourceName, Namespaced: true, Kind: "NodeReadable", Verbs: []string{"list", "watch"}}},
	})
	return client
}

// objectWatches are the lists and watches of secrets and configmaps client was asked for.
func objectWatches(client *fake.Clientset) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range client.Actions() {
		if (a.GetVerb() == "list" || a.GetVerb() == "watch") && (a.GetResource().Resource == "secrets" || a.GetResource().Resource == "configmaps") {
			out = append(out, a)
		}
	}
	return out
}

func secretData(t *testing.T, c *Cache, name string) string {
	t.Helper()
	s, err := c.Secret(context.Background(), "ns", name)
	if err != nil {
		t.Fatalf("Secret %s: %v", name, err)
	}
	return string(s.Data["k"])
}

func TestBulkWatchFollowsTheNodesStream(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := servingReadables()
	readables := newFakeReadables(
		secretItem("ns", "s", "10", "v1"),
		configMapItem("ns", "c", "11", "c1"),
		secretItem("ns", "u", "12", "same"),
		secretItem("ns", "unused", "13", "x"),
	)
	rec := &recorder{}
	c := Open(ctx, client, Options{NodeName: node, Readables: readables}, rec.changed)
	if c.readables == nil {
		t.Fatal("the server serves nodereadables, and the cache does not use them")
	}
	c.Use("ns/a", []Ref{{Secret, "ns", "s"}}, false)
	c.Use("ns/b", []Ref{{Secret, "ns", "late"}}, false)
	c.Use("ns/c", []Ref{{ConfigMap, "ns", "c"}}, false)
	c.Use("ns/u", []Ref{{Secret, "ns", "u"}}, false)
	c.Use("ns/m", []Ref{{Secret, "ns", "marker"}}, false)

	s, err := c.Secret(ctx, "ns", "s")
	if err != nil || string(s.Data["k"]) != "v1" {
		t.Fatalf("Secret = %v, %v; want data v1", s, err)
	}
	if s.ManagedFields != nil {
		t.Errorf("the cache holds managed fields: %v", s.ManagedFields)
	}
	if cm, err := c.ConfigMap(ctx, "ns", "c"); err != nil || cm.Data["k"] != "c1" {
		t.Fatalf("ConfigMap = %v, %v", cm, err)
	}
	// Not in the stream, and a GET says it does not exist.
	if _, err := c.Secret(ctx, "ns", "late"); !apierrors.IsNotFound(err) {
		t.Fatalf("a secret the stream lacks and the server does not have: err = %v, want NotFound", err)
	}
	if _, err := c.Secret(ctx, "ns", "unused"); err == nil {
		t.Fatal("an object in the stream that no pod registered was read")
	}
	if got, _ := readables.lastOptions(); got.FieldSelector != "nodeName="+node {
		t.Errorf("list field selector = %q, want nodeName=%s", got.FieldSelector, node)
	}

	w := readables.nextWatch(t)
	rec.reset()
	late := secretItem("ns", "late", "20", "arrived")
	w.Add(&late)
	eventually(t, "the added object reported to its pod", func() bool { return rec.saw("ns/b") })
	if got := secretData(t, c, "late"); got != "arrived" {
		t.Errorf("added secret = %q", got)
	}

	rec.reset()
	s2 := secretItem("ns", "s", "21", "v2")
	w.Modify(&s2)
	eventually(t, "the change reported to its pod", func() bool { return rec.saw("ns/a") })
	if got := secretData(t, c, "s"); got != "v2" {
		t.Errorf("modified secret = %q, want v2", got)
	}
	if rec.saw("ns/b") || rec.saw("ns/c") {
		t.Errorf("pods that do not use the changed object were told: %v", rec.users)
	}

	rec.reset()
	w.Delete(&s2)
	eventually(t, "the deletion reported to its pod", func() bool { return rec.saw("ns/a") })
	if _, err := c.Secret(ctx, "ns", "s"); !apierrors.IsNotFound(err) {
		t.Errorf("deleted secret: err = %v, want NotFound", err)
	}

	// The stream's history expires: the informer lists again. The new list brings s back with new
	// content, keeps u as it was (at a new stream position) and no longer holds late.
	readables.setList(listOf("30",
		func() nodev1alpha1.NodeReadable {
			u := secretItem("ns", "u", "12", "same")
			u.ResourceVersion = "item-30"
			return u
		}(),
		secretItem("ns", "s", "31", "v3"),
		configMapItem("ns", "c", "11", "c1"),
	))
	rec.reset()
	w.Error(&metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired, Message: "too old resource version"})
	// The informer hands a relist's deletions and additions over in an order of its own; an
	// event on the resumed watch comes after all of them.
	w = readables.nextWatch(t)
	if _, got := readables.lastOptions(); got.ResourceVersion != "30" || got.FieldSelector != "nodeName="+node {
		t.Errorf("watch after relist: resourceVersion %q, fieldSelector %q", got.ResourceVersion, got.FieldSelector)
	}
	marker := secretItem("ns", "marker", "40", "m")
	w.Add(&marker)
	eventually(t, "the event after the relist reported", func() bool { return rec.saw("ns/m") })
	if !rec.saw("ns/b") {
		t.Error("the pod of an object the relist dropped was not told")
	}
	if readables.listCount() != 2 {
		t.Errorf("lists = %d, want the first and the relist", readables.listCount())
	}
	if !rec.saw("ns/a") {
		t.Error("the pod of an object the relist brought back was not told")
	}
	if rec.saw("ns/u") || rec.saw("ns/c") {
		t.Errorf("pods of objects the relist left unchanged were told: %v", rec.users)
	}
	if got := secretData(t, c, "s"); got != "v3" {
		t.Errorf("relisted secret = %q, want v3", got)
	}
	if _, err := c.Secret(ctx, "ns", "late"); !apierrors.IsNotFound(err) {
		t.Errorf("a secret the relist dropped: err = %v, want NotFound", err)
	}

	if got := objectWatches(client); len(got) != 0 {
		t.Errorf("the bulk watch's cache listed or watched single objects: %v", got)
	}
}

func TestBulkWatchDropsWhatItCannotTrust(t *testing.T) {
	ok := secretItem("ns", "s", "1", "v")
	cm := configMapItem("ns", "c", "1", "v")
	tests := []struct {
		name   string
		mutate func(*nodev1alpha1.NodeReadable)
		base   nodev1alpha1.NodeReadable
		trust  bool
	}{
		{name: "a secret", base: ok, trust: true},
		{name: "a configmap", base: cm, trust: true},
		{name: "another node's", base: ok, mutate: func(i *nodev1alpha1.NodeReadable) { i.NodeName = "n2" }},
		{name: "no node", base: ok, mutate: func(i *nodev1alpha1.NodeReadable) { i.NodeName = "" }},
		{name: "neither object", base: ok, mutate: func(i *nodev1alpha1.NodeReadable) { i.Secret = nil }},
		{name: "both objects", base: ok, mutate: func(i *nodev1alpha1.NodeReadable) { i.ConfigMap = cm.ConfigMap.DeepCopy() }},
		{name: "the object in another namespace", base: ok, mutate: func(i *nodev1alpha1.NodeReadable) { i.Secret.Namespace = "kube-system" }},
		{name: "the object under another name", base: ok, mutate: func(i *nodev1alpha1.NodeReadable) { i.Secret.Name = "admin" }},
		{name: "a secret named as a configmap", base: ok, mutate: func(i *nodev1alpha1.NodeReadable) { i.Name = nodev1alpha1.ConfigMapPrefix + "s" }},
		{name: "a configmap named as a secret", base: cm, mutate: func(i *nodev1alpha1.NodeReadable) { i.Name = nodev1alpha1.SecretPrefix + "c" }},
		{name: "no prefix", base: ok, mutate: func(i *nodev1alpha1.NodeReadable) { i.Name = "s" }},
		{name: "an object without a name", base: ok, mutate: func(i *nodev1alpha1.NodeReadable) { i.Secret.Name = ""; i.Name = nodev1alpha1.SecretPrefix }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			item := tt.base.DeepCopy()
			if tt.mutate != nil {
				tt.mutate(item)
			}
			if err := checkReadable(item, node); (err == nil) != tt.trust {
				t.Errorf("checkReadable = %v, want trusted %v", err, tt.trust)
			}
		})
	}

	// In the cache: an untrusted item is never read, whether listed, added, or an update of a
	// trusted one (which forgets the trusted content).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bad := ok.DeepCopy()
	bad.Secret.Namespace = "kube-system"
	readables := newFakeReadables(*bad, cm)
	rec := &recorder{}
	c := Open(ctx, servingReadables(), Options{NodeName: node, Readables: readables}, rec.changed)
	c.Use("ns/p", []Ref{{Secret, "ns", "s"}, {ConfigMap, "ns", "c"}}, false)
	if _, err := c.Secret(ctx, "ns", "s"); !apierrors.IsNotFound(err) {
		t.Errorf("a listed item naming another namespace's secret: err = %v, want NotFound", err)
	}
	if got, err := c.ConfigMap(ctx, "ns", "c"); err != nil || got.Data["k"] != "v" {
		t.Fatalf("trusted configmap = %v, %v", got, err)
	}
	w := readables.nextWatch(t)
	w.Add(bad.DeepCopy())
	spoof := cm.DeepCopy()
	spoof.ConfigMap.Name, spoof.ConfigMap.Data = "other", map[string]string{"k": "spoofed"}
	rec.reset()
	w.Modify(spoof)
	eventually(t, "the untrusted update reported as a deletion", func() bool { return rec.saw("ns/p") })
	if got, err := c.ConfigMap(ctx, "ns", "c"); !apierrors.IsNotFound(err) {
		t.Errorf("configmap after an untrusted update = %v, %v; want NotFound", got, err)
	}
	if _, err := c.Secret(ctx, "ns", "s"); !apierrors.IsNotFound(err) {
		t.Errorf("an added item naming another namespace's secret: err = %v, want NotFound", err)
	}
}

func TestBulkWatchReadsWhatTheStreamLacks(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := servingReadables(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ahead", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Data:       map[string][]byte{"k": []byte("got")},
	})
	client.PrependReactor("get", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.GetAction).GetName() == "refused" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "refused", errors.New("no relationship found"))
		}
		return false, nil, nil
	})
	c := Open(ctx, client, Options{NodeName: node, Readables: newFakeReadables()}, func([]string) {})
	c.Use("ns/p", []Ref{{Secret, "ns", "ahead"}, {ConfigMap, "ns", "refused"}, {ConfigMap, "ns", "gone"}}, false)

	// The server lets the node read an object its stream has not brought yet.
	s, err := c.Secret(ctx, "ns", "ahead")
	if err != nil || string(s.Data["k"]) != "got" || s.ManagedFields != nil {
		t.Fatalf("Secret = %v, %v; want the GET's data without managed fields", s, err)
	}
	// The node may not read it yet: an error to retry, not an absent object an optional
	// volume would skip.
	_, err = c.ConfigMap(ctx, "ns", "refused")
	if err == nil || apierrors.IsNotFound(err) || !apierrors.IsForbidden(err) {
		t.Errorf("a configmap the node may not read yet: err = %v, want Forbidden", err)
	}
	if _, err := c.ConfigMap(ctx, "ns", "gone"); !apierrors.IsNotFound(err) {
		t.Errorf("a configmap that does not exist: err = %v, want NotFound", err)
	}
}

func TestOpenFallsBackToWatchesPerObject(t *testing.T) {
	served := func() *fake.Clientset { return servingReadables() }
	tests := []struct {
		name      string
		client    func() *fake.Clientset
		opts      Options
		readables bool
	}{
		{name: "served", client: served, opts: Options{NodeName: node, Readables: newFakeReadables()}, readables: true},
		{name: "not served", client: func() *fake.Clientset { return fake.NewClientset() }, opts: Options{NodeName: node, Readables: newFakeReadables()}},
		{name: "forced per object", client: served, opts: Options{NodeName: node, Readables: newFakeReadables(), PerObject: true}},
		{name: "no client for it", client: served, opts: Options{NodeName: node}},
		{name: "served without watch", client: func() *fake.Clientset {
			c := fake.NewClientset()
			d := c.Discovery().(*fakediscovery.FakeDiscovery)
			d.Resources = append(d.Resources, &metav1.APIResourceList{
				GroupVersion: nodev1alpha1.SchemeGroupVersion.String(),
				APIResources: []metav1.APIResource{{Name: nodev1alpha1.ResourceName, Verbs: []string{"list"}}},
			})
			return c
		}, opts: Options{NodeName: node, Readables: newFakeReadables()}},
		{name: "discovery refused", client: func() *fake.Clientset {
			c := servingReadables()
			c.PrependReactor("get", "resource", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{}, "", errors.New("no discovery for you"))
			})
			return c
		}, opts: Options{NodeName: node, Readables: newFakeReadables(), WarmUp: time.Nanosecond}},
		// A server that answers before its authorizers have read their policy refuses discovery
		// for a moment: within the warm-up, that is asked again like any failure.
		{name: "discovery refused while the server warms up", client: discoveryFailsFirst(
			apierrors.NewForbidden(schema.GroupResource{}, "", errors.New("policy not loaded yet")),
			apierrors.NewUnauthorized("authenticator not ready"),
		), opts: Options{NodeName: node, Readables: newFakeReadables()}, readables: true},
		// An overloaded or starting server is asked again: the node must not fall back to a watch
		// per object because the server was busy when it started.
		{name: "discovery fails for a while", client: discoveryFailsFirst(
			apierrors.NewServiceUnavailable("starting"), apierrors.NewTooManyRequests("busy", 1), errors.New("connection refused"),
		), opts: Options{NodeName: node, Readables: newFakeReadables()}, readables: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			client := tt.client()
			if _, err := client.CoreV1().Secrets("ns").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"k": []byte("v")}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			client.ClearActions()
			c := Open(ctx, client, tt.opts, func([]string) {})
			if got := c.readables != nil; got != tt.readables {
				t.Fatalf("bulk watch = %v, want %v", got, tt.readables)
			}
			c.Use("ns/p", []Ref{{Secret, "ns", "s"}}, false)
			if tt.readables {
				return
			}
			if got := secretData(t, c, "s"); got != "v" {
				t.Errorf("secret = %q", got)
			}
			watches := objectWatches(client)
			if !slices.ContainsFunc(watches, func(a k8stesting.Action) bool {
				l, ok := a.(k8stesting.ListAction)
				return ok && l.GetListRestrictions().Fields.String() == "metadata.name=s"
			}) {
				t.Errorf("no per-object list of the secret: %v", watches)
			}
		})
	}
}

// discoveryFailsFirst is a client serving nodereadables whose discovery answers each of failures
// in turn before it answers.
func discoveryFailsFirst(failures ...error) func() *fake.Clientset {
	return func() *fake.Clientset {
		c := servingReadables()
		c.PrependReactor("get", "resource", func(k8stesting.Action) (bool, runtime.Object, error) {
			if len(failures) == 0 {
				return false, nil, nil
			}
			err := failures[0]
			failures = failures[1:]
			return true, nil, err
		})
		return c
	}
}

// TestReadablesClient reads nodereadables with the REST client from a server speaking the API's
// JSON, and asks discovery the way a real server answers it.
func TestReadablesClient(t *testing.T) {
	item := secretItem("ns", "s", "5", "v")
	item.APIVersion, item.Kind = nodev1alpha1.SchemeGroupVersion.String(), "NodeReadable"
	var (
		mu      sync.Mutex
		queries []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.RawQuery)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/apis/node.idplane.io/v1alpha1":
			_ = json.NewEncoder(w).Encode(metav1.APIResourceList{
				TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
				GroupVersion: nodev1alpha1.SchemeGroupVersion.String(),
				APIResources: []metav1.APIResource{{Name: nodev1alpha1.ResourceName, Namespaced: true, Kind: "NodeReadable", Verbs: []string{"list", "watch"}}},
			})
		case r.URL.Path == "/apis/node.idplane.io/v1alpha1/nodereadables" && r.URL.Query().Get("watch") == "true":
			_ = json.NewEncoder(w).Encode(metav1.WatchEvent{Type: string(watch.Added), Object: runtime.RawExtension{Object: &item}})
			w.(http.Flusher).Flush()
		case r.URL.Path == "/apis/node.idplane.io/v1alpha1/nodereadables":
			_ = json.NewEncoder(w).Encode(nodev1alpha1.NodeReadableList{
				TypeMeta: metav1.TypeMeta{Kind: "NodeReadableList", APIVersion: nodev1alpha1.SchemeGroupVersion.String()},
				ListMeta: metav1.ListMeta{ResourceVersion: "7"}, Items: []nodev1alpha1.NodeReadable{item},
			})
		default:
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound})
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	config := &rest.Config{Host: srv.URL}
	api, err := NewReadablesClient(config, nil)
	if err != nil {
		t.Fatal(err)
	}
	list, err := api.List(ctx, metav1.ListOptions{FieldSelector: "nodeName=" + node})
	if err != nil || list.ResourceVersion != "7" || len(list.Items) != 1 || string(list.Items[0].Secret.Data["k"]) != "v" {
		t.Fatalf("List = %+v, %v", list, err)
	}
	w, err := api.Watch(ctx, metav1.ListOptions{FieldSelector: "nodeName=" + node, ResourceVersion: "7"})
	if err != nil {
		t.Fatal(err)
	}
	e := <-w.ResultChan()
	w.Stop()
	if got, ok := e.Object.(*nodev1alpha1.NodeReadable); e.Type != watch.Added || !ok || got.Secret.Name != "s" {
		t.Fatalf("watch event = %v %#v", e.Type, e.Object)
	}
	mu.Lock()
	if want := []string{"fieldSelector=nodeName%3D" + node, "fieldSelector=nodeName%3D" + node + "&resourceVersion=7&watch=true"}; !slices.Equal(queries, want) {
		t.Errorf("queries = %q, want %q", queries, want)
	}
	mu.Unlock()

	client := kubernetes.NewForConfigOrDie(config)
	if ok, err := ServesReadables(ctx, client.Discovery()); !ok || err != nil {
		t.Errorf("ServesReadables = %v, %v; want true", ok, err)
	}
	other := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL + "/elsewhere"})
	if ok, err := ServesReadables(ctx, other.Discovery()); ok || err != nil {
		t.Errorf("ServesReadables of a server without the group = %v, %v; want false, no error", ok, err)
	}
}
