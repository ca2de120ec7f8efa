package node

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	certificatesinformers "k8s.io/client-go/informers/certificates/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	storageinformers "k8s.io/client-go/informers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// The watched resources, named as RevisionSource.LatestRevisions names them.
const (
	ResourcePods              = "pods"
	ResourcePersistentVolumes = "persistentvolumes"
	ResourceVolumeAttachments = "volumeattachments"
	// ResourcePodCertificateRequests is watched so that a node gets the requests for its pods.
	ResourcePodCertificateRequests = "podcertificaterequests"
)

// watched indexes Populator.revisions.
var watched = [...]string{ResourcePods, ResourcePersistentVolumes, ResourceVolumeAttachments, ResourcePodCertificateRequests}

const (
	podsIndex = iota
	pvsIndex
	attachmentsIndex
	pcrsIndex
)

// Populator keeps a Graph current from informer events, applying each as it arrives, and
// records how far into each resource's history it has applied, so that the authorizer
// can tell whether the graph has caught up with storage.
type Populator struct {
	graph         *Graph
	registrations []cache.ResourceEventHandlerRegistration

	// revisions holds, per watched resource, the highest resourceVersion (an etcd revision)
	// of the events applied to the graph.
	revisions [len(watched)]atomic.Int64
	// objects holds, per watched resource, how many objects the graph has, so that the
	// freshness wait knows which resources the store can list cheaply.
	objects [len(watched)]atomic.Int64
	// advancedCh is closed, and cleared, when an applied revision grows; it exists only
	// while someone waits, so that applying events costs nothing otherwise. waiting is
	// set whenever advancedCh is non-nil.
	advancedMu sync.Mutex
	advancedCh chan struct{}
	waiting    atomic.Bool
}

// NewPopulator registers on the informers the handlers that keep g current. The caller
// starts the informers.
func NewPopulator(g *Graph, pods coreinformers.PodInformer, pvs coreinformers.PersistentVolumeInformer,
	attachments storageinformers.VolumeAttachmentInformer, pcrs certificatesinformers.PodCertificateRequestInformer) (*Populator, error) {
	p := &Populator{graph: g}
	sources := []struct {
		resource string
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{ResourcePods, pods.Informer(), cache.ResourceEventHandlerFuncs{AddFunc: p.addPod, UpdateFunc: p.updatePod, DeleteFunc: p.deletePod}},
		{ResourcePersistentVolumes, pvs.Informer(), cache.ResourceEventHandlerFuncs{AddFunc: p.addPV, UpdateFunc: p.updatePV, DeleteFunc: p.deletePV}},
		{ResourceVolumeAttachments, attachments.Informer(), cache.ResourceEventHandlerFuncs{AddFunc: p.addAttachment, UpdateFunc: p.updateAttachment, DeleteFunc: p.deleteAttachment}},
		{ResourcePodCertificateRequests, pcrs.Informer(), cache.ResourceEventHandlerFuncs{AddFunc: p.addPCR, UpdateFunc: p.updatePCR, DeleteFunc: p.deletePCR}},
	}
	for _, s := range sources {
		reg, err := s.informer.AddEventHandler(s.handler)
		if err != nil {
			return nil, fmt.Errorf("watching %s for the node authorizer: %w", s.resource, err)
		}
		p.registrations = append(p.registrations, reg)
	}
	return p, nil
}

// HasSynced reports whether the graph holds every object of the informers' initial lists.
func (p *Populator) HasSynced() bool {
	for _, r := range p.registrations {
		if !r.HasSynced() {
			return false
		}
	}
	return true
}

func (p *Populator) addPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		unexpected(obj)
		return
	}
	if pod.Spec.NodeName != "" {
		p.graph.AddPod(pod)
	}
	p.objects[podsIndex].Add(1)
	p.applied(podsIndex, pod)
}

func (p *Populator) updatePod(oldObj, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		unexpected(obj)
		return
	}
	if old, ok := oldObj.(*corev1.Pod); !ok || referencesMayDiffer(old, pod) {
		p.graph.AddPod(pod)
	}
	p.applied(podsIndex, pod)
}

// referencesMayDiffer reports whether an update can change what a pod grants its node. A
// pod's references are immutable but for ephemeral containers, which are only ever added,
// and the claims generated for it, which its status records; its node is set once, by
// binding; a new UID is a new pod under the same name. Most pod updates are status
// reports from the kubelet and skip the graph.
func referencesMayDiffer(old, pod *corev1.Pod) bool {
	return old.Spec.NodeName != pod.Spec.NodeName || old.UID != pod.UID ||
		len(old.Spec.EphemeralContainers) != len(pod.Spec.EphemeralContainers) ||
		!slices.Equal(podResourceClaimNames(old), podResourceClaimNames(pod))
}

func (p *Populator) deletePod(obj any) {
	pod, ok := tombstoned(obj).(*corev1.Pod)
	if !ok {
		unexpected(obj)
		return
	}
	p.graph.DeletePod(pod.Namespace, pod.Name)
	p.objects[podsIndex].Add(-1)
	p.applied(podsIndex, pod)
}

