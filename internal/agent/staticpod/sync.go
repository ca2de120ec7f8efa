package staticpod

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// Syncer keeps mirror pods in step with the directory: Sync(ctx) lists this node's mirror pods
// (field selector spec.nodeName=N, which the Node authorizer allows) and creates, deletes or
// recreates them to match Load's result.
type Syncer struct {
	cfg    Config
	client kubernetes.Interface
	log    klog.Logger
	clock  clock.Clock
	// settle is how long Run waits after a change in the directory before it reads it, so that
	// a file being written is read once, whole.
	settle time.Duration

	// mu serialises Syncs.
	mu sync.Mutex
	// seen is when each manifest version (by hash) was first seen, for the seen annotation.
	seen map[string]time.Time
	// refused is the last refusal logged for each file, so that a refusal is logged once and
	// not at every resync.
	refused map[string]string

	lastMu sync.Mutex
	last   []Manifest
}

// NewSyncer returns a Syncer that writes mirror pods through client, which holds the node's own
// credentials.
func NewSyncer(c Config, client kubernetes.Interface, log klog.Logger) *Syncer {
	clk, ok := c.Clock.(clock.Clock)
	if !ok {
		clk = clock.RealClock{}
	}
	if c.Clock == nil {
		c.Clock = clk
	}
	return &Syncer{
		cfg:     c,
		client:  client,
		log:     log,
		clock:   clk,
		settle:  defaultSettle,
		seen:    map[string]time.Time{},
		refused: map[string]string{},
	}
}

// Manifests returns the outcome of every file as the last Sync read them, sorted by file name.
func (s *Syncer) Manifests() []Manifest {
	s.lastMu.Lock()
	defer s.lastMu.Unlock()
	return append([]Manifest(nil), s.last...)
}

// Sync reads the directory and makes this node's mirror pods match it: a mirror pod whose
// manifest is gone is deleted, one whose manifest changed is deleted and created again (a pod's
// spec cannot be updated), and a manifest without its mirror pod gets one. Pods that are not
// this node's mirror pods are never touched. When the directory cannot be read nothing is
// deleted. Every pod is tried; the error joins the failures.
func (s *Syncer) Sync(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	manifests, err := Load(s.cfg)
	if err != nil {
		return err
	}
	s.lastMu.Lock()
	s.last = manifests
	s.lastMu.Unlock()
	want := s.wanted(manifests)
	byKey := make(map[string]*wantedPod, len(want))
	for _, w := range want {
		byKey[w.pod.Namespace+"/"+w.pod.Name] = w
	}

	list, err := s.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", s.cfg.NodeName).String(),
	})
	if err != nil {
		return fmt.Errorf("listing the pods of node %q: %w", s.cfg.NodeName, err)
	}

	var errs []error
	owner := nodeUIDResolver{s: s}
	have := map[string]bool{} // namespace/name of wanted pods whose current mirror pod stays
	blocked := map[string]bool{}
	for i := range list.Items {
		pod := &list.Items[i]
		if pod.Spec.NodeName != s.cfg.NodeName {
			continue
		}
		key := pod.Namespace + "/" + pod.Name
		hash, isMirror := pod.Annotations[MirrorAnnotation]
		w := byKey[key]
		if !isMirror {
			if w != nil {
				blocked[key] = true
				errs = append(errs, fmt.Errorf("pod %s of manifest %s: a pod of that name exists on this node and is not a mirror pod", key, w.file))
			}
			continue
		}
		if w != nil && hash == w.hash && pod.DeletionTimestamp == nil && s.ownedByNode(pod) {
			have[key] = true
			continue
		}
		if err := s.delete(ctx, pod, w); err != nil {
			blocked[key] = true
			errs = append(errs, err)
		}
	}
	for _, w := range want {
		key := w.pod.Namespace + "/" + w.pod.Name
		if have[key] || blocked[key] {
			continue
		}
		if err := s.create(ctx, w, &owner); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// wantedPod is a mirror pod a manifest asks for.
type wantedPod struct {
	file string
	hash string
	pod  *corev1.Pod
}

// wanted logs new refusals and returns the mirror pods the manifests ask for, in file order,
// with the seen annotation set to when each version was first seen.
func (s *Syncer) wanted(manifests []Manifest) []*wantedPod {
	var want []*wantedPod
	seen := map[string]time.Time{}
	refused := map[string]string{}
	for _, m := range manifests {
		if m.Err != nil {
			msg := m.Err.Error()
			if s.refused[m.File] != msg {
				s.log.Error(m.Err, "Refusing static pod manifest", "file", m.File)
			}
			refused[m.File] = msg
			continue
		}
		hash := m.Pod.Annotations[HashAnnotation]
		first, ok := s.seen[hash]
		if !ok {
			first = s.cfg.Clock.Now()
		}
		seen[hash] = first
		pod := m.Pod.DeepCopy()
		pod.Annotations[SeenAnnotation] = first.UTC().Format(time.RFC3339Nano)
		want = append(want, &wantedPod{file: m.File, hash: hash, pod: pod})
	}
	s.seen, s.refused = seen, refused
	return want
}

// delete removes a mirror pod at once: it stands for nothing that still runs, or for an older
// version. The UID precondition keeps a pod created since the list from being deleted.
func (s *Syncer) delete(ctx context.Context, pod *corev1.Pod, w *wantedPod) error {
	err := s.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &pod.UID},
	})
	switch {
	case err == nil, apierrors.IsNotFound(err):
	case apierrors.IsConflict(err):
		return fmt.Errorf("deleting mirror pod %s/%s: it changed since it was listed: %w", pod.Namespace, pod.Name, err)
	default:
		return fmt.Errorf("deleting mirror pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if w == nil {
		s.log.Info("Deleted mirror pod: its manifest is gone", "pod", klog.KObj(pod))
	} else {
		s.log.Info("Deleted mirror pod to create it again", "pod", klog.KObj(pod), "file", w.file)
	}
	return nil
}

