package node

import (
	"bytes"
	"context"
	"flag"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/klog/v2"

	"github.com/idplane/idplane/internal/authz/rbac/bootstrap"
)

// fixtureGraph: node n1 runs ns/p1, which uses one object through every kind of
// reference, and the mirror pod ns/mirror; node n2 runs ns/p2. Volumes pv1 and pv2 are
// bound to the claims of p1 and p2; attachments va1 and va2 attach to n1 and n2.
func fixtureGraph() *Graph {
	g := NewGraph()
	rcName := "rc1"
	p1 := newPod("ns", "p1", "n1",
		withServiceAccount("sa1"),
		withSecretVolume("s1"),
		withConfigMapVolume("c1"),
		withClaim("claim1"),
		withVolume(corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}),
		withVolume(corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-s"}}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-c"}}},
		}}}),
		func(p *corev1.Pod) {
			p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Env: []corev1.EnvVar{{Name: "E", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "init-s"}, Key: "k"},
			}}}}}
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env-c"}}}}
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug",
				EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "eph-s"}}}},
			}}}
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &rcName}}
		},
	)
	g.AddPod(p1)
	g.AddPod(newPod("ns", "mirror", "n1", withSecretVolume("mirror-s"), func(p *corev1.Pod) {
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
	}))
	g.AddPod(newPod("ns", "p2", "n2", withSecretVolume("s2"), withClaim("claim2"), withServiceAccount("sa2")))
	g.AddPV(newPV("pv1", claimRef("ns", "claim1"), &corev1.SecretReference{Namespace: "storage", Name: "pv-s1"}))
	g.AddPV(newPV("pv2", claimRef("ns", "claim2"), &corev1.SecretReference{Namespace: "storage", Name: "pv-s2"}))
	g.AddVolumeAttachment("va1", "n1")
	g.AddVolumeAttachment("va2", "n2")
	g.AddPodCertificateRequest("ns", "pcr1", "p1", "n1")
	g.AddPodCertificateRequest("ns", "pcr2", "p2", "n2")
	// A request naming n1 for a pod bound elsewhere links to no node.
	g.AddPodCertificateRequest("ns", "pcr-astray", "p2", "n1")
	return g
}

