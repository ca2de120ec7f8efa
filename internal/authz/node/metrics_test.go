package node

import (
	"testing"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
)

func TestGraphMetrics(t *testing.T) {
	RegisterMetrics()
	m := liveMetrics.Load()
	count := func(op graphOp) uint64 {
		t.Helper()
		n, err := testutil.GetHistogramMetricCount(m.actions[op])
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	gauge := func(name string, g metrics.GaugeMetric) float64 {
		t.Helper()
		v, err := testutil.GetGaugeMetricValue(g)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return v
	}
	before := [numGraphOps]uint64{}
	for op := range numGraphOps {
		before[op] = count(op)
	}

	g := NewGraph()
	g.AddPod(newPod("ns", "p1", "n1", withSecretVolume("s1")))
	g.AddPod(newPod("ns", "p2", "n1", withSecretVolume("s1"), withClaim("c")))
	g.AddPV(newPV("pv", claimRef("ns", "c"), nil))
	g.AddVolumeAttachment("va", "n1")
	g.DeletePod("ns", "p1")
	g.DeletePV("pv")
	g.DeleteVolumeAttachment("va")

	want := [numGraphOps]uint64{opAddPod: 2, opDeletePod: 1, opAddPV: 1, opDeletePV: 1, opAddVolumeAttachment: 1, opDeleteVolumeAttachment: 1}
	for op := range numGraphOps {
		if got := count(op) - before[op]; got != want[op] {
			t.Errorf("%s observed %d times, want %d", graphOpNames[op], got, want[op])
		}
	}
	// Left: pod p2 on n1, reaching itself, secret s1 and claim c.
	for _, tc := range []struct {
		name string
		g    metrics.GaugeMetric
		want float64
	}{
		{"pods", m.pods, 1}, {"persistentvolumes", m.pvs, 0}, {"volumeattachments", m.attachments, 0}, {"reachable pairs", m.reachable, 3},
	} {
		if got := gauge(tc.name, tc.g); got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, got, tc.want)
		}
	}
}
