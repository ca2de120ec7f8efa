package noderestriction

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

var (
	myNode    = &user.DefaultInfo{Name: "system:node:mynode", Groups: []string{"system:nodes", "system:authenticated"}}
	ghostNode = &user.DefaultInfo{Name: "system:node:ghost", Groups: []string{"system:nodes"}}
	emptyNode = &user.DefaultInfo{Name: "system:node:", Groups: []string{"system:nodes"}}
	// notNode has a node's name but not the group: the plugin leaves it alone.
	notNode = &user.DefaultInfo{Name: "system:node:mynode", Groups: []string{"system:authenticated"}}
	bob     = &user.DefaultInfo{Name: "bob", Groups: []string{"system:authenticated"}}
)

var (
	podsGVR     = corev1.SchemeGroupVersion.WithResource("pods")
	nodesGVR    = corev1.SchemeGroupVersion.WithResource("nodes")
	pvcsGVR     = corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
	accountsGVR = corev1.SchemeGroupVersion.WithResource("serviceaccounts")
	cmGVR       = corev1.SchemeGroupVersion.WithResource("configmaps")
	leasesGVR   = coordinationv1.SchemeGroupVersion.WithResource("leases")
	csiNodesGVR = storagev1.SchemeGroupVersion.WithResource("csinodes")
	csrsGVR     = certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests")
)

// request is one admission request; its zero operation options and kind are irrelevant here.
type request struct {
	obj, old    runtime.Object
	gvr         schema.GroupVersionResource
	subresource string
	namespace   string
	name        string
	op          admission.Operation
	user        user.Info
}

func (r request) attributes() admission.Attributes {
	var opts runtime.Object
	switch r.op {
	case admission.Create:
		opts = &metav1.CreateOptions{}
	case admission.Update:
		opts = &metav1.UpdateOptions{}
	case admission.Delete:
		opts = &metav1.DeleteOptions{}
	}
	return admission.NewAttributesRecord(r.obj, r.old, schema.GroupVersionKind{}, r.namespace, r.name, r.gvr, r.subresource, r.op, opts, false, r.user)
}

// outcome: allowed, a 403 whose message contains the text, or a 404 for a missing object.
type outcome struct {
	forbidden string
	notFound  bool
}

var allowed = outcome{}

func denied(msg string) outcome { return outcome{forbidden: msg} }

var notFound = outcome{notFound: true}

type testCase struct {
	name string
	req  request
	want outcome
}

func run(t *testing.T, p *Plugin, cases []testCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Both phases judge alike: the mutating one answers before validation, the
			// validating one sees what later plugins made of the object.
			phases := []struct {
				name  string
				judge func(context.Context, admission.Attributes, admission.ObjectInterfaces) error
			}{{"Admit", p.Admit}, {"Validate", p.Validate}}
			for _, phase := range phases {
				err := phase.judge(context.Background(), tc.req.attributes(), nil)
				switch {
				case tc.want.notFound:
					if !apierrors.IsNotFound(err) {
						t.Fatalf("%s = %v; want NotFound", phase.name, err)
					}
				case tc.want.forbidden != "":
					if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.want.forbidden) {
						t.Fatalf("%s = %v; want 403 containing %q", phase.name, err, tc.want.forbidden)
					}
				case err != nil:
					t.Fatalf("%s = %v; want allowed", phase.name, err)
				}
			}
		})
	}
}

// newPlugin returns a plugin whose caches hold objs, synced, as does the store behind them.
func newPlugin(t *testing.T, objs ...runtime.Object) *Plugin {
	t.Helper()
	client := fake.NewClientset(objs...)
	return newPluginWithStore(t, client, client)
}

// newPluginWithStore returns a plugin whose caches are filled from cached and whose live reads go
// to store.
func newPluginWithStore(t *testing.T, cached, store *fake.Clientset) *Plugin {
	t.Helper()
	factory := informers.NewSharedInformerFactory(cached, 0)
	p := New()
	p.SetExternalKubeInformerFactory(factory)
	p.SetExternalKubeClientSet(store)
	p.SetAPIAudiences(authenticator.Audiences{apiAudience})
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		factory.Shutdown()
	})
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("cache of %v did not sync", typ)
		}
	}
	return p
}

func node(name string, mods ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name + "-uid")}}
	for _, m := range mods {
		m(n)
	}
	return n
}

