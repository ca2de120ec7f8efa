package node

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// reach is an expectation about the graph: node reaches the object, or not.
type reach struct {
	node string
	kind kind
	ns   string
	name string
	want bool
}

func checkReach(t *testing.T, g *Graph, want ...reach) {
	t.Helper()
	for _, w := range want {
		if got := g.reaches(w.node, w.kind, w.ns, w.name); got != w.want {
			t.Errorf("node %s reaches %s %s/%s = %v, want %v", w.node, w.kind, w.ns, w.name, got, w.want)
		}
	}
}

// checkEmpty verifies that withdrawing everything leaves nothing behind, so that churn
// cannot leak memory.
func checkEmpty(t *testing.T, g *Graph) {
	t.Helper()
	for i := range g.reach.shards {
		if live := g.reach.use[i].live; live != 0 {
			t.Errorf("reach shard %d still holds %d pairs", i, live)
		}
	}
	if len(g.pods)+len(g.pvs)+len(g.pvsByClaim)+len(g.claimNodes)+len(g.attachments) != 0 {
		t.Errorf("graph still holds pods %v, pvs %v, pvsByClaim %v, claimNodes %v, attachments %v", g.pods, g.pvs, g.pvsByClaim, g.claimNodes, g.attachments)
	}
}

func TestGraphPods(t *testing.T) {
	cases := []struct {
		name  string
		steps func(g *Graph)
		want  []reach
	}{
		{"bound pod", func(g *Graph) {
			g.AddPod(newPod("ns", "p", "n1", withSecretVolume("s")))
		}, []reach{{"n1", kindSecret, "ns", "s", true}, {"n1", kindPod, "ns", "p", true}, {"n2", kindSecret, "ns", "s", false}}},
		{"unbound pod", func(g *Graph) {
			g.AddPod(newPod("ns", "p", "", withSecretVolume("s")))
		}, []reach{{"n1", kindSecret, "ns", "s", false}}},
		{"pod bound later", func(g *Graph) {
			g.AddPod(newPod("ns", "p", "", withSecretVolume("s")))
			g.AddPod(newPod("ns", "p", "n1", withSecretVolume("s")))
		}, []reach{{"n1", kindSecret, "ns", "s", true}}},
		{"deleted pod", func(g *Graph) {
			g.AddPod(newPod("ns", "p", "n1", withSecretVolume("s")))
			g.DeletePod("ns", "p")
		}, []reach{{"n1", kindSecret, "ns", "s", false}, {"n1", kindPod, "ns", "p", false}}},
		{"pod recreated on another node", func(g *Graph) {
			g.AddPod(newPod("ns", "p", "n1", withSecretVolume("s")))
			g.AddPod(newPod("ns", "p", "n2", withSecretVolume("s")))
		}, []reach{{"n1", kindSecret, "ns", "s", false}, {"n2", kindSecret, "ns", "s", true}}},
		{"secret shared by two pods, one deleted", func(g *Graph) {
			g.AddPod(newPod("ns", "a", "n1", withSecretVolume("s")))
			g.AddPod(newPod("ns", "b", "n1", withSecretVolume("s"), withSecretVolume("t")))
			g.DeletePod("ns", "b")
		}, []reach{{"n1", kindSecret, "ns", "s", true}, {"n1", kindSecret, "ns", "t", false}}},
		{"secret named twice by one pod, pod deleted", func(g *Graph) {
			g.AddPod(newPod("ns", "a", "n1", withSecretVolume("s"), withSecretVolume("s")))
			g.AddPod(newPod("ns", "b", "n1", withSecretVolume("s")))
			g.DeletePod("ns", "a")
		}, []reach{{"n1", kindSecret, "ns", "s", true}}},
		{"deleting an unknown pod", func(g *Graph) {
			g.AddPod(newPod("ns", "a", "n1", withSecretVolume("s")))
			g.DeletePod("ns", "b")
		}, []reach{{"n1", kindSecret, "ns", "s", true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGraph()
			tc.steps(g)
			checkReach(t, g, tc.want...)
		})
	}
}

func TestGraphVolumes(t *testing.T) {
	pvSecret := &corev1.SecretReference{Namespace: "storage", Name: "pvs"}
	cases := []struct {
		name  string
		steps func(g *Graph)
		want  []reach
	}{
		{"volume bound before the pod", func(g *Graph) {
			g.AddPV(newPV("pv", claimRef("ns", "c"), pvSecret))
			g.AddPod(newPod("ns", "p", "n1", withClaim("c")))
		}, []reach{{"n1", kindPVC, "ns", "c", true}, {"n1", kindPV, "", "pv", true}, {"n1", kindSecret, "storage", "pvs", true}}},
		{"volume bound after the pod", func(g *Graph) {
			g.AddPod(newPod("ns", "p", "n1", withClaim("c")))
			g.AddPV(newPV("pv", claimRef("ns", "c"), pvSecret))
		}, []reach{{"n1", kindPV, "", "pv", true}, {"n1", kindSecret, "storage", "pvs", true}}},
		{"volume without a claim", func(g *Graph) {
			g.AddPod(newPod("ns", "p", "n1", withClaim("c")))
			g.AddPV(newPV("pv", nil, pvSecret))
		}, []reach{{"n1", kindPVC, "ns", "c", true}, {"n1", kindPV, "", "pv", false}, {"n1", kindSecret, "storage", "pvs", false}}},
		{"volume bound to another claim", func(g *Graph) {
			g.AddPod(newPod("ns", "p", "n1", withClaim("c")))
			g.AddPV(newPV("pv", claimRef("ns", "other"), pvSecret))
		}, []reach{{"n1", kindPV, "", "pv", false}}},
		{"volume rebound", func(g *Graph) {
			g.AddPod(newPod("ns", "p", "n1", withClaim("c")))
			g.AddPod(newPod("ns", "q", "n2", withClaim("d")))
			g.AddPV(newPV("pv", claimRef("ns", "c"), pvSecret))
			g.AddPV(newPV("pv", claimRef("ns", "d"), pvSecret))
		}, []reach{{"n1", kindPV, "", "pv", false}, {"n1", kindSecret, "storage", "pvs", false}, {"n2", kindPV, "", "pv", true}, {"n2", kindSecret, "storage", "pvs", true}}},
		{"volume secret changed", func(g *Graph) {
			g.AddPod(newPod("ns", "p", "n1", withClaim("c")))
			g.AddPV(newPV("pv", claimRef("ns", "c"), pvSecret))
			g.AddPV(newPV("pv", claimRef("ns", "c"), &corev1.SecretReference{Namespace: "storage", Name: "new"}))
		}, []reach{{"n1", kindSecret, "storage", "pvs", false}, {"n1", kindSecret, "storage", "new", true}}},
		{"volume deleted", func(g *Graph) {
			g.AddPod(newPod("ns", "p", "n1", withClaim("c")))
			g.AddPV(newPV("pv", claimRef("ns", "c"), pvSecret))
			g.DeletePV("pv")
		}, []reach{{"n1", kindPVC, "ns", "c", true}, {"n1", kindPV, "", "pv", false}, {"n1", kindSecret, "storage", "pvs", false}}},
		{"claim shared by pods of two nodes, one deleted", func(g *Graph) {
			g.AddPV(newPV("pv", claimRef("ns", "c"), pvSecret))
			g.AddPod(newPod("ns", "p", "n1", withClaim("c")))
			g.AddPod(newPod("ns", "q", "n1", withClaim("c")))
			g.AddPod(newPod("ns", "r", "n2", withClaim("c")))
			g.DeletePod("ns", "p")
			g.DeletePod("ns", "r")
		}, []reach{{"n1", kindSecret, "storage", "pvs", true}, {"n2", kindSecret, "storage", "pvs", false}, {"n2", kindPV, "", "pv", false}}},
		{"volume secret also named by the pod", func(g *Graph) {
			g.AddPod(newPod("ns", "p", "n1", withClaim("c"), withSecretVolume("s")))
			g.AddPV(newPV("pv", claimRef("ns", "c"), &corev1.SecretReference{Namespace: "ns", Name: "s"}))
			g.DeletePV("pv")
		}, []reach{{"n1", kindSecret, "ns", "s", true}}},
		{"attachment", func(g *Graph) {
			g.AddVolumeAttachment("va", "n1")
		}, []reach{{"n1", kindVolumeAttachment, "", "va", true}, {"n2", kindVolumeAttachment, "", "va", false}}},
		{"attachment moved", func(g *Graph) {
			g.AddVolumeAttachment("va", "n1")
			g.AddVolumeAttachment("va", "n2")
		}, []reach{{"n1", kindVolumeAttachment, "", "va", false}, {"n2", kindVolumeAttachment, "", "va", true}}},
		{"attachment deleted", func(g *Graph) {
			g.AddVolumeAttachment("va", "n1")
			g.DeleteVolumeAttachment("va")
		}, []reach{{"n1", kindVolumeAttachment, "", "va", false}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGraph()
			tc.steps(g)
			checkReach(t, g, tc.want...)
		})
	}
}

// TestGraphWithdrawsEverything adds a web of pods, volumes and attachments, removes them in
// another order, and expects an empty graph.
func TestGraphWithdrawsEverything(t *testing.T) {
	g := NewGraph()
	secret := &corev1.SecretReference{Namespace: "storage", Name: "pvs"}
	g.AddPV(newPV("pv1", claimRef("ns", "c1"), secret))
	g.AddPod(newPod("ns", "a", "n1", withClaim("c1"), withSecretVolume("s"), withServiceAccount("sa")))
	g.AddPod(newPod("ns", "b", "n1", withClaim("c1"), withClaim("c2"), withServiceAccount("sa")))
	g.AddPod(newPod("ns", "c", "n2", withClaim("c2"), withConfigMapVolume("cm")))
	g.AddPV(newPV("pv2", claimRef("ns", "c2"), secret))
	g.AddPV(newPV("pv3", claimRef("ns", "c2"), nil))
	g.AddVolumeAttachment("va", "n2")
	g.AddPod(newPod("ns", "b", "n2", withClaim("c1")))
	g.DeletePod("ns", "a")
	g.DeletePV("pv2")
	g.DeletePod("ns", "b")
	g.DeleteVolumeAttachment("va")
	g.DeletePV("pv1")
	g.DeletePod("ns", "c")
	g.DeletePV("pv3")
	checkEmpty(t, g)
}

func TestPodReferences(t *testing.T) {
	rc, generated := "named", "generated"
	pod := newPod("ns", "p", "n",
		withServiceAccount("sa"),
		withSecretVolume("vol-s"),
		withConfigMapVolume("vol-c"),
		withClaim("claim"),
		withVolume(corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}),
		withVolume(corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi-s"}}}),
		withVolume(corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{SecretRef: &corev1.LocalObjectReference{Name: "rbd-s"}}}),
		withVolume(corev1.VolumeSource{AzureFile: &corev1.AzureFileVolumeSource{SecretName: "azure-s"}}),
		func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{
				{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-c"}}}},
				{Name: "B", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "vol-s"}}}},
				{Name: "C", Value: "plain"},
			}
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "a", ResourceClaimName: &rc}, {Name: "b"}, {Name: "c"}}
			p.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "b", ResourceClaimName: &generated}, {Name: "c"}}
		},
	)
	want := []ref{
		{kindServiceAccount, "sa"}, {kindConfigMap, "env-c"}, {kindSecret, "vol-s"}, {kindConfigMap, "vol-c"},
		{kindPVC, "claim"}, {kindPVC, "p-vd"}, {kindSecret, "csi-s"}, {kindSecret, "rbd-s"}, {kindSecret, "azure-s"},
		{kindResourceClaim, "named"}, {kindResourceClaim, "generated"},
	}
	if got := podReferences(pod); !slices.Equal(got, want) {
		t.Errorf("podReferences =\n%v\nwant\n%v", got, want)
	}
	pod.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
	if got := podReferences(pod); len(got) != 0 {
		t.Errorf("mirror pod references %v, want nothing", got)
	}
}

