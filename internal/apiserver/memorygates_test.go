package apiserver

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
)

// memoryHungryGates are the library's gates, on by default, that the server turns off
// (memorygates.go says why for each).
var memoryHungryGates = []featuregate.Feature{
	// A snapshot of every watch cache per event in its window.
	features.ListFromCacheSnapshot,
	// Every key's size and a copy of the key, per resource.
	features.SizeBasedListCostEstimate,
}

// TestWithoutMemoryHungryGates: each gate, on as by default, reads off after the server's
// setup function.
func TestWithoutMemoryHungryGates(t *testing.T) {
	for _, gate := range memoryHungryGates {
		t.Run(string(gate), func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, gate, true)
			if err := withoutMemoryHungryGates(); err != nil {
				t.Fatal(err)
			}
			if utilfeature.DefaultFeatureGate.Enabled(gate) {
				t.Errorf("%s is still on", gate)
			}
		})
	}
}

// A started server has the memory-hungry gates off, and works without what they kept.
func TestServerWithoutMemoryHungryGates(t *testing.T) {
	s := startTestServer(t, t.TempDir(), nil)
	for _, gate := range memoryHungryGates {
		if utilfeature.DefaultFeatureGate.Enabled(gate) {
			t.Errorf("%s is on in a started server", gate)
		}
	}
	t.Run("watch cache without snapshots", func(t *testing.T) { testWatchCacheWithoutSnapshots(t, s) })
	t.Run("object counts without sizes", func(t *testing.T) { testObjectCountsWithoutSizes(t, s) })
}

// The watch caches keep no snapshots: a paginated list's later pages are read from etcd (the
// cache's list counter does not move for them), and the walk still returns every object once.
// PVCs are used because no in-process informer lists them while the test counts.
func testWatchCacheWithoutSnapshots(t *testing.T, s *testServer) {
	ctx := t.Context()
	pvcs := s.client.CoreV1().PersistentVolumeClaims(metav1.NamespaceDefault)
	var want []string
	for i := range 5 {
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("claim-%d", i)},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}
		if _, err := pvcs.Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		want = append(want, pvc.Name)
	}
	cacheLists := func() float64 {
		v, _ := scrapeMetrics(t, s)("apiserver_cache_list_total", map[string]string{"resource": "persistentvolumeclaims"})
		return v
	}

	first, err := pvcs.List(ctx, metav1.ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	before := cacheLists()
	got := claimNames(first.Items)
	pages := 0
	for cont := first.Continue; cont != ""; pages++ {
		page, err := pvcs.List(ctx, metav1.ListOptions{Limit: 2, Continue: cont})
		if err != nil {
			t.Fatalf("page %d: %v", pages+2, err)
		}
		got = append(got, claimNames(page.Items)...)
		cont = page.Continue
	}
	if !slices.Equal(got, want) || pages != 2 {
		t.Fatalf("paginated walk returned %v in %d continued pages, want %v in 2", got, pages, want)
	}
	if after := cacheLists(); after != before {
		t.Errorf("the watch cache served %v continued pages; without snapshots etcd serves them", after-before)
	}
}

// Without the size estimator, the store's periodic statistics, which priority and fairness
// costs lists by, still count a resource's objects (a count from etcd; -1 would be a failed
// count), and no size estimate is reported beside them.
func testObjectCountsWithoutSizes(t *testing.T, s *testServer) {
	pvcs := map[string]string{"group": "", "resource": "persistentvolumeclaims"}
	eventually(t, "an object count of persistent volume claims", func() error {
		m := scrapeMetrics(t, s)
		count, found := m("apiserver_resource_objects", pvcs)
		if !found || count < 0 {
			return fmt.Errorf("apiserver_resource_objects for persistentvolumeclaims: %v (found %v)", count, found)
		}
		if size, found := m("apiserver_resource_size_estimate_bytes", pvcs); found {
			t.Errorf("a size estimate of %v bytes is reported: the store keeps every key's size", size)
		}
		return nil
	})
}

func claimNames(pvcs []corev1.PersistentVolumeClaim) []string {
	var out []string
	for _, p := range pvcs {
		out = append(out, p.Name)
	}
	return out
}