func pod(name, nodeName string, mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid")},
		Spec: corev1.PodSpec{
			NodeName:   nodeName,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

// cachedObjects are what the plugin's caches hold in every test.
func cachedObjects() []runtime.Object {
	return []runtime.Object{
		node("mynode"), node("othernode"),
		pod("mypod", "mynode"), pod("otherpod", "othernode"), pod("unboundpod", ""),
	}
}

// mirrorPod is a mirror pod the node "mynode" may create; mods make it one it may not.
func mirrorPod(mods ...func(*corev1.Pod)) *corev1.Pod {
	return pod("static-mynode", "mynode", append([]func(*corev1.Pod){func(p *corev1.Pod) {
		p.UID = ""
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
		p.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Node", Name: "mynode", UID: "mynode-uid", Controller: ptr.To(true),
		}}
		p.Spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc/kubernetes"}}}}
	}}, mods...)...)
}

func withVolume(src corev1.VolumeSource) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "v", VolumeSource: src})
	}
}

func withProjection(src corev1.VolumeProjection) func(*corev1.Pod) {
	return withVolume(corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{src}}})
}

func withEnv(env corev1.EnvVar) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, env) }
}

func withOwner(mod func(*metav1.OwnerReference)) func(*corev1.Pod) {
	return func(p *corev1.Pod) { mod(&p.OwnerReferences[0]) }
}

func createPod(p *corev1.Pod, u user.Info) request {
	return request{obj: p, gvr: podsGVR, namespace: p.Namespace, name: p.Name, op: admission.Create, user: u}
}

func TestIdentity(t *testing.T) {
	p := newPlugin(t, cachedObjects()...)
	plainPod := pod("plain", "othernode")
	run(t, p, []testCase{
		{"non-node creates a plain pod", createPod(plainPod, bob), allowed},
		{"non-node updates any node's taints", request{obj: node("othernode"), old: node("othernode", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}} }), gvr: nodesGVR, name: "othernode", op: admission.Update, user: bob}, allowed},
		{"node name without the nodes group is not a node", createPod(plainPod, notNode), allowed},
		{"node with an empty name is refused a pod create", createPod(mirrorPod(), emptyNode), denied(`could not determine node from user "system:node:"`)},
		{"node with an empty name is refused even an unrestricted resource", request{obj: &corev1.ConfigMap{}, gvr: cmGVR, namespace: "ns", name: "cm", op: admission.Create, user: emptyNode}, denied("could not determine node")},
		{"node writes a resource this plugin does not restrict", request{obj: &corev1.ConfigMap{}, gvr: cmGVR, namespace: "ns", name: "cm", op: admission.Create, user: myNode}, allowed},
	})
}

