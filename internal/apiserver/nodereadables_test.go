package apiserver

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	nodev1alpha1 "github.com/idplane/idplane/api/node/v1alpha1"
)

// readablesClient is a stock REST client for node.idplane.io/v1alpha1, as an agent builds one.
type readablesClient struct {
	rc    *rest.RESTClient
	codec runtime.ParameterCodec
}

func newReadablesClient(t testing.TB, cfg *rest.Config) readablesClient {
	t.Helper()
	s := runtime.NewScheme()
	utilruntime.Must(nodev1alpha1.AddToScheme(s))
	metav1.AddToGroupVersion(s, metav1.SchemeGroupVersion)
	cfg = rest.CopyConfig(cfg)
	cfg.GroupVersion = &nodev1alpha1.SchemeGroupVersion
	cfg.APIPath = "/apis"
	cfg.ContentType = runtime.ContentTypeJSON
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(s).WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return readablesClient{rc: rc, codec: runtime.NewParameterCodec(s)}
}

func (c readablesClient) list(ctx context.Context, namespace string, opts metav1.ListOptions) (*nodev1alpha1.NodeReadableList, error) {
	out := &nodev1alpha1.NodeReadableList{}
	err := c.rc.Get().Namespace(namespace).Resource(nodev1alpha1.ResourceName).VersionedParams(&opts, c.codec).Do(ctx).Into(out)
	return out, err
}

func (c readablesClient) watch(ctx context.Context, namespace string, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return c.rc.Get().Namespace(namespace).Resource(nodev1alpha1.ResourceName).VersionedParams(&opts, c.codec).Watch(ctx)
}

// classicListWatch declines client-go's watch-list mode, so its reflector lists, then watches
// from the list's position: the path an informer takes against a server that does not stream
// initial events.
type classicListWatch struct{ *cache.ListWatch }

func (classicListWatch) IsWatchListSemanticsUnSupported() bool { return true }

// informer is a stock client-go informer over the node's stream, in client-go's default
// watch-list mode (sendInitialEvents) or, with classic, by list then watch.
func (c readablesClient) informer(node string, classic bool) cache.SharedIndexInformer {
	selector := nodev1alpha1.NodeNameField + "=" + node
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = selector
			return c.list(ctx, "", opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector
			return c.watch(ctx, "", opts)
		},
	}
	if classic {
		return cache.NewSharedIndexInformer(classicListWatch{lw}, &nodev1alpha1.NodeReadable{}, 0, cache.Indexers{})
	}
	return cache.NewSharedIndexInformer(lw, &nodev1alpha1.NodeReadable{}, 0, cache.Indexers{})
}

func forNode(node string) metav1.ListOptions {
	return metav1.ListOptions{FieldSelector: nodev1alpha1.NodeNameField + "=" + node}
}