func (s *Syncer) create(ctx context.Context, w *wantedPod, owner *nodeUIDResolver) error {
	uid, err := owner.uid(ctx)
	if err != nil {
		return fmt.Errorf("creating mirror pod %s/%s of %s: %w", w.pod.Namespace, w.pod.Name, w.file, err)
	}
	pod := w.pod.DeepCopy()
	pod.OwnerReferences = []metav1.OwnerReference{nodeOwner(s.cfg.NodeName, uid)}
	if _, err := s.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating mirror pod %s/%s of %s: a pod of that name already exists and is not this node's: %w", pod.Namespace, pod.Name, w.file, err)
		}
		return fmt.Errorf("creating mirror pod %s/%s of %s: %w", pod.Namespace, pod.Name, w.file, err)
	}
	s.log.Info("Created mirror pod", "pod", klog.KObj(pod), "file", w.file, "hash", w.hash)
	return nil
}

// nodeUIDResolver gives the Node's UID for one Sync: the configured one, or the Node's as read
// once, and only when a mirror pod is to be created.
type nodeUIDResolver struct {
	s    *Syncer
	read bool
	got  types.UID
	err  error
}

func (r *nodeUIDResolver) uid(ctx context.Context) (types.UID, error) {
	if r.s.cfg.NodeUID != "" {
		return r.s.cfg.NodeUID, nil
	}
	if !r.read {
		r.read = true
		node, err := r.s.client.CoreV1().Nodes().Get(ctx, r.s.cfg.NodeName, metav1.GetOptions{})
		switch {
		case err != nil:
			r.err = fmt.Errorf("reading Node %q for its UID: %w", r.s.cfg.NodeName, err)
		case node.UID == "":
			r.err = fmt.Errorf("node %q has no UID", r.s.cfg.NodeName)
		default:
			r.got = node.UID
		}
	}
	return r.got, r.err
}

// ownedByNode reports whether a mirror pod is controlled by the Node as this node knows it. A
// Node deleted and registered again has a new UID, and mirror pods owned by the old one would be
// collected with it. Without a configured UID the check would cost a request, so it is skipped.
func (s *Syncer) ownedByNode(pod *corev1.Pod) bool {
	uid := s.cfg.NodeUID
	if uid == "" {
		return true
	}
	ref := metav1.GetControllerOf(pod)
	return ref != nil && ref.Kind == "Node" && ref.Name == s.cfg.NodeName && ref.UID == uid
}