func TestMirrorPodCreate(t *testing.T) {
	p := newPlugin(t, cachedObjects()...)
	cases := []testCase{
		{"own mirror pod", createPod(mirrorPod(), myNode), allowed},
		{"own mirror pod with node-local volumes", createPod(mirrorPod(
			withVolume(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}),
			withVolume(corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{}}),
			withProjection(corev1.VolumeProjection{DownwardAPI: &corev1.DownwardAPIProjection{}}),
			withVolume(corev1.VolumeSource{CephFS: &corev1.CephFSVolumeSource{Monitors: []string{"m"}}}),
		), myNode), allowed},
		{"pod without the mirror annotation", createPod(mirrorPod(func(p *corev1.Pod) { p.Annotations = nil }), myNode), denied("can only create mirror pods")},
		{"mirror pod bound to another node", createPod(mirrorPod(func(p *corev1.Pod) { p.Spec.NodeName = "othernode" }), myNode), denied("can only create pods with spec.nodeName set to itself")},
		{"unbound mirror pod", createPod(mirrorPod(func(p *corev1.Pod) { p.Spec.NodeName = "" }), myNode), denied("spec.nodeName set to itself")},
		{"mirror pod without an owner reference", createPod(mirrorPod(func(p *corev1.Pod) { p.OwnerReferences = nil }), myNode), denied("with an owner reference set to itself")},
		{"mirror pod with two owner references", createPod(mirrorPod(func(p *corev1.Pod) { p.OwnerReferences = append(p.OwnerReferences, p.OwnerReferences[0]) }), myNode), denied("a single owner reference")},
		{"mirror pod owned by another node", createPod(mirrorPod(withOwner(func(o *metav1.OwnerReference) { o.Name = "othernode"; o.UID = "othernode-uid" })), myNode), denied("with an owner reference set to itself")},
		{"mirror pod owned by something other than a Node", createPod(mirrorPod(withOwner(func(o *metav1.OwnerReference) { o.Kind = "ConfigMap" })), myNode), denied("with an owner reference set to itself")},
		{"mirror pod owned through another API version", createPod(mirrorPod(withOwner(func(o *metav1.OwnerReference) { o.APIVersion = "v2" })), myNode), denied("with an owner reference set to itself")},
		{"mirror pod whose owner is not its controller", createPod(mirrorPod(withOwner(func(o *metav1.OwnerReference) { o.Controller = nil })), myNode), denied("a controller owner reference")},
		{"mirror pod blocking owner deletion", createPod(mirrorPod(withOwner(func(o *metav1.OwnerReference) { o.BlockOwnerDeletion = ptr.To(true) })), myNode), denied("must not set blockOwnerDeletion")},
		{"mirror pod with a stale node UID", createPod(mirrorPod(withOwner(func(o *metav1.OwnerReference) { o.UID = "old-uid" })), myNode), denied("UID mismatch")},
		{"mirror pod of a node that is not registered", createPod(mirrorPod(func(p *corev1.Pod) {
			p.Spec.NodeName = "ghost"
			p.OwnerReferences[0].Name, p.OwnerReferences[0].UID = "ghost", "ghost-uid"
		}), ghostNode), notFound},
	}
	refs := []struct {
		name     string
		mod      func(*corev1.Pod)
		resource string
	}{
		{"service account", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "sa" }, "reference serviceaccounts"},
		{"deprecated service account field", func(p *corev1.Pod) { p.Spec.DeprecatedServiceAccount = "sa" }, "reference serviceaccounts"},
		{"image pull secret", func(p *corev1.Pod) { p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "s"}} }, "reference secrets"},
		{"secret in env", withEnv(corev1.EnvVar{Name: "E", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}), "reference secrets"},
		{"secret in an init container's envFrom", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Image: "i", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{}}}}}
		}, "reference secrets"},
		{"secret in an ephemeral container's env", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "e", Image: "e", Env: []corev1.EnvVar{{Name: "E", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}},
			}}}
		}, "reference secrets"},
		{"secret volume", withVolume(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}), "reference secrets"},
		{"projected secret", withProjection(corev1.VolumeProjection{Secret: &corev1.SecretProjection{}}), "reference secrets"},
		{"cephfs volume with a secret", withVolume(corev1.VolumeSource{CephFS: &corev1.CephFSVolumeSource{SecretRef: &corev1.LocalObjectReference{Name: "s"}}}), "reference secrets"},
		{"CSI volume with a publish secret", withVolume(corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "s"}}}), "reference csidrivers (spec.volumes[1].csi.driver)"},
		{"azureFile volume", withVolume(corev1.VolumeSource{AzureFile: &corev1.AzureFileVolumeSource{SecretName: "s"}}), "reference secrets"},
		{"configmap in env", withEnv(corev1.EnvVar{Name: "E", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "k"}}}), "reference configmaps"},
		{"configmap in envFrom", func(p *corev1.Pod) {
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{}}}
		}, "reference configmaps"},
		{"configmap volume", withVolume(corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}), "reference configmaps"},
		{"projected configmap", withProjection(corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{}}), "reference configmaps"},
		{"resource claim", func(p *corev1.Pod) { p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu"}} }, "reference resourceclaims"},
		{"projected service account token", withProjection(corev1.VolumeProjection{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "t"}}), "reference serviceaccounts (spec.volumes[1].projected.sources[0].serviceAccountToken)"},
		{"projected cluster trust bundle", withProjection(corev1.VolumeProjection{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Path: "b"}}), "reference clustertrustbundles"},
		{"projected pod certificate", withProjection(corev1.VolumeProjection{PodCertificate: &corev1.PodCertificateProjection{SignerName: "example.com/s"}}), "reference podcertificaterequests (spec.volumes[1].projected.sources[0].podCertificate.signerName)"},
		{"persistent volume claim", withVolume(corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}), "reference persistentvolumeclaims"},
		{"ephemeral volume", withVolume(corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}), "reference persistentvolumeclaims (spec.volumes[1].ephemeral)"},
		{"CSI volume", withVolume(corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d"}}), "reference csidrivers"},
		{"glusterfs volume", withVolume(corev1.VolumeSource{Glusterfs: &corev1.GlusterfsVolumeSource{}}), "reference endpoints"},
		{"volume without a source", withVolume(corev1.VolumeSource{}), "a volume source it cannot judge (spec.volumes[1])"},
		{"projection without a source", withProjection(corev1.VolumeProjection{}), "a volume source it cannot judge (spec.volumes[1].projected.sources[0])"},
	}
	for _, r := range refs {
		cases = append(cases, testCase{"mirror pod referencing " + r.name, createPod(mirrorPod(r.mod), myNode), denied(r.resource)})
	}
	run(t, p, cases)
}