func TestAuthorize(t *testing.T) {
	a := NewAuthorizer(fixtureGraph(), nil, bootstrap.NodeRules(), WithNodeRestriction())
	const (
		allow = authorizer.DecisionAllow
		no    = authorizer.DecisionNoOpinion
	)
	cases := []struct {
		name   string
		node   string
		req    call
		want   authorizer.Decision
		reason string // when set, the exact reason
	}{
		// secrets and configmaps
		{"secret of a volume", "n1", call{verb: "get", resource: "secrets", ns: "ns", name: "s1"}, allow, ""},
		{"secret of another node's pod", "n1", call{verb: "get", resource: "secrets", ns: "ns", name: "s2"}, no,
			`no relationship found between node "n1" and secret "ns/s2"`},
		{"secret of the same name elsewhere", "n1", call{verb: "get", resource: "secrets", ns: "other", name: "s1"}, no,
			`no relationship found between node "n1" and secret "other/s1"`},
		{"image pull secret", "n1", call{verb: "get", resource: "secrets", ns: "ns", name: "pull"}, allow, ""},
		{"init container env secret", "n1", call{verb: "get", resource: "secrets", ns: "ns", name: "init-s"}, allow, ""},
		{"ephemeral container envFrom secret", "n1", call{verb: "get", resource: "secrets", ns: "ns", name: "eph-s"}, allow, ""},
		{"projected secret", "n1", call{verb: "get", resource: "secrets", ns: "ns", name: "proj-s"}, allow, ""},
		{"secret of a bound volume", "n1", call{verb: "get", resource: "secrets", ns: "storage", name: "pv-s1"}, allow, ""},
		{"secret of another node's volume", "n1", call{verb: "get", resource: "secrets", ns: "storage", name: "pv-s2"}, no, ""},
		{"secret named by a mirror pod", "n1", call{verb: "get", resource: "secrets", ns: "ns", name: "mirror-s"}, no, ""},
		{"secret watched by name", "n1", call{verb: "watch", resource: "secrets", ns: "ns", selector: "metadata.name=s1"}, allow, ""},
		{"secret listed by name", "n1", call{verb: "list", resource: "secrets", ns: "ns", name: "s1", selector: "metadata.name==s1"}, allow, ""},
		{"secret of another node listed by name", "n1", call{verb: "list", resource: "secrets", ns: "ns", selector: "metadata.name=s2"}, no, ""},
		{"secrets listed", "n1", call{verb: "list", resource: "secrets", ns: "ns"}, no,
			`node "n1" may only read one secret at a time, by namespace and name (for list and watch: field selector metadata.name=<name>)`},
		{"secrets listed by another field", "n1", call{verb: "list", resource: "secrets", ns: "ns", selector: "type=Opaque"}, no, ""},
		{"secret name and selector disagree", "n1", call{verb: "list", resource: "secrets", ns: "ns", name: "s1", selector: "metadata.name=s2"}, no, ""},
		{"secrets watched by name in every namespace", "n1", call{verb: "watch", resource: "secrets", selector: "metadata.name=s1"}, no, ""},
		{"secret updated", "n1", call{verb: "update", resource: "secrets", ns: "ns", name: "s1"}, no,
			`node "n1" may only get, list or watch individual secrets`},
		{"secret created", "n1", call{verb: "create", resource: "secrets", ns: "ns"}, no, ""},
		{"secret deleted", "n1", call{verb: "delete", resource: "secrets", ns: "ns", name: "s1"}, no, ""},
		{"configmap of a volume", "n1", call{verb: "get", resource: "configmaps", ns: "ns", name: "c1"}, allow, ""},
		{"configmap of envFrom", "n1", call{verb: "get", resource: "configmaps", ns: "ns", name: "env-c"}, allow, ""},
		{"projected configmap", "n1", call{verb: "watch", resource: "configmaps", ns: "ns", selector: "metadata.name=proj-c"}, allow, ""},
		{"unrelated configmap", "n1", call{verb: "get", resource: "configmaps", ns: "ns", name: "nope"}, no,
			`no relationship found between node "n1" and configmap "ns/nope"`},
		{"configmap patched", "n1", call{verb: "patch", resource: "configmaps", ns: "ns", name: "c1"}, no, ""},

		// claims and volumes
		{"claim of a volume", "n1", call{verb: "get", resource: "persistentvolumeclaims", ns: "ns", name: "claim1"}, allow, ""},
		{"claim of an ephemeral volume", "n1", call{verb: "get", resource: "persistentvolumeclaims", ns: "ns", name: "p1-vd"}, allow, ""},
		{"claim of another node", "n1", call{verb: "get", resource: "persistentvolumeclaims", ns: "ns", name: "claim2"}, no,
			`no relationship found between node "n1" and persistentvolumeclaim "ns/claim2"`},
		{"claims listed", "n1", call{verb: "list", resource: "persistentvolumeclaims", ns: "ns"}, no, ""},
		{"claim updated", "n1", call{verb: "update", resource: "persistentvolumeclaims", ns: "ns", name: "claim1"}, no, ""},
		{"claim status updated", "n1", call{verb: "update", resource: "persistentvolumeclaims", sub: "status", ns: "ns", name: "claim1"}, allow, ""},
		{"claim status patched", "n1", call{verb: "patch", resource: "persistentvolumeclaims", sub: "status", ns: "ns", name: "claim1"}, allow, ""},
		{"claim status of another node", "n1", call{verb: "patch", resource: "persistentvolumeclaims", sub: "status", ns: "ns", name: "claim2"}, no, ""},
		{"claim status read", "n1", call{verb: "get", resource: "persistentvolumeclaims", sub: "status", ns: "ns", name: "claim1"}, no, ""},
		{"bound volume", "n1", call{verb: "get", resource: "persistentvolumes", name: "pv1"}, allow, ""},
		{"another node's volume", "n1", call{verb: "get", resource: "persistentvolumes", name: "pv2"}, no,
			`no relationship found between node "n1" and persistentvolume "pv2"`},
		{"volumes listed", "n1", call{verb: "list", resource: "persistentvolumes"}, no, ""},

		// service accounts
		{"service account of a pod", "n1", call{verb: "get", resource: "serviceaccounts", ns: "ns", name: "sa1"}, allow, ""},
		{"token of a pod's service account", "n1", call{verb: "create", resource: "serviceaccounts", sub: "token", ns: "ns", name: "sa1"}, allow, ""},
		{"service account of another node", "n1", call{verb: "get", resource: "serviceaccounts", ns: "ns", name: "sa2"}, no, ""},
		{"token of another node's service account", "n1", call{verb: "create", resource: "serviceaccounts", sub: "token", ns: "ns", name: "sa2"}, no,
			`no relationship found between node "n1" and serviceaccount "ns/sa2"`},
		{"service account listed", "n1", call{verb: "list", resource: "serviceaccounts", ns: "ns"}, no, ""},
		{"service account updated", "n1", call{verb: "update", resource: "serviceaccounts", ns: "ns", name: "sa1"}, no, ""},
		{"token read", "n1", call{verb: "get", resource: "serviceaccounts", sub: "token", ns: "ns", name: "sa1"}, no, ""},

		// storage.k8s.io
		{"own volume attachment", "n1", call{verb: "get", group: "storage.k8s.io", resource: "volumeattachments", name: "va1"}, allow, ""},
		{"another node's volume attachment", "n1", call{verb: "get", group: "storage.k8s.io", resource: "volumeattachments", name: "va2"}, no, ""},
		{"volume attachments listed", "n1", call{verb: "list", group: "storage.k8s.io", resource: "volumeattachments"}, no, ""},
		// pod certificate requests
		{"pcr created", "n1", call{verb: "create", group: "certificates.k8s.io", resource: "podcertificaterequests", ns: "ns"}, allow, reasonDeferred},
		{"own pod's pcr", "n1", call{verb: "get", group: "certificates.k8s.io", resource: "podcertificaterequests", ns: "ns", name: "pcr1"}, allow,
			"the podcertificaterequest is for a pod bound to the requesting node"},
		{"pcr naming the node for another node's pod", "n1", call{verb: "get", group: "certificates.k8s.io", resource: "podcertificaterequests", ns: "ns", name: "pcr-astray"}, no, ""},
		{"pcr naming another node for the node's pod", "n2", call{verb: "get", group: "certificates.k8s.io", resource: "podcertificaterequests", ns: "ns", name: "pcr-astray"}, no, ""},
		{"another node's pcr", "n1", call{verb: "get", group: "certificates.k8s.io", resource: "podcertificaterequests", ns: "ns", name: "pcr2"}, no,
			`no relationship found between node "n1" and podcertificaterequest "ns/pcr2"`},
		{"own pcrs listed", "n1", call{verb: "list", group: "certificates.k8s.io", resource: "podcertificaterequests", selector: "spec.nodeName=n1"}, allow, reasonNodePods},
		{"own pcrs watched in a namespace", "n1", call{verb: "watch", group: "certificates.k8s.io", resource: "podcertificaterequests", ns: "ns", selector: "spec.nodeName=n1"}, allow, reasonNodePods},
		{"pcrs listed", "n1", call{verb: "list", group: "certificates.k8s.io", resource: "podcertificaterequests"}, no,
			`node "n1" may only list or watch podcertificaterequests with field selector spec.nodeName=n1`},
		{"another node's pcrs listed", "n1", call{verb: "list", group: "certificates.k8s.io", resource: "podcertificaterequests", selector: "spec.nodeName=n2"}, no, ""},
		{"pcr listed by name", "n1", call{verb: "list", group: "certificates.k8s.io", resource: "podcertificaterequests", ns: "ns", selector: "metadata.name=pcr1"}, no, ""},
		{"own pcr's status written", "n1", call{verb: "update", group: "certificates.k8s.io", resource: "podcertificaterequests", sub: "status", ns: "ns", name: "pcr1"}, no, ""},
		{"own pcr updated", "n1", call{verb: "update", group: "certificates.k8s.io", resource: "podcertificaterequests", ns: "ns", name: "pcr1"}, no, ""},
		{"own pcr deleted", "n1", call{verb: "delete", group: "certificates.k8s.io", resource: "podcertificaterequests", ns: "ns", name: "pcr1"}, no, ""},
		{"own nodereadables listed", "n1", call{verb: "list", group: "node.idplane.io", resource: "nodereadables", selector: "nodeName=n1"}, allow, reasonReadables},
		{"own nodereadables watched in a namespace", "n1", call{verb: "watch", group: "node.idplane.io", resource: "nodereadables", ns: "ns", selector: "nodeName=n1"}, allow, reasonReadables},
		{"nodereadables listed without a node", "n1", call{verb: "list", group: "node.idplane.io", resource: "nodereadables"}, no,
			`node "n1" may only list or watch nodereadables with field selector nodeName=n1`},
		{"another node's nodereadables watched", "n1", call{verb: "watch", group: "node.idplane.io", resource: "nodereadables", selector: "nodeName=n2"}, no, ""},
		{"nodereadables got", "n1", call{verb: "get", group: "node.idplane.io", resource: "nodereadables", ns: "ns", name: "secret.s1"}, no, ""},
		{"nodereadables deleted", "n1", call{verb: "deletecollection", group: "node.idplane.io", resource: "nodereadables", selector: "nodeName=n1"}, no, ""},
		{"own CSINode read", "n1", call{verb: "get", group: "storage.k8s.io", resource: "csinodes", name: "n1"}, allow, ""},
		{"own CSINode created", "n1", call{verb: "create", group: "storage.k8s.io", resource: "csinodes"}, allow, ""},
		{"own CSINode patched", "n1", call{verb: "patch", group: "storage.k8s.io", resource: "csinodes", name: "n1"}, allow, ""},
		{"another CSINode updated", "n1", call{verb: "update", group: "storage.k8s.io", resource: "csinodes", name: "n2"}, no,
			`node "n1" may only use the CSINode named after it`},
		{"CSINodes listed", "n1", call{verb: "list", group: "storage.k8s.io", resource: "csinodes"}, no, ""},
		{"CSI drivers listed", "n1", call{verb: "list", group: "storage.k8s.io", resource: "csidrivers"}, allow, ""},

		// API Priority and Fairness configuration is the admins' (RBAC): a node gets nothing here.
		{"flow schema created", "n1", call{verb: "create", group: "flowcontrol.apiserver.k8s.io", resource: "flowschemas"}, no, ""},
		{"flow schema status written", "n1", call{verb: "patch", group: "flowcontrol.apiserver.k8s.io", resource: "flowschemas", sub: "status", name: "system-nodes"}, no, ""},
		{"priority level updated", "n1", call{verb: "update", group: "flowcontrol.apiserver.k8s.io", resource: "prioritylevelconfigurations", name: "system"}, no, ""},
		{"flow schemas listed", "n1", call{verb: "list", group: "flowcontrol.apiserver.k8s.io", resource: "flowschemas"}, no, ""},
		// leases
		{"own lease read", "n1", call{verb: "get", group: "coordination.k8s.io", resource: "leases", ns: "kube-node-lease", name: "n1"}, allow, ""},
		{"own lease updated", "n1", call{verb: "update", group: "coordination.k8s.io", resource: "leases", ns: "kube-node-lease", name: "n1"}, allow, ""},
		{"lease created", "n1", call{verb: "create", group: "coordination.k8s.io", resource: "leases", ns: "kube-node-lease"}, allow, ""},
		{"another node's lease", "n1", call{verb: "update", group: "coordination.k8s.io", resource: "leases", ns: "kube-node-lease", name: "n2"}, no,
			`node "n1" may only use the lease named after it`},
		{"lease elsewhere", "n1", call{verb: "get", group: "coordination.k8s.io", resource: "leases", ns: "kube-system", name: "n1"}, no,
			`node "n1" may only use leases in namespace kube-node-lease`},
		{"leases listed", "n1", call{verb: "list", group: "coordination.k8s.io", resource: "leases", ns: "kube-node-lease"}, no, ""},

		// nodes
		{"own node read", "n1", call{verb: "get", resource: "nodes", name: "n1"}, allow, ""},
		{"another node read", "n1", call{verb: "get", resource: "nodes", name: "n2"}, no,
			`node "n1" may get only its own Node object`},
		{"own node watched", "n1", call{verb: "watch", resource: "nodes", selector: "metadata.name=n1"}, allow, ""},
		{"own node listed by name", "n1", call{verb: "list", resource: "nodes", name: "n1", selector: "metadata.name=n1"}, allow, ""},
		{"nodes listed", "n1", call{verb: "list", resource: "nodes"}, no,
			`node "n1" may list only its own Node object (field selector metadata.name=n1)`},
		{"another node watched", "n1", call{verb: "watch", resource: "nodes", selector: "metadata.name=n2"}, no, ""},
		{"node created", "n1", call{verb: "create", resource: "nodes"}, allow, ""},
		{"node updated", "n1", call{verb: "update", resource: "nodes", name: "n1"}, allow, ""},
		{"node status patched", "n1", call{verb: "patch", resource: "nodes", sub: "status", name: "n1"}, allow, ""},
		{"own node deleted", "n1", call{verb: "delete", resource: "nodes", name: "n1"}, allow, ""},
		{"another node deleted", "n1", call{verb: "delete", resource: "nodes", name: "n2"}, no, ""},
		{"nodes deleted", "n1", call{verb: "deletecollection", resource: "nodes"}, no, ""},
		{"node proxy", "n1", call{verb: "get", resource: "nodes", sub: "proxy", name: "n1"}, no, ""},

		// pods
		{"own pod read", "n1", call{verb: "get", resource: "pods", ns: "ns", name: "p1"}, allow, ""},
		{"own mirror pod read", "n1", call{verb: "get", resource: "pods", ns: "ns", name: "mirror"}, allow, ""},
		{"another node's pod read", "n1", call{verb: "get", resource: "pods", ns: "ns", name: "p2"}, no,
			`no relationship found between node "n1" and pod "ns/p2"`},
		{"own pods listed", "n1", call{verb: "list", resource: "pods", selector: "spec.nodeName=n1"}, allow, ""},
		{"own pods watched in a namespace", "n1", call{verb: "watch", resource: "pods", ns: "ns", selector: "spec.nodeName=n1,status.phase=Running"}, allow, ""},
		{"another node's pods listed", "n1", call{verb: "list", resource: "pods", selector: "spec.nodeName=n2"}, no, ""},
		{"pods listed", "n1", call{verb: "list", resource: "pods"}, no,
			`node "n1" may only list or watch pods with field selector spec.nodeName=n1`},
		{"pods listed off the node", "n1", call{verb: "list", resource: "pods", selector: "spec.nodeName!=n1"}, no, ""},
		{"own pod watched by name", "n1", call{verb: "watch", resource: "pods", ns: "ns", selector: "metadata.name=p1"}, allow, ""},
		{"mirror pod created", "n1", call{verb: "create", resource: "pods", ns: "ns"}, allow, ""},
		{"pod deleted", "n1", call{verb: "delete", resource: "pods", ns: "ns", name: "p1"}, allow, ""},
		{"pod status updated", "n1", call{verb: "update", resource: "pods", sub: "status", ns: "ns", name: "p1"}, allow, ""},
		{"pod evicted", "n1", call{verb: "create", resource: "pods", sub: "eviction", ns: "ns", name: "p1"}, allow, ""},
		{"pod updated", "n1", call{verb: "update", resource: "pods", ns: "ns", name: "p1"}, no,
			`node "n1" may not update pods`},
		{"pod exec", "n1", call{verb: "create", resource: "pods", sub: "exec", ns: "ns", name: "p1"}, no, ""},

		// resource.k8s.io
		{"claim of a pod's device", "n1", call{verb: "get", group: "resource.k8s.io", resource: "resourceclaims", ns: "ns", name: "rc1"}, allow, ""},
		{"another resource claim", "n1", call{verb: "get", group: "resource.k8s.io", resource: "resourceclaims", ns: "ns", name: "rc2"}, no, ""},
		{"own resource slices deleted", "n1", call{verb: "deletecollection", group: "resource.k8s.io", resource: "resourceslices", selector: "spec.nodeName=n1"}, allow, ""},
		{"all resource slices deleted", "n1", call{verb: "deletecollection", group: "resource.k8s.io", resource: "resourceslices"}, no, ""},

		// the fixed policy
		{"services listed", "n1", call{verb: "list", resource: "services"}, allow, reasonFixedPolicy},
		{"event created", "n1", call{verb: "create", resource: "events", ns: "ns"}, allow, ""},
		{"CSR created", "n1", call{verb: "create", group: "certificates.k8s.io", resource: "certificatesigningrequests"}, allow, ""},
		{"token review", "n1", call{verb: "create", group: "authentication.k8s.io", resource: "tokenreviews"}, allow, ""},
		{"endpoints read", "n1", call{verb: "get", resource: "endpoints", ns: "ns", name: "e"}, allow, ""},
		{"deployments read", "n1", call{verb: "get", group: "apps", resource: "deployments", ns: "ns", name: "d"}, no,
			`node "n1" may not get deployments.apps: the system:node policy does not allow it`},
		{"endpoints deleted", "n1", call{verb: "delete", resource: "endpoints", ns: "ns", name: "e"}, no, ""},
		{"non-resource URL", "n1", call{verb: "get", path: "/metrics"}, no,
			`node "n1" may not get /metrics: the system:node policy does not allow it`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := decide(t, a, tc.node, tc.req)
			if got != tc.want {
				t.Fatalf("decision = %v (%q), want %v", got, reason, tc.want)
			}
			if reason == "" {
				t.Errorf("decision %v has no reason", got)
			}
			if tc.reason != "" && reason != tc.reason {
				t.Errorf("reason = %q, want %q", reason, tc.reason)
			}
			// Attributes other than an AttributesRecord are read through the interface.
			wrapped := struct{ authorizer.Attributes }{tc.req.attrs(t, nodeUser(tc.node))}
			if d, r, _ := a.Authorize(context.Background(), wrapped); d != got || r != reason {
				t.Errorf("through the interface: %v %q, want %v %q", d, r, got, reason)
			}
		})
	}
}

