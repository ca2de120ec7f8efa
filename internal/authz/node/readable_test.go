package node

import (
	corev1 "k8s.io/api/core/v1"
	"slices"
	"testing"
)

// readableLog records what a subscriber hears, as "+node ns/name" and "-node cm:ns/name".
type readableLog []string

func (l *readableLog) hear(c ReadableChange) {
	sign, kind := "-", ""
	if c.Readable {
		sign = "+"
	}
	if c.ConfigMap {
		kind = "cm:"
	}
	*l = append(*l, sign+c.Node+" "+kind+c.Namespace+"/"+c.Name)
}

func (l *readableLog) take() []string {
	out := slices.Clone(*l)
	slices.Sort(out)
	*l = nil
	return out
}

// TestSubscribeReadable: a subscriber hears the pairs already held, then each secret and
// configmap path as its first use appears and its last goes, never other kinds, and never a
// go-and-come-back when a pod changes but keeps using an object.
func TestSubscribeReadable(t *testing.T) {
	g := NewGraph()
	g.AddPod(newPod("ns", "early", "n1", withSecretVolume("s0")))
	var log readableLog
	g.SubscribeReadable(log.hear)
	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"held before subscribing", func() {}, []string{"+n1 ns/s0"}},
		{"pod with a secret, a configmap and a service account", func() {
			g.AddPod(newPod("ns", "p", "n1", withSecretVolume("s1"), withConfigMapVolume("c1"), withServiceAccount("sa")))
		}, []string{"+n1 cm:ns/c1", "+n1 ns/s1"}},
		{"second pod using the same secret", func() { g.AddPod(newPod("ns", "q", "n1", withSecretVolume("s1"))) }, nil},
		{"first pod drops its configmap, keeps its secret", func() {
			g.AddPod(newPod("ns", "p", "n1", withSecretVolume("s1"), withServiceAccount("sa")))
		}, []string{"-n1 cm:ns/c1"}},
		{"first pod deleted: the second still uses the secret", func() { g.DeletePod("ns", "p") }, nil},
		{"second pod moves to n2", func() { g.AddPod(newPod("ns", "q", "n2", withSecretVolume("s1"))) }, []string{"+n2 ns/s1", "-n1 ns/s1"}},
		{"volume secret through a claim", func() {
			g.AddPV(newPV("pv", claimRef("ns", "claim"), nil))
			g.AddPod(newPod("ns", "r", "n1", withClaim("claim")))
			g.AddPV(newPV("pv", claimRef("ns", "claim"), secretRef("ns", "csi")))
		}, []string{"+n1 ns/csi"}},
		{"volume updated, same secrets (a status or label change)", func() {
			pv := newPV("pv", claimRef("ns", "claim"), secretRef("ns", "csi"))
			pv.Labels = map[string]string{"changed": "yes"}
			g.AddPV(pv)
		}, nil},
		{"volume gains a stage secret, keeps its publish secret", func() {
			pv := newPV("pv", claimRef("ns", "claim"), secretRef("ns", "csi"))
			pv.Spec.CSI.NodeStageSecretRef = secretRef("ns", "stage")
			g.AddPV(pv)
		}, []string{"+n1 ns/stage"}},
		{"volume drops the stage secret", func() { g.AddPV(newPV("pv", claimRef("ns", "claim"), secretRef("ns", "csi"))) }, []string{"-n1 ns/stage"}},
		{"volume's secret swapped", func() { g.AddPV(newPV("pv", claimRef("ns", "claim"), secretRef("ns", "csi2"))) }, []string{"+n1 ns/csi2", "-n1 ns/csi"}},
		{"volume bound to another claim no pod uses", func() { g.AddPV(newPV("pv", claimRef("ns", "other"), secretRef("ns", "csi2"))) }, []string{"-n1 ns/csi2"}},
		{"volume bound back", func() { g.AddPV(newPV("pv", claimRef("ns", "claim"), secretRef("ns", "csi"))) }, []string{"+n1 ns/csi"}},
		{"volume released (no claimRef)", func() { g.AddPV(newPV("pv", nil, secretRef("ns", "csi"))) }, []string{"-n1 ns/csi"}},
		{"volume bound again", func() { g.AddPV(newPV("pv", claimRef("ns", "claim"), secretRef("ns", "csi"))) }, []string{"+n1 ns/csi"}},
		{"volume deleted", func() { g.DeletePV("pv") }, []string{"-n1 ns/csi"}},
		{"unsubscribed", func() { g.SubscribeReadable(nil); g.DeletePod("ns", "early") }, nil},
	}
	for _, s := range steps {
		s.do()
		if got := log.take(); !slices.Equal(got, s.want) {
			t.Errorf("%s: heard %q, want %q", s.name, got, s.want)
		}
	}
}

func secretRef(namespace, name string) *corev1.SecretReference {
	return &corev1.SecretReference{Namespace: namespace, Name: name}
}