func TestPodWrites(t *testing.T) {
	p := newPlugin(t, cachedObjects()...)
	mine, other, unbound := pod("mypod", "mynode"), pod("otherpod", "othernode"), pod("unboundpod", "")
	del := func(name string, old runtime.Object) request {
		return request{old: old, gvr: podsGVR, namespace: "ns", name: name, op: admission.Delete, user: myNode}
	}
	status := func(obj, old *corev1.Pod, op admission.Operation) request {
		return request{obj: obj, old: old, gvr: podsGVR, subresource: "status", namespace: "ns", name: old.Name, op: op, user: myNode}
	}
	evict := func(name, bodyName string, op admission.Operation) request {
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: bodyName}}
		return request{obj: ev, gvr: podsGVR, subresource: "eviction", namespace: "ns", name: name, op: op, user: myNode}
	}
	claim := func(name string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr.To(name)}}
		}
	}
	run(t, p, []testCase{
		{"update of a pod bound to itself", request{obj: mine, old: mine, gvr: podsGVR, namespace: "ns", name: "mypod", op: admission.Update, user: myNode}, denied("can only create and delete mirror pods")},

		{"delete of a pod bound to itself", del("mypod", nil), allowed},
		{"delete of a pod bound to another node", del("otherpod", nil), denied("can only delete pods with spec.nodeName set to itself")},
		{"delete of an unbound pod", del("unboundpod", nil), denied("can only delete pods with spec.nodeName set to itself")},
		{"delete of a missing pod", del("nopod", nil), notFound},
		{"deletecollection item bound to itself", del("", mine), allowed},
		{"deletecollection item bound to another node", del("", other), denied("can only delete pods with spec.nodeName set to itself")},
		{"delete judged by the stored pod rather than the cache", del("fresh", pod("fresh", "mynode")), allowed},

		{"status of a pod bound to itself", status(mine, mine, admission.Update), allowed},
		{"status of a pod bound to another node", status(other, other, admission.Update), denied("can only update pod status for pods with spec.nodeName set to itself")},
		{"status of an unbound pod", status(unbound, unbound, admission.Update), denied("spec.nodeName set to itself")},
		{"status update changing labels", status(pod("mypod", "mynode", func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }), mine, admission.Update), denied("cannot update labels through pod status")},
		{"status update keeping labels", status(pod("mypod", "mynode", func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }), pod("mypod", "mynode", func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }), admission.Update), allowed},
		{"status update adding a resource claim status", status(pod("mypod", "mynode", claim("c1")), mine, admission.Update), denied("cannot update resource claim statuses")},
		{"status update repointing a resource claim", status(pod("mypod", "mynode", claim("c2")), pod("mypod", "mynode", claim("c1")), admission.Update), denied("cannot update resource claim statuses")},
		{"status update keeping resource claims", status(pod("mypod", "mynode", claim("c1")), pod("mypod", "mynode", claim("c1")), admission.Update), allowed},
		{"status update setting the extended resource claim", status(pod("mypod", "mynode", func(p *corev1.Pod) {
			p.Status.ExtendedResourceClaimStatus = &corev1.PodExtendedResourceClaimStatus{ResourceClaimName: "x"}
		}), mine, admission.Update), denied("cannot update extended resource claim status")},
		{"status create", status(mine, mine, admission.Create), denied("unexpected operation")},
		{"status delete", request{gvr: podsGVR, subresource: "status", namespace: "ns", name: "mypod", op: admission.Delete, user: myNode}, denied("unexpected operation")},

		{"eviction of a pod bound to itself", evict("mypod", "mypod", admission.Create), allowed},
		{"eviction of a pod bound to another node", evict("otherpod", "otherpod", admission.Create), denied("can only evict pods with spec.nodeName set to itself")},
		{"eviction of an unbound pod", evict("unboundpod", "unboundpod", admission.Create), denied("can only evict pods")},
		{"eviction of a missing pod", evict("nopod", "nopod", admission.Create), notFound},
		{"eviction naming the pod only in its body", evict("", "mypod", admission.Create), allowed},
		{"eviction naming another node's pod only in its body", evict("", "otherpod", admission.Create), denied("can only evict pods")},
		{"eviction naming no pod", evict("", "", admission.Create), denied("could not determine pod from request data")},
		{"eviction update", evict("mypod", "mypod", admission.Update), denied("unexpected operation")},

		{"binding", request{obj: &corev1.Binding{}, gvr: podsGVR, subresource: "binding", namespace: "ns", name: "mypod", op: admission.Create, user: myNode}, denied(`unexpected pod subresource "binding"`)},
		{"ephemeral containers", request{obj: mine, old: mine, gvr: podsGVR, subresource: "ephemeralcontainers", namespace: "ns", name: "mypod", op: admission.Update, user: myNode}, denied("unexpected pod subresource")},
		{"resize", request{obj: mine, old: mine, gvr: podsGVR, subresource: "resize", namespace: "ns", name: "mypod", op: admission.Update, user: myNode}, denied("unexpected pod subresource")},

		{"non-node deletes another node's pod", request{gvr: podsGVR, namespace: "ns", name: "otherpod", op: admission.Delete, user: bob}, allowed},
	})
}

