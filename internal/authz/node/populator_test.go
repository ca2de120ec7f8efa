package node

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// newPopulator returns a populator on a fresh graph, registered on informers of client
// that the caller may start or leave idle and drive the handlers directly.
func newPopulator(t testing.TB, client *fake.Clientset) (*Graph, *Populator, informers.SharedInformerFactory) {
	t.Helper()
	factory := informers.NewSharedInformerFactory(client, 0)
	g := NewGraph()
	p, err := NewPopulator(g, factory.Core().V1().Pods(), factory.Core().V1().PersistentVolumes(), factory.Storage().V1().VolumeAttachments(), factory.Certificates().V1().PodCertificateRequests())
	if err != nil {
		t.Fatalf("NewPopulator: %v", err)
	}
	return g, p, factory
}

func TestPopulatorPods(t *testing.T) {
	unbound := newPod("ns", "p", "", withSecretVolume("s"), withRV("10"))
	bound := newPod("ns", "p", "n1", withSecretVolume("s"), withRV("11"))
	statusOnly := bound.DeepCopy()
	statusOnly.ResourceVersion = "12"
	statusOnly.Status.Phase = corev1.PodRunning
	debugged := statusOnly.DeepCopy()
	debugged.ResourceVersion = "13"
	debugged.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "debug-s"}}}},
	}}}
	recreated := newPod("ns", "p", "n2", withSecretVolume("s"), withRV("14"))
	recreated.UID = types.UID("another")

	cases := []struct {
		name   string
		events func(p *Populator)
		want   []reach
		rv     int64
	}{
		{"created unbound", func(p *Populator) { p.addPod(unbound) },
			[]reach{{"n1", kindSecret, "ns", "s", false}}, 10},
		{"bound", func(p *Populator) { p.addPod(unbound); p.updatePod(unbound, bound) },
			[]reach{{"n1", kindSecret, "ns", "s", true}, {"n1", kindPod, "ns", "p", true}}, 11},
		{"created bound", func(p *Populator) { p.addPod(bound) },
			[]reach{{"n1", kindSecret, "ns", "s", true}}, 11},
		{"status update", func(p *Populator) { p.addPod(bound); p.updatePod(bound, statusOnly) },
			[]reach{{"n1", kindSecret, "ns", "s", true}}, 12},
		{"ephemeral container added", func(p *Populator) { p.addPod(bound); p.updatePod(statusOnly, debugged) },
			[]reach{{"n1", kindSecret, "ns", "s", true}, {"n1", kindSecret, "ns", "debug-s", true}}, 13},
		{"deleted", func(p *Populator) { p.addPod(bound); p.deletePod(statusOnly) },
			[]reach{{"n1", kindSecret, "ns", "s", false}, {"n1", kindPod, "ns", "p", false}}, 12},
		{"deleted, seen as a tombstone", func(p *Populator) {
			p.addPod(bound)
			p.deletePod(cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: bound})
		}, []reach{{"n1", kindSecret, "ns", "s", false}}, 11},
		{"recreated on another node", func(p *Populator) { p.addPod(bound); p.updatePod(bound, recreated) },
			[]reach{{"n1", kindSecret, "ns", "s", false}, {"n2", kindSecret, "ns", "s", true}}, 14},
		{"unexpected object", func(p *Populator) { p.addPod(bound); p.updatePod(bound, "not a pod") },
			[]reach{{"n1", kindSecret, "ns", "s", true}}, 11},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, p, _ := newPopulator(t, fake.NewClientset())
			tc.events(p)
			checkReach(t, g, tc.want...)
			if got := p.revisions[podsIndex].Load(); got != tc.rv {
				t.Errorf("applied pods revision = %d, want %d", got, tc.rv)
			}
		})
	}
}

func TestPopulatorVolumes(t *testing.T) {
	pod := newPod("ns", "p", "n1", withClaim("c"))
	pv := newPV("pv", claimRef("ns", "c"), &corev1.SecretReference{Namespace: "ns", Name: "pvs"})
	pv.ResourceVersion = "20"
	released := pv.DeepCopy()
	released.ResourceVersion = "21"
	released.Spec.ClaimRef = nil
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va", ResourceVersion: "30"}, Spec: storagev1.VolumeAttachmentSpec{NodeName: "n1"}}
	cases := []struct {
		name   string
		events func(p *Populator)
		want   []reach
	}{
		{"volume bound to the pod's claim", func(p *Populator) { p.addPod(pod); p.addPV(pv) },
			[]reach{{"n1", kindPV, "", "pv", true}, {"n1", kindSecret, "ns", "pvs", true}}},
		{"volume released", func(p *Populator) { p.addPod(pod); p.addPV(pv); p.updatePV(pv, released) },
			[]reach{{"n1", kindPV, "", "pv", false}, {"n1", kindSecret, "ns", "pvs", false}}},
		{"volume deleted", func(p *Populator) { p.addPod(pod); p.addPV(pv); p.deletePV(cache.DeletedFinalStateUnknown{Obj: pv}) },
			[]reach{{"n1", kindPV, "", "pv", false}}},
		{"attachment", func(p *Populator) { p.addAttachment(va) },
			[]reach{{"n1", kindVolumeAttachment, "", "va", true}}},
		{"attachment deleted", func(p *Populator) { p.addAttachment(va); p.deleteAttachment(va) },
			[]reach{{"n1", kindVolumeAttachment, "", "va", false}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, p, _ := newPopulator(t, fake.NewClientset())
			tc.events(p)
			checkReach(t, g, tc.want...)
		})
	}
}

