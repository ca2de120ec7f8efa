package podview

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// apiAccessPod is a pod as admission leaves it: one container and the kube-api-access volume
// (a token, the kube-root-ca.crt config map and the namespace), each source with its items.
func apiAccessPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns-" + name, UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{
			NodeName: "n1", ServiceAccountName: "default",
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
			Volumes: []corev1.Volume{{Name: "kube-api-access-" + name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				DefaultMode: ptr(int32(0o644)),
				Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr(int64(3607)), Path: "token"}},
					{ConfigMap: &corev1.ConfigMapProjection{
						LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
						Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
					}},
					{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
						{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}},
					}}},
				},
			}}}},
		},
	}
}

func projected(p *corev1.Pod) *corev1.ProjectedVolumeSource { return p.Spec.Volumes[0].Projected }

// TestSlimSharesOnlyEqualProjectedSources: two pods whose projected sources are equal once
// slimmed share one copy (its Sources backing array and its DefaultMode); a pod whose sources
// differ in anything a reader could read keeps its own, with its own values.
func TestSlimSharesOnlyEqualProjectedSources(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*corev1.ProjectedVolumeSource)
		share  bool
	}{
		{"identical", func(*corev1.ProjectedVolumeSource) {}, true},
		{"items differ, and Slim drops them", func(p *corev1.ProjectedVolumeSource) {
			p.Sources[1].ConfigMap.Items = []corev1.KeyToPath{{Key: "ca.crt", Path: "other.crt"}}
			p.Sources[2].DownwardAPI.Items = nil
		}, true},
		{"other audience", func(p *corev1.ProjectedVolumeSource) { p.Sources[0].ServiceAccountToken.Audience = "vault" }, false},
		{"other expiration", func(p *corev1.ProjectedVolumeSource) {
			p.Sources[0].ServiceAccountToken.ExpirationSeconds = ptr(int64(7200))
		}, false},
		{"no expiration", func(p *corev1.ProjectedVolumeSource) { p.Sources[0].ServiceAccountToken.ExpirationSeconds = nil }, false},
		{"other token path", func(p *corev1.ProjectedVolumeSource) { p.Sources[0].ServiceAccountToken.Path = "jwt" }, false},
		{"other config map name", func(p *corev1.ProjectedVolumeSource) { p.Sources[1].ConfigMap.Name = "other-ca" }, false},
		{"optional config map", func(p *corev1.ProjectedVolumeSource) { p.Sources[1].ConfigMap.Optional = ptr(true) }, false},
		{"optional false, against unset", func(p *corev1.ProjectedVolumeSource) { p.Sources[1].ConfigMap.Optional = ptr(false) }, false},
		{"other default mode", func(p *corev1.ProjectedVolumeSource) { p.DefaultMode = ptr(int32(0o600)) }, false},
		{"sources in another order", func(p *corev1.ProjectedVolumeSource) {
			p.Sources[0], p.Sources[1] = p.Sources[1], p.Sources[0]
		}, false},
		{"one source fewer", func(p *corev1.ProjectedVolumeSource) { p.Sources = p.Sources[:2] }, false},
		{"a pod certificate besides", func(p *corev1.ProjectedVolumeSource) {
			p.Sources = append(p.Sources, corev1.VolumeProjection{PodCertificate: &corev1.PodCertificateProjection{SignerName: "example.com/s", KeyType: "ED25519"}})
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := apiAccessPod("a"), apiAccessPod("b")
			tc.change(projected(b))
			want := projected(b).DeepCopy()
			slimVolume(&corev1.VolumeSource{Projected: want})
			Slim(a)
			Slim(b)
			pa, pb := projected(a), projected(b)
			sharesSources := &pa.Sources[0] == &pb.Sources[0]
			if sharesSources != tc.share || (pa == pb) != tc.share || (pa.DefaultMode == pb.DefaultMode) != tc.share {
				t.Errorf("pods share sources %v, the source %v, its default mode %v; want %v", sharesSources, pa == pb, pa.DefaultMode == pb.DefaultMode, tc.share)
			}
			if !apiequality.Semantic.DeepEqual(pb, want) {
				t.Errorf("second pod's sources after Slim:\n%+v\nwant\n%+v", pb, want)
			}
		})
	}
}