// TestWritesLeftToNodeRestrictionNeedIt: without the plugin declared, every write the
// authorizer leaves to NodeRestriction gets no opinion, and reads still follow the graph.
func TestWritesLeftToNodeRestrictionNeedIt(t *testing.T) {
	with := NewAuthorizer(fixtureGraph(), nil, bootstrap.NodeRules(), WithNodeRestriction())
	without := NewAuthorizer(fixtureGraph(), nil, bootstrap.NodeRules())
	cases := []struct {
		name string
		req  call
	}{
		{"pod created", call{verb: "create", resource: "pods", ns: "ns"}},
		{"pod deleted", call{verb: "delete", resource: "pods", ns: "ns", name: "p1"}},
		{"pod status updated", call{verb: "update", resource: "pods", sub: "status", ns: "ns", name: "p1"}},
		{"pod status patched", call{verb: "patch", resource: "pods", sub: "status", ns: "ns", name: "p1"}},
		{"pod evicted", call{verb: "create", resource: "pods", sub: "eviction", ns: "ns", name: "p1"}},
		{"node created", call{verb: "create", resource: "nodes"}},
		{"node updated", call{verb: "update", resource: "nodes", name: "n1"}},
		{"node patched", call{verb: "patch", resource: "nodes", name: "n1"}},
		{"node status updated", call{verb: "update", resource: "nodes", sub: "status", name: "n1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got, reason := decide(t, with, "n1", tc.req); got != authorizer.DecisionAllow || reason != reasonDeferred {
				t.Errorf("with NodeRestriction: %v %q, want allow %q", got, reason, reasonDeferred)
			}
			if got, reason := decide(t, without, "n1", tc.req); got != authorizer.DecisionNoOpinion || reason != reasonNoAdmission {
				t.Errorf("without NodeRestriction: %v %q, want no opinion %q", got, reason, reasonNoAdmission)
			}
		})
	}
	read := call{verb: "get", resource: "secrets", ns: "ns", name: "s1"}
	if got, reason := decide(t, without, "n1", read); got != authorizer.DecisionAllow {
		t.Errorf("reading a pod's secret without NodeRestriction: %v %q, want allow", got, reason)
	}
}

