// Package node is the Node authorizer: a node may read a secret, configmap, claim, volume or
// service account only when one of the pods bound to it uses that object, and may otherwise
// do what the fixed system:node policy allows.
//
// The relationships come from watches of pods, PersistentVolumes, VolumeAttachments and
// PodCertificateRequests and
// point toward nodes:
//
//	node <- pod <- secret, configmap, serviceaccount, persistentvolumeclaim, resourceclaim
//	                                  persistentvolumeclaim <- persistentvolume <- secret
//	node <- volumeattachment
//	node <- pod <- podcertificaterequest (while the pod is bound to the node the request names)
//
// Rather than walking these edges for every request, the graph keeps the set of (node,
// object) pairs joined by a path, each with the number of paths. Writers update that set
// incrementally as pods and volumes come and go; a decision is one lookup in it, which
// takes no lock, writes no memory and allocates nothing, so it costs the same for a node
// with thousands of pods as for one with ten, and goes on at full speed while writers
// change the graph.
package node

import (
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// objKey names an object a node may reach; namespace is empty for cluster-scoped kinds.
type objKey struct {
	kind      kind
	namespace string
	name      string
}

// nsName is the key of a namespaced object.
type nsName struct {
	namespace, name string
}

// pvRecord is a PersistentVolume bound, through its claimRef, to a claim.
type pvRecord struct {
	claim   nsName
	secrets []pvSecret
}

func (r pvRecord) equal(o pvRecord) bool {
	return r.claim == o.claim && slices.Equal(r.secrets, o.secrets)
}

// nodeCount says how many pods bound to node use a claim.
type nodeCount struct {
	node  string
	count int32
}

// Graph is the set of relationships between nodes and the objects their pods use.
type Graph struct {
	// mu serializes writers and guards the maps below. Decisions never take it; Explain
	// reads under it.
	mu   sync.RWMutex
	pods map[nsName]podRecord
	pvs  map[string]pvRecord
	// pvsByClaim lists the volumes whose claimRef names a claim: usually one.
	pvsByClaim map[nsName][]string
	// claimNodes lists, per claim, the nodes whose pods use it, so that binding a volume
	// to the claim reaches every such node without looking at pods.
	claimNodes  map[nsName][]nodeCount
	attachments map[string]string
	// pcrs holds each PodCertificateRequest's pod and node; pcrsByPod lists, per pod, the
	// requests that name it, so that the pod's arrival or departure links or unlinks them.
	pcrs      map[nsName]pcrRecord
	pcrsByPod map[nsName][]string
	// scratch collects the keys of one update; reused under mu to save allocations.
	scratch []objKey

	reach *reachSet
	// readable, when set, hears every (node, secret or configmap) pair appear and go.
	readable func(ReadableChange)
}

// NewGraph returns an empty graph.
func NewGraph() *Graph {
	return &Graph{
		pods:        map[nsName]podRecord{},
		pcrs:        map[nsName]pcrRecord{},
		pcrsByPod:   map[nsName][]string{},
		pvs:         map[string]pvRecord{},
		pvsByClaim:  map[nsName][]string{},
		claimNodes:  map[nsName][]nodeCount{},
		attachments: map[string]string{},
		reach:       newReachSet(),
	}
}

// reaches reports whether node has a path to the object. It is the whole of a decision's
// work on the graph.
func (g *Graph) reaches(node string, k kind, namespace, name string) bool {
	return g.reach.has(node, k, namespace, name)
}

// AddPod records the objects a pod uses for the node it is bound to, replacing what an
// earlier version of the pod recorded. A pod not bound to a node grants nothing.
func (g *Graph) AddPod(pod *corev1.Pod) {
	defer observeAction(opAddPod, time.Now())
	key := nsName{pod.Namespace, pod.Name}
	if pod.Spec.NodeName == "" {
		g.deletePod(key)
		return
	}
	rec := newPodRecord(pod.Spec.NodeName, podReferences(pod))
	g.mu.Lock()
	defer g.mu.Unlock()
	defer g.recordSizesLocked()
	old, had := g.pods[key]
	if had && old == rec {
		return
	}
	g.pods[key] = rec
	// The new paths first: an object both versions use keeps its path throughout, so that no
	// one hearing the graph's changes sees it go and come back.
	g.applyPodLocked(key, rec, 1)
	if had {
		g.applyPodLocked(key, old, -1)
	}
}

// DeletePod withdraws everything the pod granted its node.
func (g *Graph) DeletePod(namespace, name string) {
	defer observeAction(opDeletePod, time.Now())
	g.deletePod(nsName{namespace, name})
}

func (g *Graph) deletePod(key nsName) {
	g.mu.Lock()
	defer g.mu.Unlock()
	defer g.recordSizesLocked()
	if old, ok := g.pods[key]; ok {
		g.applyPodLocked(key, old, -1)
		delete(g.pods, key)
	}
}

// applyPodLocked adds (delta 1) or withdraws (delta -1) the paths a pod opens for its node:
// to the pod itself, to what it references, and through each claim to the volumes bound to
// it and their secrets.
func (g *Graph) applyPodLocked(pod nsName, rec podRecord, delta int32) {
	node := rec.node()
	keys := append(g.scratch[:0], objKey{kindPod, pod.namespace, pod.name})
	for r := range rec.refs() {
		keys = append(keys, objKey{r.kind, pod.namespace, r.name})
		if r.kind != kindPVC {
			continue
		}
		claim := nsName{pod.namespace, r.name}
		g.countClaimUserLocked(claim, node, delta)
		for _, pv := range g.pvsByClaim[claim] {
			keys = g.appendPVKeysLocked(keys, pv)
		}
	}
	for _, name := range g.pcrsByPod[pod] {
		if g.pcrs[nsName{pod.namespace, name}].node == node {
			keys = append(keys, objKey{kindPodCertificateRequest, pod.namespace, name})
		}
	}
	g.scratch = keys
	g.applyLocked(node, keys, delta)
}

// countClaimUserLocked keeps claimNodes current as a pod using claim arrives on or leaves
// node.
func (g *Graph) countClaimUserLocked(claim nsName, node string, delta int32) {
	users := g.claimNodes[claim]
	i := slices.IndexFunc(users, func(u nodeCount) bool { return u.node == node })
	switch {
	case i < 0 && delta > 0:
		g.claimNodes[claim] = append(users, nodeCount{node, delta})
	case i < 0:
		// Withdrawing a user never counted: nothing to undo.
	case users[i].count+delta > 0:
		users[i].count += delta
	case len(users) == 1:
		delete(g.claimNodes, claim)
	default:
		g.claimNodes[claim] = slices.Delete(users, i, i+1)
	}
}

// appendPVKeysLocked appends the volume and the secrets it grants.
func (g *Graph) appendPVKeysLocked(keys []objKey, pv string) []objKey {
	keys = append(keys, objKey{kindPV, "", pv})
	for _, s := range g.pvs[pv].secrets {
		keys = append(keys, objKey{kindSecret, s.namespace, s.name})
	}
	return keys
}

// AddPV records the claim a PersistentVolume is bound to and the secrets it needs,
// replacing what an earlier version recorded. Every node whose pods use that claim gains
// the volume and its secrets. A volume without a claimRef grants nothing.
func (g *Graph) AddPV(pv *corev1.PersistentVolume) {
	defer observeAction(opAddPV, time.Now())
	g.mu.Lock()
	defer g.mu.Unlock()
	defer g.recordSizesLocked()
	var rec pvRecord
	bound := pv.Spec.ClaimRef != nil
	if bound {
		rec = pvRecord{claim: nsName{pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name}, secrets: pvSecrets(pv)}
	}
	old, had := g.pvs[pv.Name]
	if had && bound && old.equal(rec) {
		return
	}
	var oldKeys []objKey
	if had {
		oldKeys = g.appendPVKeysLocked(nil, pv.Name)
		g.forgetPVLocked(pv.Name, old)
	}
	if bound {
		g.pvs[pv.Name] = rec
		g.pvsByClaim[rec.claim] = append(g.pvsByClaim[rec.claim], pv.Name)
		keys := g.appendPVKeysLocked(g.scratch[:0], pv.Name)
		g.scratch = keys
		for _, u := range g.claimNodes[rec.claim] {
			g.applyLocked(u.node, keys, u.count)
		}
	}
	// The old paths last, as AddPod does: a secret both versions grant keeps its path
	// throughout, so that no one hearing the graph's changes sees it go and come back.
	if had {
		for _, u := range g.claimNodes[old.claim] {
			g.applyLocked(u.node, oldKeys, -u.count)
		}
	}
}

// DeletePV withdraws what the volume granted.
func (g *Graph) DeletePV(name string) {
	defer observeAction(opDeletePV, time.Now())
	g.mu.Lock()
	defer g.mu.Unlock()
	defer g.recordSizesLocked()
	if old, ok := g.pvs[name]; ok {
		g.unbindPVLocked(name, old)
	}
}

func (g *Graph) unbindPVLocked(name string, rec pvRecord) {
	keys := g.appendPVKeysLocked(g.scratch[:0], name)
	g.scratch = keys
	for _, u := range g.claimNodes[rec.claim] {
		g.applyLocked(u.node, keys, -u.count)
	}
	g.forgetPVLocked(name, rec)
}

// forgetPVLocked drops the volume's record, without touching the paths it granted.
func (g *Graph) forgetPVLocked(name string, rec pvRecord) {
	pvs := slices.DeleteFunc(g.pvsByClaim[rec.claim], func(pv string) bool { return pv == name })
	if len(pvs) == 0 {
		delete(g.pvsByClaim, rec.claim)
	} else {
		g.pvsByClaim[rec.claim] = pvs
	}
	delete(g.pvs, name)
}

// AddVolumeAttachment records the node a VolumeAttachment attaches to; "" detaches it.
func (g *Graph) AddVolumeAttachment(name, nodeName string) {
	defer observeAction(opAddVolumeAttachment, time.Now())
	g.setAttachment(name, nodeName)
}

func (g *Graph) setAttachment(name, nodeName string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	defer g.recordSizesLocked()
	old := g.attachments[name]
	if old == nodeName {
		return
	}
	key := []objKey{{kindVolumeAttachment, "", name}}
	if old != "" {
		g.applyLocked(old, key, -1)
	}
	if nodeName == "" {
		delete(g.attachments, name)
		return
	}
	g.attachments[name] = nodeName
	g.applyLocked(nodeName, key, 1)
}

// DeleteVolumeAttachment withdraws the attachment's node's access to it.
func (g *Graph) DeleteVolumeAttachment(name string) {
	defer observeAction(opDeleteVolumeAttachment, time.Now())
	g.setAttachment(name, "")
}

// pcrRecord is a PodCertificateRequest's pod (in its namespace) and node.
type pcrRecord struct {
	pod, node string
}

// AddPodCertificateRequest records the pod and node a PodCertificateRequest names. The node
// reaches the request while that pod is bound to it.
func (g *Graph) AddPodCertificateRequest(namespace, name, podName, nodeName string) {
	defer observeAction(opAddPodCertificateRequest, time.Now())
	g.setPodCertificateRequest(nsName{namespace, name}, pcrRecord{podName, nodeName})
}

// DeletePodCertificateRequest withdraws the request's node's access to it.
func (g *Graph) DeletePodCertificateRequest(namespace, name string) {
	defer observeAction(opDeletePodCertificateRequest, time.Now())
	g.setPodCertificateRequest(nsName{namespace, name}, pcrRecord{})
}

func (g *Graph) setPodCertificateRequest(key nsName, rec pcrRecord) {
	g.mu.Lock()
	defer g.mu.Unlock()
	defer g.recordSizesLocked()
	old, had := g.pcrs[key]
	if old == rec {
		return
	}
	if had {
		g.linkPCRLocked(key, old, -1)
		pod := nsName{key.namespace, old.pod}
		if names := slices.DeleteFunc(g.pcrsByPod[pod], func(n string) bool { return n == key.name }); len(names) == 0 {
			delete(g.pcrsByPod, pod)
		} else {
			g.pcrsByPod[pod] = names
		}
		delete(g.pcrs, key)
	}
	if rec == (pcrRecord{}) {
		return
	}
	g.pcrs[key] = rec
	pod := nsName{key.namespace, rec.pod}
	g.pcrsByPod[pod] = append(g.pcrsByPod[pod], key.name)
	g.linkPCRLocked(key, rec, 1)
}

// linkPCRLocked adds or withdraws the request's path to its node when its pod is bound there.
func (g *Graph) linkPCRLocked(key nsName, rec pcrRecord, delta int32) {
	if pod, ok := g.pods[nsName{key.namespace, rec.pod}]; ok && pod.node() == rec.node {
		g.applyLocked(rec.node, []objKey{{kindPodCertificateRequest, key.namespace, key.name}}, delta)
	}
}

// applyLocked changes by delta the path counts from node to each of keys. A key listed
// twice (a secret a pod names that its volume also needs) counts twice, and is withdrawn
// twice.
func (g *Graph) applyLocked(node string, keys []objKey, delta int32) {
	for _, k := range keys {
		if changed := g.reach.addLocked(node, k, delta); changed != 0 && g.readable != nil {
			g.tellReadableLocked(node, k, changed > 0)
		}
	}
}

// path returns how node reaches the object, from the object to the node, each step named
// "<kind> <namespace>/<name>" (or "<kind> <name>" when cluster-scoped). When several paths
// exist it returns one of the shortest, through the pod whose namespace and name sort
// first, so the answer is stable.
func (g *Graph) path(node string, k kind, namespace, name string) ([]string, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	nodeStep := step("node", "", node)
	target := step(kindNames[k], namespace, name)
	switch k {
	case kindVolumeAttachment:
		if g.attachments[name] == node {
			return []string{target, nodeStep}, true
		}
		return nil, false
	case kindPodCertificateRequest:
		rec, ok := g.pcrs[nsName{namespace, name}]
		if pod, bound := g.pods[nsName{namespace, rec.pod}]; ok && bound && rec.node == node && pod.node() == node {
			return []string{target, step("pod", namespace, rec.pod), nodeStep}, true
		}
		return nil, false
	case kindPod:
		if rec, ok := g.pods[nsName{namespace, name}]; ok && rec.node() == node {
			return []string{target, nodeStep}, true
		}
		return nil, false
	}
	pods := g.podsOnLocked(node)
	for _, p := range pods {
		if p.namespace != namespace {
			continue
		}
		for r := range g.pods[p].refs() {
			if r.kind == k && r.name == name {
				return []string{target, step("pod", p.namespace, p.name), nodeStep}, true
			}
		}
	}
	if k != kindPV && k != kindSecret {
		return nil, false
	}
	for _, p := range pods {
		for r := range g.pods[p].refs() {
			if r.kind != kindPVC {
				continue
			}
			claim := nsName{p.namespace, r.name}
			for _, pv := range g.pvsByClaim[claim] {
				found := k == kindPV && pv == name
				if k == kindSecret {
					found = slices.Contains(g.pvs[pv].secrets, pvSecret{namespace, name})
				}
				if !found {
					continue
				}
				steps := []string{step(kindNames[kindPV], "", pv), step(kindNames[kindPVC], claim.namespace, claim.name), step("pod", p.namespace, p.name), nodeStep}
				if k == kindSecret {
					steps = append([]string{target}, steps...)
				}
				return steps, true
			}
		}
	}
	return nil, false
}

// podsOnLocked lists the pods bound to node, sorted.
func (g *Graph) podsOnLocked(node string) []nsName {
	var pods []nsName
	for k, rec := range g.pods {
		if rec.node() == node {
			pods = append(pods, k)
		}
	}
	slices.SortFunc(pods, func(a, b nsName) int {
		if a.namespace != b.namespace {
			return strings.Compare(a.namespace, b.namespace)
		}
		return strings.Compare(a.name, b.name)
	})
	return pods
}

func step(kindName, namespace, name string) string {
	if namespace == "" {
		return kindName + " " + name
	}
	return kindName + " " + namespace + "/" + name
}
