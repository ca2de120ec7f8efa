package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/idplane/idplane/internal/authz/node/nodetest"
	"github.com/idplane/idplane/internal/storage/etcdprogress"
)

func nodeClient(t *testing.T, s *rbacServer, name string) kubernetes.Interface {
	return s.user(t, "system:node:"+name, "system:nodes")
}

// podUsing is a pod in ns on node that uses secret s-<suffix>, configmap cm-<suffix> and claim
// pvc-<suffix>.
func podUsing(name, node, suffix string) *corev1.Pod {
	return newPod(name, func(p *corev1.Pod) {
		p.Spec.NodeName = node
		p.Spec.Volumes = []corev1.Volume{
			{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s-" + suffix}}},
			{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-" + suffix}}}},
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "pvc-" + suffix}}},
		}
	})
}

func TestNodeAuthorizerThroughTheServer(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	admin := s.client.CoreV1()
	ensureServiceAccount(t, s.client, "default", "default")
	for _, suffix := range []string{"1", "2"} {
		mustCreate(t, admin.Secrets("default").Create, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s-" + suffix}})
		mustCreate(t, admin.Secrets("default").Create, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pv-secret-" + suffix}})
		mustCreate(t, admin.ConfigMaps("default").Create, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + suffix}})
		mustCreate(t, admin.PersistentVolumes().Create, &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "pv-" + suffix},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				ClaimRef:    &corev1.ObjectReference{Namespace: "default", Name: "pvc-" + suffix},
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
					Driver: "csi.example.com", VolumeHandle: "h-" + suffix,
					NodePublishSecretRef: &corev1.SecretReference{Namespace: "default", Name: "pv-secret-" + suffix},
				}},
			},
		})
		mustCreate(t, admin.PersistentVolumeClaims("default").Create, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "pvc-" + suffix},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				VolumeName:  "pv-" + suffix,
			},
		})
	}
	mustCreate(t, admin.Pods("default").Create, podUsing("p1", "node1", "1"))
	mustCreate(t, admin.Pods("default").Create, podUsing("p2", "node2", "2"))
	node1 := nodeClient(t, s, "node1")

	reads := []struct {
		name string
		get  func(kubernetes.Interface, string) error
	}{
		{"secret", func(c kubernetes.Interface, sfx string) error {
			_, err := c.CoreV1().Secrets("default").Get(ctx, "s-"+sfx, metav1.GetOptions{})
			return err
		}},
		{"configmap", func(c kubernetes.Interface, sfx string) error {
			_, err := c.CoreV1().ConfigMaps("default").Get(ctx, "cm-"+sfx, metav1.GetOptions{})
			return err
		}},
		{"pvc", func(c kubernetes.Interface, sfx string) error {
			_, err := c.CoreV1().PersistentVolumeClaims("default").Get(ctx, "pvc-"+sfx, metav1.GetOptions{})
			return err
		}},
		{"pv", func(c kubernetes.Interface, sfx string) error {
			_, err := c.CoreV1().PersistentVolumes().Get(ctx, "pv-"+sfx, metav1.GetOptions{})
			return err
		}},
		{"pv secret", func(c kubernetes.Interface, sfx string) error {
			_, err := c.CoreV1().Secrets("default").Get(ctx, "pv-secret-"+sfx, metav1.GetOptions{})
			return err
		}},
	}
	for _, r := range reads {
		t.Run(r.name, func(t *testing.T) {
			if err := r.get(node1, "1"); err != nil {
				t.Errorf("node1 reading its pod's %s: %v", r.name, err)
			}
			if err := r.get(node1, "2"); !apierrors.IsForbidden(err) {
				t.Errorf("node1 reading node2's %s: got %v, want Forbidden", r.name, err)
			}
		})
	}
	if _, err := node1.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node1 listing secrets: got %v, want Forbidden", err)
	}
	if _, err := node1.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=s-1"}); err != nil {
		t.Errorf("node1 listing its one secret by name: %v", err)
	}
	if _, err := node1.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node1"}); err != nil {
		t.Errorf("node1 listing its pods: %v", err)
	}
	if _, err := node1.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node1 listing all pods: got %v, want Forbidden", err)
	}

	// An admin can ask why node1 may read its pod's PV secret; node1 itself may not ask.
	raw, err := s.client.CoreV1().RESTClient().Get().AbsPath(nodePathURL).
		Param("node", "node1").Param("kind", "secret").Param("namespace", "default").Param("name", "pv-secret-1").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var explained struct {
		Allowed bool
		Path    []string
	}
	if err := json.Unmarshal(raw, &explained); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	wantPath := []string{"secret default/pv-secret-1", "persistentvolume pv-1", "persistentvolumeclaim default/pvc-1", "pod default/p1", "node node1"}
	if !explained.Allowed || strings.Join(explained.Path, " > ") != strings.Join(wantPath, " > ") {
		t.Errorf("path: %s, want allowed along %v", raw, wantPath)
	}
	if err := node1.CoreV1().RESTClient().Get().AbsPath(nodePathURL).Param("node", "node1").Param("kind", "secret").Param("name", "x").Do(ctx).Error(); !apierrors.IsForbidden(err) {
		t.Errorf("node1 asking for paths: got %v, want Forbidden", err)
	}

	// The pod moves: deleted on node1, recreated on node2's side with node1's secret.
	if err := admin.Pods("default").Delete(ctx, "p1", metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
		t.Fatal(err)
	}
	// A delete only takes a path away, so nothing waits for it: the graph drops it as its watch
	// delivers the delete.
	eventually(t, "node1 refused s-1 after its pod went", func() error {
		if _, err := node1.CoreV1().Secrets("default").Get(ctx, "s-1", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
			return fmt.Errorf("got %v, want Forbidden", err)
		}
		return nil
	})
	mustCreate(t, admin.Pods("default").Create, podUsing("p1", "node2", "1"))
	if _, err := nodeClient(t, s, "node2").CoreV1().Secrets("default").Get(ctx, "s-1", metav1.GetOptions{}); err != nil {
		t.Errorf("node2 reading s-1 after the pod moved: %v", err)
	}

	// The reason a human can act on reaches a SubjectAccessReview.
	review, err := s.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sarFor("system:node:node1", []string{"system:nodes"}, "default", "get", "secrets", "s-2"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if review.Status.Allowed || review.Status.Reason == "" {
		t.Errorf("SAR for node1 reading s-2: %+v, want refused with a reason", review.Status)
	}
}