func TestAuthorizeNonNodes(t *testing.T) {
	a := NewAuthorizer(fixtureGraph(), nil, bootstrap.NodeRules())
	secret := call{verb: "get", resource: "secrets", ns: "ns", name: "s1"}
	cases := []struct {
		name       string
		user       user.Info
		wantReason bool
	}{
		{"ordinary user", &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}, false},
		{"node name without the nodes group", &user.DefaultInfo{Name: "system:node:n1"}, false},
		{"nodes group without a node name", &user.DefaultInfo{Name: "kubelet", Groups: []string{"system:nodes"}}, false},
		{"node with an empty name", &user.DefaultInfo{Name: "system:node:", Groups: []string{"system:nodes"}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, reason, err := a.Authorize(context.Background(), secret.attrs(t, tc.user))
			if err != nil || d != authorizer.DecisionNoOpinion {
				t.Fatalf("Authorize = %v, %q, %v; want NoOpinion", d, reason, err)
			}
			if (reason != "") != tc.wantReason {
				t.Errorf("reason = %q, want one: %v", reason, tc.wantReason)
			}
		})
	}
}

func TestConditionsAware(t *testing.T) {
	a := NewAuthorizer(fixtureGraph(), nil, bootstrap.NodeRules())
	attrs := call{verb: "get", resource: "secrets", ns: "ns", name: "s1"}.attrs(t, nodeUser("n1"))
	d := a.ConditionsAwareAuthorize(context.Background(), attrs)
	if !d.IsAllow() {
		t.Errorf("ConditionsAwareAuthorize = %v, want allowed", d)
	}
	if got, _, err := a.EvaluateConditions(context.Background(), d, nil); got != authorizer.DecisionDeny || err == nil {
		t.Errorf("EvaluateConditions = %v, %v; want Deny with an error", got, err)
	}
}

