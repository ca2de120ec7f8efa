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
)

// The watch caches keep no snapshots: a paginated list's later pages are read from etcd (the
// cache's list counter does not move for them), and the walk still returns every object once.
// PVCs are used because no in-process informer lists them while the test counts.
func TestWatchCacheWithoutSnapshots(t *testing.T) {
	s := startTestServer(t, t.TempDir(), nil)
	if utilfeature.DefaultFeatureGate.Enabled(features.ListFromCacheSnapshot) {
		t.Fatal("ListFromCacheSnapshot is on: every watch cache keeps a snapshot per event")
	}
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

func claimNames(pvcs []corev1.PersistentVolumeClaim) []string {
	var out []string
	for _, p := range pvcs {
		out = append(out, p.Name)
	}
	return out
}