// TestNodeReadAfterBindWaitsForTheGraph builds the Node authorizer as the server does, its
// freshness wait reading this server's etcd, on informers whose events the test holds: the graph
// lags the store for as long as the test likes.
func TestNodeReadAfterBindWaitsForTheGraph(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	admin := s.client.CoreV1()
	ensureServiceAccount(t, s.client, "default", "default")
	etcdClient, err := newEtcdClient([]string{s.etcd.clientURL}, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { etcdClient.Close() })
	store := &announcingKV{KV: etcdClient, read: make(chan struct{}, 100)}
	factory := informers.NewSharedInformerFactory(s.client, 0)
	gate := &nodetest.Gate{}
	prefixes, err := graphKeyPrefixes(prefixStorage(storagePrefix))
	if err != nil {
		t.Fatal(err)
	}
	a, populator, err := nodeAuthorizer(etcdprogress.NewReader(store, prefixes),
		gate.Pods(factory.Core().V1().Pods()), gate.PersistentVolumes(factory.Core().V1().PersistentVolumes()),
		gate.VolumeAttachments(factory.Storage().V1().VolumeAttachments()), gate.PodCertificateRequests(factory.Certificates().V1().PodCertificateRequests()))
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() {
		close(stop)
		factory.Shutdown()
	})
	factory.Start(stop)
	if !cache.WaitForCacheSync(stop, populator.HasSynced) {
		t.Fatal("the graph did not sync")
	}
	readSecret := func(name string) authorizer.Decision {
		u := &user.DefaultInfo{Name: "system:node:node1", Groups: []string{"system:nodes", "system:authenticated"}}
		d, _, _ := a.Authorize(ctx, authorizer.AttributesRecord{User: u, Verb: "get", Resource: "secrets", Namespace: "default", Name: name, ResourceRequest: true})
		return d
	}
	mustCreate(t, admin.Secrets("default").Create, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s-late"}})
	mustCreate(t, admin.Pods("default").Create, newPod("late", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s-late"}}}}
	}))

	// Hold the graph, bind, and read once the bind is held back from the graph; release it only
	// when the read waits for the graph (it reads the store's progress only then), so the test
	// exercises the wait whatever the timing.
	hold := gate.Pause()
	if err := admin.Pods("default").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "late"}, Target: corev1.ObjectReference{Kind: "Node", Name: "node1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	within(t, "the bind to reach the held graph", hold.Blocked())
	read := make(chan authorizer.Decision, 1)
	go func() { read <- readSecret("s-late") }()
	within(t, "the read to wait for the graph", store.read)
	hold.Release()
	if d := <-read; d != authorizer.DecisionAllow {
		t.Errorf("reading the secret right after the bind, graph held then released: %v, want Allow", d)
	}

	// A graph that stays behind past the bound fails closed.
	mustCreate(t, admin.Secrets("default").Create, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s-later"}})
	mustCreate(t, admin.Pods("default").Create, newPod("later", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s-later"}}}}
	}))
	hold = gate.Pause()
	defer hold.Release()
	if err := admin.Pods("default").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "later"}, Target: corev1.ObjectReference{Kind: "Node", Name: "node1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := readSecret("s-later"); d == authorizer.DecisionAllow {
		t.Error("reading while the graph stays held: Allow, want refused")
	}
}