func TestPVSecrets(t *testing.T) {
	azureNS := "azure"
	cases := []struct {
		name   string
		claim  *corev1.ObjectReference
		source corev1.PersistentVolumeSource
		want   []pvSecret
	}{
		{"CSI node secrets, not controller ones", claimRef("ns", "c"), corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
			ControllerPublishSecretRef: &corev1.SecretReference{Namespace: "x", Name: "publish"},
			ControllerExpandSecretRef:  &corev1.SecretReference{Namespace: "x", Name: "expand"},
			NodePublishSecretRef:       &corev1.SecretReference{Namespace: "x", Name: "node-publish"},
			NodeStageSecretRef:         &corev1.SecretReference{Namespace: "x", Name: "node-stage"},
			NodeExpandSecretRef:        &corev1.SecretReference{Namespace: "x", Name: "node-publish"},
		}}, []pvSecret{{"x", "node-publish"}, {"x", "node-stage"}}},
		{"RBD without namespace uses the claim's", claimRef("ns", "c"), corev1.PersistentVolumeSource{RBD: &corev1.RBDPersistentVolumeSource{
			SecretRef: &corev1.SecretReference{Name: "rbd"},
		}}, []pvSecret{{"ns", "rbd"}}},
		{"CephFS with namespace", claimRef("ns", "c"), corev1.PersistentVolumeSource{CephFS: &corev1.CephFSPersistentVolumeSource{
			SecretRef: &corev1.SecretReference{Namespace: "ceph", Name: "cephfs"},
		}}, []pvSecret{{"ceph", "cephfs"}}},
		{"AzureFile with namespace", claimRef("ns", "c"), corev1.PersistentVolumeSource{AzureFile: &corev1.AzureFilePersistentVolumeSource{
			SecretName: "az", SecretNamespace: &azureNS,
		}}, []pvSecret{{"azure", "az"}}},
		{"Cinder without namespace names nothing", claimRef("ns", "c"), corev1.PersistentVolumeSource{Cinder: &corev1.CinderPersistentVolumeSource{
			SecretRef: &corev1.SecretReference{Name: "cinder"},
		}}, nil},
		{"no secret", claimRef("ns", "c"), corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x"}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pv := &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{ClaimRef: tc.claim, PersistentVolumeSource: tc.source}}
			if got := pvSecrets(pv); !slices.Equal(got, tc.want) {
				t.Errorf("pvSecrets = %v, want %v", got, tc.want)
			}
		})
	}
}
