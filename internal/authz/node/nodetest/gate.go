// Package nodetest holds the Node authorizer's graph behind the store, for tests: it wraps the
// informers a Populator is built on so that, while paused, their events wait before reaching it.
// A test sees, without guessing at timing, that an event is held, and releases it when it likes.
package nodetest

import (
	"sync"

	certificatesinformers "k8s.io/client-go/informers/certificates/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	storageinformers "k8s.io/client-go/informers/storage/v1"
	"k8s.io/client-go/tools/cache"
)

// Gate delays the events of the informers it wraps while a Hold is in force.
type Gate struct {
	mu   sync.Mutex
	hold *Hold
}

// Hold keeps events from the handlers until Release.
type Hold struct {
	released, blocked        chan struct{}
	releaseOnce, blockedOnce sync.Once
}

// Pause makes the wrapped informers' events wait, from now until the hold is released.
func (g *Gate) Pause() *Hold {
	h := &Hold{released: make(chan struct{}), blocked: make(chan struct{})}
	g.mu.Lock()
	g.hold = h
	g.mu.Unlock()
	return h
}

// Blocked is closed once an event waits behind the hold.
func (h *Hold) Blocked() <-chan struct{} { return h.blocked }

// Release lets blocked and later events through.
func (h *Hold) Release() { h.releaseOnce.Do(func() { close(h.released) }) }

// wait blocks while a hold is in force.
func (g *Gate) wait() {
	g.mu.Lock()
	h := g.hold
	g.mu.Unlock()
	if h == nil {
		return
	}
	h.blockedOnce.Do(func() { close(h.blocked) })
	<-h.released
	g.mu.Lock()
	if g.hold == h {
		g.hold = nil
	}
	g.mu.Unlock()
}

// Pods wraps a pod informer.
func (g *Gate) Pods(i coreinformers.PodInformer) coreinformers.PodInformer {
	return pods{i, g}
}

// PersistentVolumes wraps a persistent volume informer.
func (g *Gate) PersistentVolumes(i coreinformers.PersistentVolumeInformer) coreinformers.PersistentVolumeInformer {
	return persistentVolumes{i, g}
}

// VolumeAttachments wraps a volume attachment informer.
func (g *Gate) VolumeAttachments(i storageinformers.VolumeAttachmentInformer) storageinformers.VolumeAttachmentInformer {
	return volumeAttachments{i, g}
}

// PodCertificateRequests wraps a pod certificate request informer.
func (g *Gate) PodCertificateRequests(i certificatesinformers.PodCertificateRequestInformer) certificatesinformers.PodCertificateRequestInformer {
	return podCertificateRequests{i, g}
}

type podCertificateRequests struct {
	certificatesinformers.PodCertificateRequestInformer
	gate *Gate
}

func (p podCertificateRequests) Informer() cache.SharedIndexInformer {
	return informer{p.PodCertificateRequestInformer.Informer(), p.gate}
}

type pods struct {
	coreinformers.PodInformer
	gate *Gate
}

func (p pods) Informer() cache.SharedIndexInformer { return informer{p.PodInformer.Informer(), p.gate} }

type persistentVolumes struct {
	coreinformers.PersistentVolumeInformer
	gate *Gate
}

func (p persistentVolumes) Informer() cache.SharedIndexInformer {
	return informer{p.PersistentVolumeInformer.Informer(), p.gate}
}

type volumeAttachments struct {
	storageinformers.VolumeAttachmentInformer
	gate *Gate
}

func (v volumeAttachments) Informer() cache.SharedIndexInformer {
	return informer{v.VolumeAttachmentInformer.Informer(), v.gate}
}

// informer registers handlers that pass the gate first.
type informer struct {
	cache.SharedIndexInformer
	gate *Gate
}

func (i informer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandler(handler{h, i.gate})
}

type handler struct {
	inner cache.ResourceEventHandler
	gate  *Gate
}

func (h handler) OnAdd(obj any, isInInitialList bool) {
	h.gate.wait()
	h.inner.OnAdd(obj, isInInitialList)
}

func (h handler) OnUpdate(oldObj, newObj any) {
	h.gate.wait()
	h.inner.OnUpdate(oldObj, newObj)
}

func (h handler) OnDelete(obj any) {
	h.gate.wait()
	h.inner.OnDelete(obj)
}