// TestNodeRefusalWaitsOnTheStore: the server's own Node authorizer, asked about an unrelated
// secret, reads the store's progress under the key prefixes of its storage configuration and
// refuses once its graph is seen to be current, not for want of an answer.
func TestNodeRefusalWaitsOnTheStore(t *testing.T) {
	s := startRBACServer(t)
	waits := func(result string) float64 {
		v, _ := scrapeMetrics(t, s.testServer)("apiserver_node_authorizer_graph_freshness_waits_total", map[string]string{"result": result})
		return v
	}
	caughtUp, unavailable := waits("caught_up"), waits("unavailable")
	if _, err := nodeClient(t, s, "node1").CoreV1().Secrets("default").Get(context.Background(), "unrelated", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("node1 reading an unrelated secret: got %v, want Forbidden", err)
	}
	if got := waits("caught_up"); got != caughtUp+1 {
		t.Errorf("freshness waits that caught up: %v, want %v", got, caughtUp+1)
	}
	if got := waits("unavailable"); got != unavailable {
		t.Errorf("freshness waits without the store's progress: %v, want %v", got, unavailable)
	}
}

// prefixStorage is a storage configuration that keeps every resource under one prefix, by its
// resource name, as the server's does.
type prefixStorage string

func (p prefixStorage) GetRESTOptions(resource schema.GroupResource, _ runtime.Object) (generic.RESTOptions, error) {
	return generic.RESTOptions{StorageConfig: &storagebackend.ConfigForResource{Config: storagebackend.Config{Prefix: string(p)}}, ResourcePrefix: resource.Resource}, nil
}

// announcingKV sends on read at each transaction: the freshness wait's reads of the store.
type announcingKV struct {
	clientv3.KV
	read chan struct{}
}

func (s *announcingKV) Txn(ctx context.Context) clientv3.Txn {
	s.read <- struct{}{}
	return s.KV.Txn(ctx)
}