func TestRulesFor(t *testing.T) {
	a := NewAuthorizer(fixtureGraph(), nil, bootstrap.NodeRules())
	rules, nonResource, incomplete, err := a.RulesFor(context.Background(), nodeUser("n1"), "ns")
	if err != nil || !incomplete || len(nonResource) != 0 {
		t.Fatalf("RulesFor = %d rules, %d non-resource, incomplete %v, %v; want rules, incomplete", len(rules), len(nonResource), incomplete, err)
	}
	has := func(verb, group, resource string) bool {
		return slices.ContainsFunc(rules, func(r authorizer.ResourceRuleInfo) bool {
			return slices.Contains(r.GetVerbs(), verb) && slices.Contains(r.GetAPIGroups(), group) && slices.Contains(r.GetResources(), resource)
		})
	}
	for _, want := range [][3]string{{"list", "", "services"}, {"create", "", "pods"}, {"update", "", "pods/status"}, {"create", "", "nodes"}, {"create", "certificates.k8s.io", "podcertificaterequests"}} {
		if !has(want[0], want[1], want[2]) {
			t.Errorf("rules lack %v", want)
		}
	}
	for _, narrowed := range [][3]string{{"get", "", "secrets"}, {"list", "", "pods"}, {"get", "", "nodes"}, {"get", "coordination.k8s.io", "leases"}, {"get", "", "persistentvolumes"}, {"list", "certificates.k8s.io", "podcertificaterequests"}, {"get", "certificates.k8s.io", "podcertificaterequests"}} {
		if has(narrowed[0], narrowed[1], narrowed[2]) {
			t.Errorf("rules list %v, which depends on the object", narrowed)
		}
	}
	for _, u := range []user.Info{&user.DefaultInfo{Name: "alice"}, &user.DefaultInfo{Name: "system:node:", Groups: []string{"system:nodes"}}} {
		rules, nonResource, incomplete, err := a.RulesFor(context.Background(), u, "ns")
		if len(rules) != 0 || len(nonResource) != 0 || incomplete || err != nil {
			t.Errorf("RulesFor(%s) = %v, %v, %v, %v; want nothing", u.GetName(), rules, nonResource, incomplete, err)
		}
	}
}