func TestNodeWrites(t *testing.T) {
	p := newPlugin(t, cachedObjects()...)
	withLabels := func(kv ...string) func(*corev1.Node) {
		return func(n *corev1.Node) {
			n.Labels = map[string]string{}
			for i := 0; i < len(kv); i += 2 {
				n.Labels[kv[i]] = kv[i+1]
			}
		}
	}
	withTaint := func(value string) func(*corev1.Node) {
		return func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "k", Value: value, Effect: corev1.TaintEffectNoSchedule}}
		}
	}
	withConfig := func(name string) func(*corev1.Node) {
		return func(n *corev1.Node) {
			//lint:ignore SA1019 a node that still sends the deprecated field is what is tested.
			n.Spec.ConfigSource = &corev1.NodeConfigSource{ConfigMap: &corev1.ConfigMapNodeConfigSource{Namespace: "kube-system", Name: name, KubeletConfigKey: "kubelet"}}
		}
	}
	create := func(n *corev1.Node, name string) request {
		return request{obj: n, gvr: nodesGVR, name: name, op: admission.Create, user: myNode}
	}
	update := func(n, old *corev1.Node, sub string) request {
		return request{obj: n, old: old, gvr: nodesGVR, subresource: sub, name: old.Name, op: admission.Update, user: myNode}
	}
	del := func(name string, old runtime.Object) request {
		return request{old: old, gvr: nodesGVR, name: name, op: admission.Delete, user: myNode}
	}
	kubeletLabels := []string{
		"kubernetes.io/hostname", "h", "kubernetes.io/os", "linux", "kubernetes.io/arch", "amd64",
		"beta.kubernetes.io/os", "linux", "beta.kubernetes.io/arch", "amd64",
		"topology.kubernetes.io/zone", "z", "topology.kubernetes.io/region", "r",
		"failure-domain.beta.kubernetes.io/zone", "z", "failure-domain.beta.kubernetes.io/region", "r",
		"beta.kubernetes.io/instance-type", "t", "node.kubernetes.io/instance-type", "t",
		"kubelet.kubernetes.io/x", "v", "a.kubelet.kubernetes.io/x", "v", "node.kubernetes.io/x", "v", "a.node.kubernetes.io/x", "v",
		"example.com/x", "v", "plain", "v",
	}
	mine := node("mynode")
	run(t, p, []testCase{
		{"create of its own Node", create(mine, "mynode"), allowed},
		{"create of its own Node named only in the object", create(mine, ""), allowed},
		{"create of another Node", create(node("othernode"), "othernode"), denied(`node "mynode" is not allowed to modify node "othernode"`)},
		{"create of another Node named only in the object", create(node("othernode"), ""), denied("is not allowed to modify node")},
		{"create with taints", create(node("mynode", withTaint("a")), "mynode"), allowed},
		{"create with the labels a kubelet owns", create(node("mynode", withLabels(kubeletLabels...)), "mynode"), allowed},
		{"create with a node-restriction label", create(node("mynode", withLabels("node-restriction.kubernetes.io/pool", "secure")), "mynode"), denied("is not allowed to set the following labels: node-restriction.kubernetes.io/pool")},
		{"create with a node-restriction subdomain label", create(node("mynode", withLabels("a.node-restriction.kubernetes.io/pool", "secure")), "mynode"), denied("a.node-restriction.kubernetes.io/pool")},
		{"create with other kubernetes.io and k8s.io labels", create(node("mynode", withLabels("other.kubernetes.io/x", "v", "other.k8s.io/x", "v", "kubernetes.io/role", "master")), "mynode"), denied("labels: kubernetes.io/role, other.k8s.io/x, other.kubernetes.io/x")},
		{"create with a configSource", create(node("mynode", withConfig("a")), "mynode"), denied("non-nil configSource")},

		{"update of its own Node", update(mine, mine, ""), allowed},
		{"update of its own Node's status", update(mine, mine, "status"), allowed},
		{"update of another Node", update(node("othernode"), node("othernode"), ""), denied("is not allowed to modify node")},
		{"update of another Node's status", update(node("othernode"), node("othernode"), "status"), denied("is not allowed to modify node")},
		{"update keeping taints", update(node("mynode", withTaint("a")), node("mynode", withTaint("a")), ""), allowed},
		{"update adding a taint", update(node("mynode", withTaint("a")), mine, ""), denied("is not allowed to modify taints")},
		{"update removing a taint", update(mine, node("mynode", withTaint("a")), ""), denied("is not allowed to modify taints")},
		{"update changing a taint", update(node("mynode", withTaint("b")), node("mynode", withTaint("a")), ""), denied("is not allowed to modify taints")},
		{"status update removing a taint", update(mine, node("mynode", withTaint("a")), "status"), denied("is not allowed to modify taints")},
		{"update setting a configSource", update(node("mynode", withConfig("a")), mine, ""), denied("configSource to a new non-nil configSource")},
		{"update changing the configSource", update(node("mynode", withConfig("b")), node("mynode", withConfig("a")), ""), denied("configSource to a new non-nil configSource")},
		{"update keeping the configSource", update(node("mynode", withConfig("a")), node("mynode", withConfig("a")), ""), allowed},
		{"update dropping the configSource", update(mine, node("mynode", withConfig("a")), ""), allowed},
		{"update adding an owner reference", update(node("mynode", func(n *corev1.Node) {
			n.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Namespace", Name: "gone", UID: "u"}}
		}), mine, ""), denied("is not allowed to modify ownerReferences")},
		{"update adding kubelet labels", update(node("mynode", withLabels(kubeletLabels...)), mine, ""), allowed},
		{"update removing kubelet labels", update(mine, node("mynode", withLabels(kubeletLabels...)), ""), allowed},
		{"update adding a node-restriction label", update(node("mynode", withLabels("node-restriction.kubernetes.io/pool", "secure")), mine, ""), denied("is not allowed to modify labels: node-restriction.kubernetes.io/pool")},
		{"update removing a node-restriction label", update(mine, node("mynode", withLabels("node-restriction.kubernetes.io/pool", "secure")), ""), denied("node-restriction.kubernetes.io/pool")},
		{"update changing a node-restriction label", update(node("mynode", withLabels("node-restriction.kubernetes.io/pool", "b")), node("mynode", withLabels("node-restriction.kubernetes.io/pool", "a")), ""), denied("node-restriction.kubernetes.io/pool")},
		{"update changing another kubernetes.io label", update(node("mynode", withLabels("other.kubernetes.io/x", "b")), node("mynode", withLabels("other.kubernetes.io/x", "a")), ""), denied("other.kubernetes.io/x")},
		{"update keeping restricted labels while adding its own", update(node("mynode", withLabels("node-restriction.kubernetes.io/pool", "secure", "other.k8s.io/x", "v", "plain", "v")), node("mynode", withLabels("node-restriction.kubernetes.io/pool", "secure", "other.k8s.io/x", "v")), ""), allowed},
		{"status update adding a node-restriction label", update(node("mynode", withLabels("node-restriction.kubernetes.io/pool", "secure")), mine, "status"), denied("node-restriction.kubernetes.io/pool")},

		{"delete of its own Node (the design allows it)", del("mynode", nil), allowed},
		{"delete of another Node", del("othernode", nil), denied("is not allowed to modify node")},
		{"deletecollection item that is its own Node", del("", mine), allowed},
		{"deletecollection item that is another Node", del("", node("othernode")), denied("is not allowed to modify node")},
	})
}