// TestSlimAgainKeepsTheSharedCopy: a pod slimmed twice keeps pointing at the shared copy, and
// the copy is unchanged.
func TestSlimAgainKeepsTheSharedCopy(t *testing.T) {
	a, b := apiAccessPod("a"), apiAccessPod("b")
	Slim(a)
	Slim(b)
	shared := projected(a)
	before := shared.DeepCopy()
	Slim(b)
	Slim(a)
	if projected(a) != shared || projected(b) != shared {
		t.Error("a second Slim let go of the shared sources")
	}
	if !apiequality.Semantic.DeepEqual(shared, before) {
		t.Errorf("a second Slim changed the shared sources:\n%+v\nwant\n%+v", shared, before)
	}
}

// shapeOf is a projected source of its own shape for each n.
func shapeOf(n int) *corev1.ProjectedVolumeSource {
	return &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: fmt.Sprintf("aud-%d", n), Path: "token"}},
	}}
}

func (t *shapeTable) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byKey)
}

// TestShapeTableBound: a full table shares the shapes it holds and no new one; a shape whose
// encoding is over the size bound is never shared.
func TestShapeTableBound(t *testing.T) {
	const limit = 4
	table := newShapeTable(limit)
	held := make([]*corev1.ProjectedVolumeSource, limit)
	for i := range held {
		held[i] = shapeOf(i)
		if got := table.share(held[i]); got != held[i] {
			t.Fatalf("shape %d: the table's first copy of a shape is not the one it was given", i)
		}
	}
	for i := range held {
		if got := table.share(shapeOf(i)); got != held[i] {
			t.Errorf("shape %d held by a full table is not shared", i)
		}
	}
	for i := limit; i < 3*limit; i++ {
		first := shapeOf(i)
		if got := table.share(first); got != first {
			t.Fatalf("a shape past the bound came back as another copy")
		}
		if again := shapeOf(i); table.share(again) != again {
			t.Errorf("shape %d was shared past the bound of %d", i, limit)
		}
	}
	if n := table.size(); n != limit {
		t.Errorf("table holds %d shapes, bound %d", n, limit)
	}
	runtime.KeepAlive(held)

	big := func() *corev1.ProjectedVolumeSource {
		return &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: strings.Repeat("c", maxShapeBytes)}}},
		}}
	}
	roomy := newShapeTable(limit)
	if first, second := big(), big(); roomy.share(first) != first || roomy.share(second) != second {
		t.Error("a source over the size bound was shared")
	}
	if n := roomy.size(); n != 0 {
		t.Errorf("the table kept %d sources over the size bound", n)
	}
}

// TestShapeTableFreesUnusedShapes: once no pod holds a shape, its place goes to a new one (a
// full table does not stay full of shapes whose pods are gone).
func TestShapeTableFreesUnusedShapes(t *testing.T) {
	const limit = 4
	table := newShapeTable(limit)
	fill := func() {
		for i := range limit {
			table.share(shapeOf(i))
		}
	}
	fill()
	runtime.GC()
	fresh := shapeOf(limit)
	if table.share(fresh) != fresh {
		t.Fatal("the table's copy of a new shape is not the one it was given")
	}
	if again := shapeOf(limit); table.share(again) != fresh {
		t.Error("a new shape was not shared after the shapes before it were freed")
	}
	if n := table.size(); n != 1 {
		t.Errorf("table holds %d shapes after the sweep, want 1", n)
	}
	runtime.KeepAlive(fresh)
}

// TestSlimConcurrently slims fresh pods, each twice, on many goroutines, as the informers'
// transforms do, while they read the shared copy; run with -race. Every pod ends on one copy.
func TestSlimConcurrently(t *testing.T) {
	const goroutines, pods = 8, 50
	first := apiAccessPod("first")
	Slim(first)
	shared := projected(first)
	var wg sync.WaitGroup
	results := make([][]*corev1.Pod, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range pods {
				p := apiAccessPod(fmt.Sprintf("p-%d-%d", g, i))
				Slim(p)
				// Again, as on a pod that already shares the copy other goroutines read.
				Slim(p)
				for _, src := range projected(p).Sources {
					if src.ConfigMap != nil && src.ConfigMap.Name != "kube-root-ca.crt" {
						t.Errorf("config map %q", src.ConfigMap.Name)
					}
				}
				results[g] = append(results[g], p)
			}
		})
	}
	wg.Wait()
	for g := range results {
		for _, p := range results[g] {
			if projected(p) != shared {
				t.Fatalf("pod %s does not share the sources", p.Name)
			}
		}
	}
}