func TestPopulatorRevisions(t *testing.T) {
	_, p, _ := newPopulator(t, fake.NewClientset())
	p.addPod(newPod("ns", "a", "n1", withRV("5")))
	p.addPod(newPod("ns", "b", "", withRV("7")))
	p.addPod(newPod("ns", "c", "n1", withRV("6")))
	p.addPod(newPod("ns", "d", "n1"))
	if got := p.revisions[podsIndex].Load(); got != 7 {
		t.Errorf("pods revision = %d, want 7: the highest applied, unbound pods included", got)
	}
	cases := []struct {
		name    string
		current int64
		latest  map[string]int64
		want    bool
	}{
		{"pods reached", 0, map[string]int64{"pods": 7}, true},
		{"pods behind", 0, map[string]int64{"pods": 8}, false},
		{"every resource reached", 0, map[string]int64{"pods": 7, "persistentvolumes": 0, "volumeattachments": 0}, true},
		{"volumes behind", 0, map[string]int64{"pods": 7, "persistentvolumes": 1}, false},
		{"other resources do not count", 0, map[string]int64{"secrets": 100}, true},
		{"current revision for a resource not listed", 7, map[string]int64{"persistentvolumes": 0, "volumeattachments": 0, "podcertificaterequests": 0}, true},
		{"current revision not reached", 8, map[string]int64{"persistentvolumes": 0, "volumeattachments": 0, "podcertificaterequests": 0}, false},
		{"current revision for every resource not listed", 7, map[string]int64{"pods": 7}, false},
	}
	for _, tc := range cases {
		if got := p.caughtUp(tc.current, tc.latest); got != tc.want {
			t.Errorf("%s: caughtUp(%d, %v) = %v, want %v", tc.name, tc.current, tc.latest, got, tc.want)
		}
	}
}

// TestPopulatorSmallResources: the populator counts each resource's objects, adds less
// deletes, so that the freshness wait asks the store only about small resources.
func TestPopulatorSmallResources(t *testing.T) {
	_, p, _ := newPopulator(t, fake.NewClientset())
	all := []string{ResourcePods, ResourcePersistentVolumes, ResourceVolumeAttachments, ResourcePodCertificateRequests}
	if got := p.smallResources(); !slices.Equal(got, all) {
		t.Errorf("empty graph: small resources %v, want %v", got, all)
	}
	for i := range exactObjects {
		p.addPV(newPV(fmt.Sprintf("pv%d", i), nil, nil))
	}
	p.updatePV(nil, newPV("pv0", nil, nil))
	if got := p.smallResources(); !slices.Equal(got, all) {
		t.Errorf("%d volumes, one updated: small resources %v, want %v", exactObjects, got, all)
	}
	p.addPV(newPV("one-more", nil, nil))
	if got, want := p.smallResources(), []string{ResourcePods, ResourceVolumeAttachments, ResourcePodCertificateRequests}; !slices.Equal(got, want) {
		t.Errorf("%d volumes: small resources %v, want %v", exactObjects+1, got, want)
	}
	p.deletePV(cache.DeletedFinalStateUnknown{Key: "one-more", Obj: newPV("one-more", nil, nil)})
	if got := p.smallResources(); !slices.Equal(got, all) {
		t.Errorf("back to %d volumes: small resources %v, want %v", exactObjects, got, all)
	}
}

// TestPopulatorThroughInformers runs the populator on real informers over a fake
// clientset: creating, binding and deleting pods moves access as the API changes.
func TestPopulatorThroughInformers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	client := fake.NewClientset(newPod("ns", "old", "n1", withSecretVolume("old-s"), withRV("3")))
	g, p, factory := newPopulator(t, client)
	factory.Start(ctx.Done())
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), p.HasSynced) {
		t.Fatal("populator did not sync")
	}
	checkReach(t, g, reach{"n1", kindSecret, "ns", "old-s", true})

	// waitApplied waits for the populator to apply a pod revision, the way WaitFresh does.
	waitApplied := func(rv int64) {
		t.Helper()
		f := NewFreshness(fixedRevisions{"pods": rv}, p, wait)
		if !f.WaitFresh(ctx) {
			t.Fatalf("populator did not apply pods revision %d", rv)
		}
	}
	pods := client.CoreV1().Pods("ns")
	created, err := pods.Create(ctx, newPod("ns", "p", "", withSecretVolume("s"), withRV("4")), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitApplied(4)
	checkReach(t, g, reach{"n1", kindSecret, "ns", "s", false})

	created.Spec.NodeName = "n1"
	created.ResourceVersion = "5"
	if _, err := pods.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitApplied(5)
	checkReach(t, g, reach{"n1", kindSecret, "ns", "s", true})

	if err := pods.Delete(ctx, "old", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The fake clientset's delete event carries the object as stored, revision 3: the
	// populator has seen that one already, so wait for a later event to pass it.
	if _, err := pods.Create(ctx, newPod("ns", "marker", "", withRV("6")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitApplied(6)
	checkReach(t, g, reach{"n1", kindSecret, "ns", "old-s", false})
}