func TestPVCStatus(t *testing.T) {
	p := newPlugin(t, cachedObjects()...)
	claim := func(mods ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", ResourceVersion: "5"},
			Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: "pv"},
			Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
		}
		for _, m := range mods {
			m(c)
		}
		return c
	}
	resized := func(c *corev1.PersistentVolumeClaim) {
		c.ResourceVersion = ""
		c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}
		c.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}
		c.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: corev1.PersistentVolumeClaimNodeResizeInProgress}
		c.Status.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimFileSystemResizePending, Status: corev1.ConditionTrue}}
	}
	req := func(obj, old *corev1.PersistentVolumeClaim, sub string, op admission.Operation) request {
		return request{obj: obj, old: old, gvr: pvcsGVR, subresource: sub, namespace: "ns", name: "c", op: op, user: myNode}
	}
	run(t, p, []testCase{
		{"status update reporting a resize", req(claim(resized), claim(), "status", admission.Update), allowed},
		{"status update changing the phase", req(claim(func(c *corev1.PersistentVolumeClaim) { c.Status.Phase = corev1.ClaimLost }), claim(), "status", admission.Update), denied("not allowed to update fields other than status.capacity")},
		{"status update changing labels", req(claim(func(c *corev1.PersistentVolumeClaim) { c.Labels = map[string]string{"a": "b"} }), claim(), "status", admission.Update), denied("not allowed to update fields other than")},
		{"status update changing the spec", req(claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "other" }), claim(), "status", admission.Update), denied("not allowed to update fields other than")},
		{"status create", req(claim(), nil, "status", admission.Create), denied("unexpected operation")},
		{"update of the claim itself", req(claim(), claim(), "", admission.Update), denied("may only update PVC status")},
		{"create of a claim", req(claim(), nil, "", admission.Create), denied("may only update PVC status")},
		{"delete of a claim", req(nil, nil, "", admission.Delete), denied("may only update PVC status")},
	})
}