// within waits for ch to close, failing the test if it takes longer than any correct run would.
func within(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestNodeRestrictionThroughTheServer(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	node1 := nodeClient(t, s, "node1")
	self, err := node1.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("node1 registering itself: %v", err)
	}
	if _, err := node1.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node9"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node1 registering node9: got %v, want Forbidden", err)
	}
	status := []byte(`{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`)
	if _, err := node1.CoreV1().Nodes().Patch(ctx, "node1", types.StrategicMergePatchType, status, metav1.PatchOptions{}, "status"); err != nil {
		t.Errorf("node1 updating its status: %v", err)
	}
	if _, err := node1.CoreV1().Nodes().Patch(ctx, "node1", types.MergePatchType, []byte(`{"metadata":{"labels":{"node-restriction.kubernetes.io/x":"y"}}}`), metav1.PatchOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node1 setting a node-restriction label: got %v, want Forbidden", err)
	}
	mustCreate(t, s.client.CoreV1().Nodes().Create, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node2"}})
	if _, err := node1.CoreV1().Nodes().Patch(ctx, "node2", types.StrategicMergePatchType, status, metav1.PatchOptions{}, "status"); !apierrors.IsForbidden(err) {
		t.Errorf("node1 updating node2's status: got %v, want Forbidden", err)
	}

	// As kubelets do, a mirror pod is owned by its Node.
	mirror := func(name, nodeName string, mutate ...func(*corev1.Pod)) *corev1.Pod {
		return newPod(name, append([]func(*corev1.Pod){func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
			p.Spec.NodeName = nodeName
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: self.Name, UID: self.UID, Controller: ptr(true)}}
		}}, mutate...)...)
	}
	if _, err := node1.CoreV1().Pods("default").Create(ctx, mirror("static-web", "node1"), metav1.CreateOptions{}); err != nil {
		t.Errorf("node1 creating its mirror pod: %v", err)
	}
	if _, err := node1.CoreV1().Pods("default").Create(ctx, mirror("other", "node2"), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node1 creating node2's mirror pod: got %v, want Forbidden", err)
	}
	if _, err := node1.CoreV1().Pods("default").Create(ctx, newPod("plain", onNode("node1")), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node1 creating a non-mirror pod: got %v, want Forbidden", err)
	}
	withSecret := mirror("sneaky", "node1", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "any"}}}}
	})
	if _, err := node1.CoreV1().Pods("default").Create(ctx, withSecret, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node1 creating a mirror pod that uses a secret: got %v, want Forbidden", err)
	}
	// NodeRestriction answers before validation: a node's forbidden request is a 403 whatever its
	// shape, never a 422 that explains the validation rules.
	if _, err := node1.CoreV1().Pods("default").Create(ctx, mirror("unbound", ""), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node1 creating an unbound mirror pod: got %v, want Forbidden", err)
	}
	shapeless := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "shapeless"}}
	if _, err := node1.CoreV1().Pods("default").Create(ctx, shapeless, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node1 creating a pod without containers: got %v, want Forbidden", err)
	}
	// Mirror-pod validation, for any user: the annotation needs a node and never changes.
	if _, err := s.client.CoreV1().Pods("default").Create(ctx, mirror("unbound", ""), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("mirror pod without nodeName: got %v, want Invalid", err)
	}
	_, err = s.client.CoreV1().Pods("default").Patch(ctx, "static-web", types.MergePatchType, []byte(`{"metadata":{"annotations":{"kubernetes.io/config.mirror":null}}}`), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("removing the mirror annotation: got %v, want Invalid", err)
	}

	ensureServiceAccount(t, s.client, "default", "default")
	mustCreate(t, s.client.CoreV1().Pods("default").Create, newPod("theirs", onNode("node2")))
	if err := node1.CoreV1().Pods("default").Delete(ctx, "theirs", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node1 deleting node2's pod: got %v, want Forbidden", err)
	}
	if err := node1.CoreV1().Pods("default").Delete(ctx, "static-web", metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
		t.Errorf("node1 deleting its own pod: %v", err)
	}

	lease := func(name string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr(name)}}
	}
	if _, err := node1.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease("node1"), metav1.CreateOptions{}); err != nil {
		t.Errorf("node1 creating its lease: %v", err)
	}
	if _, err := node1.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease("node2"), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node1 creating node2's lease: got %v, want Forbidden", err)
	}
	// The design lets a node delete its own Node object.
	if err := node1.CoreV1().Nodes().Delete(ctx, "node2", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node1 deleting node2: got %v, want Forbidden", err)
	}
	if err := node1.CoreV1().Nodes().Delete(ctx, "node1", metav1.DeleteOptions{}); err != nil {
		t.Errorf("node1 deleting itself: %v", err)
	}
}

func TestWithoutModeNodeThereIsNoGraph(t *testing.T) {
	ts := startTestServer(t, t.TempDir(), func(o *Options) { o.AuthorizationModes = []string{"RBAC"} })
	err := ts.client.CoreV1().RESTClient().Get().AbsPath(nodePathURL).Param("node", "n").Param("kind", "secret").Param("name", "x").Do(context.Background()).Error()
	if !apierrors.IsNotFound(err) {
		t.Errorf("path endpoint without mode Node: got %v, want NotFound", err)
	}
}