func (p *Populator) addPV(obj any)       { p.applyPV(obj, 1) }
func (p *Populator) updatePV(_, obj any) { p.applyPV(obj, 0) }

// applyPV puts obj in the graph; added counts it as a new object.
func (p *Populator) applyPV(obj any, added int64) {
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok {
		unexpected(obj)
		return
	}
	p.graph.AddPV(pv)
	p.objects[pvsIndex].Add(added)
	p.applied(pvsIndex, pv)
}

func (p *Populator) deletePV(obj any) {
	pv, ok := tombstoned(obj).(*corev1.PersistentVolume)
	if !ok {
		unexpected(obj)
		return
	}
	p.graph.DeletePV(pv.Name)
	p.objects[pvsIndex].Add(-1)
	p.applied(pvsIndex, pv)
}

func (p *Populator) addAttachment(obj any)       { p.applyAttachment(obj, 1) }
func (p *Populator) updateAttachment(_, obj any) { p.applyAttachment(obj, 0) }

// applyAttachment puts obj in the graph; added counts it as a new object.
func (p *Populator) applyAttachment(obj any, added int64) {
	va, ok := obj.(*storagev1.VolumeAttachment)
	if !ok {
		unexpected(obj)
		return
	}
	p.graph.AddVolumeAttachment(va.Name, va.Spec.NodeName)
	p.objects[attachmentsIndex].Add(added)
	p.applied(attachmentsIndex, va)
}

func (p *Populator) deleteAttachment(obj any) {
	va, ok := tombstoned(obj).(*storagev1.VolumeAttachment)
	if !ok {
		unexpected(obj)
		return
	}
	p.graph.DeleteVolumeAttachment(va.Name)
	p.objects[attachmentsIndex].Add(-1)
	p.applied(attachmentsIndex, va)
}

func (p *Populator) addPCR(obj any)       { p.applyPCR(obj, 1) }
func (p *Populator) updatePCR(_, obj any) { p.applyPCR(obj, 0) }

// applyPCR puts obj in the graph; added counts it as a new object. Its spec is immutable, so an
// update changes nothing but the revision applied.
func (p *Populator) applyPCR(obj any, added int64) {
	r, ok := obj.(*certificatesv1.PodCertificateRequest)
	if !ok {
		unexpected(obj)
		return
	}
	p.graph.AddPodCertificateRequest(r.Namespace, r.Name, r.Spec.PodName, string(r.Spec.NodeName))
	p.objects[pcrsIndex].Add(added)
	p.applied(pcrsIndex, r)
}

func (p *Populator) deletePCR(obj any) {
	r, ok := tombstoned(obj).(*certificatesv1.PodCertificateRequest)
	if !ok {
		unexpected(obj)
		return
	}
	p.graph.DeletePodCertificateRequest(r.Namespace, r.Name)
	p.objects[pcrsIndex].Add(-1)
	p.applied(pcrsIndex, r)
}

func tombstoned(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

func unexpected(obj any) {
	utilruntime.HandleErrorWithLogger(klog.Background(), nil, "Node authorizer graph ignored an unexpected object", "type", fmt.Sprintf("%T", obj))
}

// applied records that the event carrying obj is in the graph, and wakes whoever waits for
// the graph to catch up. Events of one resource arrive in revision order, but a relist
// may replay older ones; the revision only grows.
func (p *Populator) applied(resource int, obj any) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	rv, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	if err != nil {
		return
	}
	for {
		cur := p.revisions[resource].Load()
		if rv <= cur {
			return
		}
		if p.revisions[resource].CompareAndSwap(cur, rv) {
			break
		}
	}
	if p.waiting.Load() {
		p.advancedMu.Lock()
		if p.advancedCh != nil {
			close(p.advancedCh)
			p.advancedCh = nil
		}
		p.waiting.Store(false)
		p.advancedMu.Unlock()
	}
}

// advanced returns a channel closed the next time an applied revision grows. A waiter
// takes it before checking caughtUp, so that no advance falls between the two.
func (p *Populator) advanced() <-chan struct{} {
	p.advancedMu.Lock()
	defer p.advancedMu.Unlock()
	if p.advancedCh == nil {
		p.advancedCh = make(chan struct{})
		p.waiting.Store(true)
	}
	return p.advancedCh
}

// exactObjects is the most objects of a resource for which the freshness wait asks the store
// for the newest revision among them: etcd answers by walking every key of the resource, which
// takes a quarter of a second at 150,000 pods on a busy machine. For a larger resource it waits
// for the store's current revision instead, which the writes of so many objects carry the graph
// past at once.
const exactObjects = 1000

// smallResources names the watched resources of at most exactObjects objects in the graph.
func (p *Populator) smallResources() []string {
	var small []string
	for i, resource := range watched {
		if p.objects[i].Load() <= exactObjects {
			small = append(small, resource)
		}
	}
	return small
}

// caughtUp reports whether the graph has applied every watched resource up to its revision
// in latest or, for one missing there, up to current.
func (p *Populator) caughtUp(current int64, latest map[string]int64) bool {
	for i, resource := range watched {
		target, ok := latest[resource]
		if !ok {
			target = current
		}
		if p.revisions[i].Load() < target {
			return false
		}
	}
	return true
}