// startNodeWithSecret starts a server where pod default/p on node1 mounts secret s1, and returns
// node1's nodereadables client.
func startNodeWithSecret(t *testing.T) (*rbacServer, readablesClient) {
	t.Helper()
	s := startRBACServer(t)
	mustCreate(t, s.client.CoreV1().Secrets("default").Create, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s1"}})
	ensureServiceAccount(t, s.client, "default", "default")
	mustCreate(t, s.client.CoreV1().Pods("default").Create, newPod("p", onNode("node1"), withSecretVolume("s1")))
	return s, newReadablesClient(t, s.userConfig(t, "system:node:node1", "system:nodes"))
}

// TestNodeReadablesRefuseOthers: every request names one node by field selector and comes from
// that node; nobody else, cluster-admin included, reads a node's stream; a get is not served.
func TestNodeReadablesRefuseOthers(t *testing.T) {
	s, node1 := startNodeWithSecret(t)
	ctx := context.Background()
	admin := newReadablesClient(t, s.config)
	eventually(t, "node1 lists its secret", func() error {
		l, err := node1.list(ctx, "", forNode("node1"))
		if err == nil && !slices.ContainsFunc(l.Items, func(it nodev1alpha1.NodeReadable) bool { return it.Name == "secret.s1" && it.Secret != nil }) {
			err = fmt.Errorf("items %v", l.Items)
		}
		return err
	})
	for _, tc := range []struct {
		name   string
		client readablesClient
		opts   metav1.ListOptions
		want   func(error) bool
		reason string
	}{
		{"no selector", node1, metav1.ListOptions{}, apierrors.IsForbidden, "may only list or watch nodereadables with field selector nodeName=node1"},
		{"another node's name", node1, forNode("node2"), apierrors.IsForbidden, ""},
		{"two selectors", node1, metav1.ListOptions{FieldSelector: "nodeName=node1,metadata.name=secret.s1"}, apierrors.IsBadRequest, "exactly one field selector"},
		{"an unknown field", node1, metav1.ListOptions{FieldSelector: "nodeName=node1,spec.x=y"}, apierrors.IsBadRequest, "field label not supported"},
		{"cluster-admin naming node1", admin, forNode("node1"), apierrors.IsForbidden, `may not read the nodereadables of node "node1": only that node itself may`},
		{"cluster-admin without a selector", admin, metav1.ListOptions{}, apierrors.IsBadRequest, "field selector nodeName=<node>"},
	} {
		for _, verb := range []string{"list", "watch"} {
			var err error
			if verb == "list" {
				_, err = tc.client.list(ctx, "", tc.opts)
			} else {
				var w watch.Interface
				if w, err = tc.client.watch(ctx, "", tc.opts); err == nil {
					w.Stop()
				}
			}
			if !tc.want(err) || !strings.Contains(fmt.Sprint(err), tc.reason) {
				t.Errorf("%s, %s: got %v, want a refusal saying %q", tc.name, verb, err, tc.reason)
			}
		}
	}
	err := node1.rc.Get().Namespace("default").Resource(nodev1alpha1.ResourceName).Name("secret.s1").Do(ctx).Error()
	if !apierrors.IsMethodNotSupported(err) && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
		t.Errorf("get of one nodereadable: got %v, want it refused", err)
	}
	// Served as list and watch only, in discovery, OpenAPI and kubectl's tables.
	resources, err := s.client.Discovery().ServerResourcesForGroupVersion(nodev1alpha1.SchemeGroupVersion.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(resources.APIResources) != 1 || resources.APIResources[0].Name != nodev1alpha1.ResourceName || !resources.APIResources[0].Namespaced ||
		resources.APIResources[0].Kind != "NodeReadable" || !slices.Equal(resources.APIResources[0].Verbs, []string{"list", "watch"}) {
		t.Errorf("discovery: %+v", resources.APIResources)
	}
	doc, err := s.client.Discovery().RESTClient().Get().AbsPath("/openapi/v3/apis/node.idplane.io/v1alpha1").DoRaw(ctx)
	if err != nil || !strings.Contains(string(doc), "io.idplane.node.v1alpha1.NodeReadableList") {
		t.Errorf("OpenAPI v3 document: %v, %.200s", err, doc)
	}
	table := &metav1.Table{}
	err = node1.rc.Get().Resource(nodev1alpha1.ResourceName).VersionedParams(ptrTo(forNode("node1")), node1.codec).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Into(table)
	if err != nil {
		t.Fatal(err)
	}
	var columns []string
	for _, c := range table.ColumnDefinitions {
		columns = append(columns, c.Name)
	}
	if !slices.Equal(columns, []string{"Name", "Kind", "Node"}) || !slices.ContainsFunc(table.Rows, func(r metav1.TableRow) bool {
		return slices.Equal(r.Cells, []any{"secret.s1", "Secret", "node1"})
	}) {
		t.Errorf("table: columns %q, rows %v", columns, table.Rows)
	}

	// A watch resumed from a position this server never gave is 410, so client-go lists again.
	opts := forNode("node1")
	opts.ResourceVersion = "12345"
	if _, err := node1.watch(ctx, "", opts); !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Errorf("watch from a foreign position: got %v, want 410", err)
	}
}

func withSecretVolume(name string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: fmt.Sprintf("v%d", len(p.Spec.Volumes)), VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}})
	}
}

func withConfigMapVolume(name string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: fmt.Sprintf("v%d", len(p.Spec.Volumes)), VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}},
		}})
	}
}

// readableState is what a node sees: item name -> the object's resourceVersion and data.
type readableState map[string]string

func stateOfItems(items []*nodev1alpha1.NodeReadable) readableState {
	out := readableState{}
	for _, it := range items {
		switch {
		case it.Secret != nil:
			out[it.Namespace+"/"+it.Name] = it.Secret.ResourceVersion + " " + fmt.Sprint(it.Secret.Data)
		case it.ConfigMap != nil:
			out[it.Namespace+"/"+it.Name] = it.ConfigMap.ResourceVersion + " " + fmt.Sprint(it.ConfigMap.Data)
		}
	}
	return out
}