func TestExplain(t *testing.T) {
	a := NewAuthorizer(fixtureGraph(), nil, bootstrap.NodeRules())
	cases := []struct {
		node, kind, ns, name string
		want                 []string
	}{
		{"n1", "secret", "ns", "s1", []string{"secret ns/s1", "pod ns/p1", "node n1"}},
		{"n1", "secrets", "storage", "pv-s1", []string{"secret storage/pv-s1", "persistentvolume pv1", "persistentvolumeclaim ns/claim1", "pod ns/p1", "node n1"}},
		{"n1", "persistentvolume", "", "pv1", []string{"persistentvolume pv1", "persistentvolumeclaim ns/claim1", "pod ns/p1", "node n1"}},
		{"n1", "ServiceAccount", "ns", "sa1", []string{"serviceaccount ns/sa1", "pod ns/p1", "node n1"}},
		{"n1", "pods", "ns", "mirror", []string{"pod ns/mirror", "node n1"}},
		{"n1", "volumeattachment", "", "va1", []string{"volumeattachment va1", "node n1"}},
		{"n1", "secret", "ns", "s2", nil},
		{"n1", "secret", "ns", "mirror-s", nil},
		{"n2", "persistentvolume", "", "pv1", nil},
		{"n1", "deployments", "ns", "d", nil},
	}
	for _, tc := range cases {
		t.Run(strings.Join([]string{tc.node, tc.kind, tc.ns, tc.name}, "/"), func(t *testing.T) {
			path, ok := a.Explain(tc.node, tc.kind, tc.ns, tc.name)
			if ok != (tc.want != nil) || !slices.Equal(path, tc.want) {
				t.Errorf("Explain = %q, %v; want %q", path, ok, tc.want)
			}
		})
	}
}