// apiAudience is the audience the server identifies as in these tests.
const apiAudience = "https://idplane.test"

func TestServiceAccountToken(t *testing.T) {
	tokenSources := func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "tokens", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "api"}},
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "vault", Audience: "vault"}},
			},
		}}}}
	}
	p := newPlugin(t, append(cachedObjects(), pod("tokenpod", "mynode", tokenSources))...)
	tokenFor := func(ref *authenticationv1.BoundObjectReference, audiences ...string) request {
		tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: audiences, BoundObjectRef: ref}}
		return request{obj: tr, gvr: accountsGVR, subresource: "token", namespace: "ns", name: "default", op: admission.Create, user: myNode}
	}
	token := func(ref *authenticationv1.BoundObjectReference) request { return tokenFor(ref, "vault") }
	podRef := func(name, uid string) *authenticationv1.BoundObjectReference {
		return &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: name, UID: types.UID(uid)}
	}
	tokenPod := podRef("tokenpod", "tokenpod-uid")
	run(t, p, []testCase{
		{"token bound to a pod on itself", token(tokenPod), allowed},
		{"audience of a source without one: the API's", tokenFor(tokenPod, apiAudience), allowed},
		{"both audiences the pod names", tokenFor(tokenPod, "vault", apiAudience), allowed},
		{"audience the pod never names", tokenFor(tokenPod, "elsewhere"), denied(`audience "elsewhere", which no serviceAccountToken volume source of pod ns/tokenpod names`)},
		{"one audience the pod never names among others", tokenFor(tokenPod, "vault", "elsewhere"), denied(`audience "elsewhere"`)},
		{"pod without token sources", tokenFor(podRef("mypod", "mypod-uid"), apiAudience), denied(`audience "https://idplane.test", which no serviceAccountToken volume source of pod ns/mypod names`)},
		{"token bound to no object", token(nil), denied("node requested token not bound to a pod")},
		{"token bound to a secret", token(&authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Secret", Name: "s", UID: "u"}), denied("not bound to a pod")},
		{"token bound to a Node", token(&authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Node", Name: "mynode", UID: "mynode-uid"}), denied("not bound to a pod")},
		{"token bound to an unnamed pod", token(podRef("", "u")), denied("not bound to a pod")},
		{"token bound to a pod without a uid", token(podRef("mypod", "")), denied("pod binding without a uid")},
		{"token bound to a missing pod", token(podRef("nopod", "u")), notFound},
		{"token bound to a recreated pod", token(podRef("mypod", "old-uid")), denied("does not match the UID in record")},
		{"token bound to a pod on another node", token(podRef("otherpod", "otherpod-uid")), denied("pod scheduled on a different node")},
		{"create of a service account", request{obj: &corev1.ServiceAccount{}, gvr: accountsGVR, namespace: "ns", name: "sa", op: admission.Create, user: myNode}, allowed},
	})
}

// A node acts on a pod it learned of from its own watch, which may run ahead of the plugin's
// cache: the plugin reads the store before it calls the pod missing.
func TestPodsTheCacheHasNotSeenYet(t *testing.T) {
	tokenPod := pod("newpod", "mynode", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "t", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "api"}}},
		}}}}
	})
	p := newPluginWithStore(t, fake.NewClientset(cachedObjects()...), fake.NewClientset(append(cachedObjects(), tokenPod)...))
	token := func(name, uid string) request {
		tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			Audiences:      []string{apiAudience},
			BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: name, UID: types.UID(uid)},
		}}
		return request{obj: tr, gvr: accountsGVR, subresource: "token", namespace: "ns", name: "default", op: admission.Create, user: myNode}
	}
	run(t, p, []testCase{
		{"token for a pod only the store has", token("newpod", "newpod-uid"), allowed},
		{"token for a pod neither has", token("nopod", "u"), notFound},
	})
}