// universe is the objects the property test may create, in namespace default.
var (
	universeSecrets    = []string{"s0", "s1", "s2"}
	universeConfigMaps = []string{"c0", "c1"}
)

// getState is what plain GETs as the node allow and find, over the universe.
func getState(ctx context.Context, node kubernetes.Interface) (readableState, error) {
	out := readableState{}
	for _, name := range universeSecrets {
		s, err := node.CoreV1().Secrets("default").Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			out["default/"+nodev1alpha1.SecretPrefix+name] = s.ResourceVersion + " " + fmt.Sprint(s.Data)
		case apierrors.IsForbidden(err) || apierrors.IsNotFound(err):
		default:
			return nil, err
		}
	}
	// kube-root-ca.crt is in every pod's projected service account volume.
	for _, name := range append(slices.Clone(universeConfigMaps), "kube-root-ca.crt") {
		c, err := node.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			out["default/"+nodev1alpha1.ConfigMapPrefix+name] = c.ResourceVersion + " " + fmt.Sprint(c.Data)
		case apierrors.IsForbidden(err) || apierrors.IsNotFound(err):
		default:
			return nil, err
		}
	}
	return out, nil
}

// TestNodeReadablesFollowPlainGets: after every step of a random walk (secrets and configmaps
// created, changed, deleted and recreated; pods created on either node, moved, deleted), node1's
// list, and the state a stock informer built from node1's watch, equal what plain GETs as node1
// allow and find. Scripted steps first cover the named cases.
func TestNodeReadablesFollowPlainGets(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "audit.log")
	s := startRBACServerWith(t, func(o *Options) { o.Audit.LogOptions.Path = logPath })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	admin := s.client.CoreV1()
	ensureServiceAccount(t, s.client, "default", "default")
	nodeCfg := s.userConfig(t, "system:node:node1", "system:nodes")
	nodeKube := kubernetes.NewForConfigOrDie(nodeCfg)
	readables := newReadablesClient(t, nodeCfg)
	streaming, classic := readables.informer("node1", false), readables.informer("node1", true)
	go streaming.Run(ctx.Done())
	go classic.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), streaming.HasSynced, classic.HasSynced) {
		t.Fatal("informers did not sync")
	}

	counter := 0
	secret := func(name string) func() error {
		return func() error {
			counter++
			data := map[string][]byte{"v": []byte(fmt.Sprint(counter))}
			cur, err := admin.Secrets("default").Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				_, err = admin.Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.CreateOptions{})
				return err
			}
			if err != nil {
				return err
			}
			cur.Data = data
			_, err = admin.Secrets("default").Update(ctx, cur, metav1.UpdateOptions{})
			return err
		}
	}
	configMap := func(name string) func() error {
		return func() error {
			counter++
			data := map[string]string{"v": fmt.Sprint(counter)}
			cur, err := admin.ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				_, err = admin.ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.CreateOptions{})
				return err
			}
			if err != nil {
				return err
			}
			cur.Data = data
			_, err = admin.ConfigMaps("default").Update(ctx, cur, metav1.UpdateOptions{})
			return err
		}
	}
	deleteSecret := func(name string) func() error {
		return func() error {
			err := admin.Secrets("default").Delete(ctx, name, metav1.DeleteOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
	}
	deleteConfigMap := func(name string) func() error {
		return func() error {
			err := admin.ConfigMaps("default").Delete(ctx, name, metav1.DeleteOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
	}
	deletePod := func(name string) func() error {
		return func() error {
			err := admin.Pods("default").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
	}
	// pod (re)creates a pod bound to node using the named secrets and configmaps.
	pod := func(name, node string, secrets, configMaps []string) func() error {
		return func() error {
			if err := deletePod(name)(); err != nil {
				return err
			}
			mods := []func(*corev1.Pod){onNode(node)}
			for _, s := range secrets {
				mods = append(mods, withSecretVolume(s))
			}
			for _, c := range configMaps {
				mods = append(mods, withConfigMapVolume(c))
			}
			// A deleted pod may linger while its deletion completes; wait for the name to be free.
			var err error
			for range 100 {
				_, err = admin.Pods("default").Create(ctx, newPod(name, mods...), metav1.CreateOptions{})
				if !apierrors.IsAlreadyExists(err) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			return err
		}
	}

	check := func(step string) {
		t.Helper()
		var last string
		ok := false
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			want, err := getState(ctx, nodeKube)
			if err != nil {
				t.Fatalf("%s: GETs as node1: %v", step, err)
			}
			l, err := readables.list(ctx, "", forNode("node1"))
			if err != nil {
				t.Fatalf("%s: list: %v", step, err)
			}
			listed := stateOfItems(ptrs(l.Items))
			streamed, listedThenWatched := informerState(streaming), informerState(classic)
			if maps.Equal(want, listed) && maps.Equal(want, streamed) && maps.Equal(want, listedThenWatched) {
				ok = true
				break
			}
			last = fmt.Sprintf("GETs allow %v\nlist shows  %v\nwatch-list informer built %v\nlist-then-watch informer built %v", want, listed, streamed, listedThenWatched)
		}
		if !ok {
			t.Fatalf("%s: the node's stream disagrees with plain GETs:\n%s", step, last)
		}
	}

	scripted := []struct {
		name string
		do   func() error
	}{
		{"secret and configmap, no pod", func() error {
			if err := secret("s0")(); err != nil {
				return err
			}
			return configMap("c0")()
		}},
		{"a secret not referenced by any of the node's pods (node2's pod uses it)", pod("other", "node2", []string{"s0"}, nil)},
		{"pod on node1 using s0 and c0", pod("p0", "node1", []string{"s0"}, []string{"c0"})},
		{"secret changed", secret("s0")},
		{"pod referencing a secret not yet created", pod("p1", "node1", []string{"s1"}, nil)},
		{"that secret created", secret("s1")},
		{"secret deleted", deleteSecret("s1")},
		{"secret recreated", secret("s1")},
		{"pod deleted", deletePod("p1")},
		{"pod moved to node2 (recreated there)", pod("p0", "node2", []string{"s0"}, []string{"c0"})},
		{"pod back on node1", pod("p0", "node1", []string{"s0"}, []string{"c0"})},
		{"configmap deleted", deleteConfigMap("c0")},
	}
	for _, st := range scripted {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		check(st.name)
	}

	rng := rand.New(rand.NewPCG(22, uint64(time.Now().UnixNano())))
	pick := func(from []string) []string {
		var out []string
		for _, s := range from {
			if rng.IntN(2) == 0 {
				out = append(out, s)
			}
		}
		return out
	}
	for i := range 25 {
		var name string
		var do func() error
		switch rng.IntN(6) {
		case 0:
			s := universeSecrets[rng.IntN(len(universeSecrets))]
			name, do = "write secret "+s, secret(s)
		case 1:
			c := universeConfigMaps[rng.IntN(len(universeConfigMaps))]
			name, do = "write configmap "+c, configMap(c)
		case 2:
			if rng.IntN(2) == 0 {
				s := universeSecrets[rng.IntN(len(universeSecrets))]
				name, do = "delete secret "+s, deleteSecret(s)
			} else {
				c := universeConfigMaps[rng.IntN(len(universeConfigMaps))]
				name, do = "delete configmap "+c, deleteConfigMap(c)
			}
		case 3, 4:
			p, n := fmt.Sprintf("r%d", rng.IntN(3)), []string{"node1", "node2"}[rng.IntN(2)]
			ss, cs := pick(universeSecrets), pick(universeConfigMaps)
			name, do = fmt.Sprintf("pod %s on %s using %v %v", p, n, ss, cs), pod(p, n, ss, cs)
		default:
			p := fmt.Sprintf("r%d", rng.IntN(3))
			name, do = "delete pod "+p, deletePod(p)
		}
		name = fmt.Sprintf("random step %d: %s", i, name)
		if err := do(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		check(name)
	}

	// The node's lists and watches are audited like any read; the watch's event is complete once
	// the informer stops.
	cancel()
	waitForAuditEvents(t, logPath,
		auditQuery{user: "system:node:node1", verb: "list", resource: nodev1alpha1.ResourceName, decision: "allow", code: 200},
		auditQuery{user: "system:node:node1", verb: "watch", resource: nodev1alpha1.ResourceName, decision: "allow"},
	)
}

func informerState(inf cache.SharedIndexInformer) readableState {
	var items []*nodev1alpha1.NodeReadable
	for _, o := range inf.GetStore().List() {
		items = append(items, o.(*nodev1alpha1.NodeReadable))
	}
	return stateOfItems(items)
}

func ptrTo[T any](v T) *T { return &v }

func ptrs[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