// TestAuthorizeFollowsAttachments checks the populator's VolumeAttachment type reaches the
// graph the way the authorizer expects.
func TestAuthorizeFollowsAttachments(t *testing.T) {
	g := NewGraph()
	p := &Populator{graph: g}
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va"}, Spec: storagev1.VolumeAttachmentSpec{NodeName: "n1"}}
	p.addAttachment(va)
	a := NewAuthorizer(g, nil, bootstrap.NodeRules())
	get := call{verb: "get", group: "storage.k8s.io", resource: "volumeattachments", name: "va"}
	if d, reason := decide(t, a, "n1", get); d != authorizer.DecisionAllow {
		t.Errorf("attached node: %v %q", d, reason)
	}
	moved := va.DeepCopy()
	moved.Spec.NodeName = "n2"
	p.updateAttachment(va, moved)
	if d, _ := decide(t, a, "n1", get); d == authorizer.DecisionAllow {
		t.Error("the node the volume left still reads the attachment")
	}
	if d, _ := decide(t, a, "n2", get); d != authorizer.DecisionAllow {
		t.Error("the node the volume moved to cannot read the attachment")
	}
}

// TestDenialsAreLogged: administrators auditing kubelets' access look for NODE DENY.
func TestDenialsAreLogged(t *testing.T) {
	var buf bytes.Buffer
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for flagName, value := range map[string]string{"v": "2", "logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL"} {
		if err := fs.Set(flagName, value); err != nil {
			t.Fatal(err)
		}
	}
	klog.SetOutput(&buf)
	defer func() {
		_ = fs.Set("v", "0")
		_ = fs.Set("logtostderr", "true")
		klog.SetOutput(os.Stderr)
	}()

	a := NewAuthorizer(fixtureGraph(), nil, bootstrap.NodeRules())
	_, reason := decide(t, a, "n1", call{verb: "get", resource: "secrets", ns: "ns", name: "s2"})
	_, _ = decide(t, a, "n1", call{verb: "get", resource: "secrets", ns: "ns", name: "s1"})
	klog.Flush()
	logged := buf.String()
	if !strings.Contains(logged, "NODE DENY") || !strings.Contains(logged, strconv.Quote(reason)) {
		t.Errorf("log lacks the denial %q:\n%s", reason, logged)
	}
	if n := strings.Count(logged, "NODE DENY"); n != 1 {
		t.Errorf("%d NODE DENY lines for one denial:\n%s", n, logged)
	}
}