func TestLeaseAndCSINode(t *testing.T) {
	p := newPlugin(t, cachedObjects()...)
	lease := func(ns, name, attrName string, op admission.Operation) request {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		r := request{obj: l, gvr: leasesGVR, namespace: ns, name: attrName, op: op, user: myNode}
		if op == admission.Update {
			r.old = l
		}
		return r
	}
	csiNode := func(name, attrName string, op admission.Operation) request {
		n := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}}
		r := request{obj: n, gvr: csiNodesGVR, name: attrName, op: op, user: myNode}
		if op == admission.Update {
			r.old = n
		}
		return r
	}
	run(t, p, []testCase{
		{"create of its own lease", lease("kube-node-lease", "mynode", "mynode", admission.Create), allowed},
		{"create of its own lease named only in the object", lease("kube-node-lease", "mynode", "", admission.Create), allowed},
		{"create of another node's lease", lease("kube-node-lease", "othernode", "othernode", admission.Create), denied("can only access node lease with the same name as the requesting node")},
		{"create of its lease in another namespace", lease("default", "mynode", "mynode", admission.Create), denied(`can only access leases in the "kube-node-lease" system namespace`)},
		{"update of its own lease", lease("kube-node-lease", "mynode", "mynode", admission.Update), allowed},
		{"update of another node's lease", lease("kube-node-lease", "othernode", "othernode", admission.Update), denied("same name as the requesting node")},
		{"delete of another node's lease", request{gvr: leasesGVR, namespace: "kube-node-lease", name: "othernode", op: admission.Delete, user: myNode}, denied("same name as the requesting node")},
		{"delete of its own lease", request{gvr: leasesGVR, namespace: "kube-node-lease", name: "mynode", op: admission.Delete, user: myNode}, allowed},

		{"create of its own CSINode", csiNode("mynode", "mynode", admission.Create), allowed},
		{"create of its own CSINode named only in the object", csiNode("mynode", "", admission.Create), allowed},
		{"create of another node's CSINode", csiNode("othernode", "othernode", admission.Create), denied("can only access CSINode with the same name as the requesting node")},
		{"update of its own CSINode", csiNode("mynode", "mynode", admission.Update), allowed},
		{"update of another node's CSINode", csiNode("othernode", "othernode", admission.Update), denied("can only access CSINode")},
		{"delete of another node's CSINode", request{gvr: csiNodesGVR, name: "othernode", op: admission.Delete, user: myNode}, denied("can only access CSINode")},
	})
}

func TestNodeCSR(t *testing.T) {
	p := newPlugin(t, cachedObjects()...)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	csrPEM := func(cn string) []byte {
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: []string{"system:nodes"}}}, key)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	}
	csr := func(signer string, request []byte, op admission.Operation) request {
		c := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: signer, Request: request}}
		return testRequest(c, csrsGVR, op)
	}
	run(t, p, []testCase{
		{"client CSR for itself", csr(certificatesv1.KubeAPIServerClientKubeletSignerName, csrPEM("system:node:mynode"), admission.Create), allowed},
		{"serving CSR for itself", csr(certificatesv1.KubeletServingSignerName, csrPEM("system:node:mynode"), admission.Create), allowed},
		{"client CSR for another node", csr(certificatesv1.KubeAPIServerClientKubeletSignerName, csrPEM("system:node:othernode"), admission.Create), denied("can only create a node CSR with CN=system:node:mynode")},
		{"serving CSR for another node", csr(certificatesv1.KubeletServingSignerName, csrPEM("system:node:othernode"), admission.Create), denied("CN=system:node:mynode")},
		{"unparsable kubelet CSR", csr(certificatesv1.KubeletServingSignerName, []byte("garbage"), admission.Create), denied("unable to parse csr")},
		{"CSR for another signer", csr("example.com/signer", csrPEM("anything"), admission.Create), allowed},
		{"update of a kubelet CSR", csr(certificatesv1.KubeletServingSignerName, csrPEM("system:node:othernode"), admission.Update), allowed},
	})
}

func testRequest(obj runtime.Object, gvr schema.GroupVersionResource, op admission.Operation) request {
	r := request{obj: obj, gvr: gvr, name: "x", op: op, user: myNode}
	if op == admission.Update {
		r.old = obj
	}
	return r
}

func TestInitialization(t *testing.T) {
	if err := New().ValidateInitialization(); err == nil {
		t.Error("ValidateInitialization without an informer factory = nil; want an error")
	}
	plugins := admission.NewPlugins()
	Register(plugins)
	if !slices.Contains(plugins.Registered(), PluginName) {
		t.Fatalf("Register did not register %s: %v", PluginName, plugins.Registered())
	}
	for _, op := range []admission.Operation{admission.Create, admission.Update, admission.Delete} {
		if !New().Handles(op) {
			t.Errorf("plugin does not handle %s", op)
		}
	}
	if New().Handles(admission.Connect) {
		t.Error("plugin handles CONNECT; want it left to the authorizer")
	}
}
