// Package staticpod turns the pod manifests in a node's manifest directory into mirror pods in
// the API, as the kubelet does for its static pods: the node runs what the files say, and the API
// shows it. Mirror pods are written with the node's own credentials, so NodeRestriction admits
// only those that reference no API object; manifests that do are refused here, before any
// request, with the file and the field named.
package staticpod

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/idplane/idplane/internal/defaults"
	"github.com/idplane/idplane/internal/podwalk"
	"github.com/idplane/idplane/internal/validation"
)

// Annotations the kubelet puts on static pods and their mirror pods; tools (kubectl, kubeadm)
// read them to tell a mirror pod from an ordinary one.
const (
	// HashAnnotation is the static pod's hash, which is also its UID.
	HashAnnotation = "kubernetes.io/config.hash"
	// SourceAnnotation says where the static pod came from.
	SourceAnnotation = "kubernetes.io/config.source"
	// SeenAnnotation is when the node first saw this version of the manifest (RFC 3339).
	SeenAnnotation = "kubernetes.io/config.seen"
	// MirrorAnnotation marks a mirror pod; its value is the static pod's hash.
	MirrorAnnotation = corev1.MirrorPodAnnotationKey

	// SourceFile is the source annotation's value for manifests read from the directory.
	SourceFile = "file"
)

// MaxManifestBytes caps a manifest file, as the kubelet does: a pod that needs more than 10 MiB
// of YAML is a mistake, and reading an unbounded file would let one file exhaust the agent.
const MaxManifestBytes = 10 << 20

// manifestExtensions are the file name endings read as manifests; other files (editor backups,
// notes) are left alone.
var manifestExtensions = []string{".yaml", ".yml", ".json"}

// Config says where the manifests are and which node mirrors them.
type Config struct {
	Dir      string
	NodeName string
	// NodeUID is the Node object's UID when known. Mirror pods are controlled by their Node, as
	// the kubelet has done since Kubernetes 1.19 and NodeRestriction requires; when it is empty
	// the Syncer reads the Node before creating mirror pods.
	NodeUID types.UID
	// Clock stamps the seen annotation; the real clock when nil. A Syncer also times its waits
	// with it when it is a clock.Clock.
	Clock clock.PassiveClock
}

// Manifest is one file's outcome.
type Manifest struct {
	File string
	Pod  *corev1.Pod // the mirror pod to have, nil when refused
	Err  error       // why the file was refused
}

// Load reads the directory once: every file's outcome, sorted by file name. Hidden files and
// files not ending in .yaml, .yml or .json are not manifests and get no outcome. An error means
// the directory could not be read; a file that cannot be read or used is refused in its Manifest.
func Load(c Config) ([]Manifest, error) {
	if c.Dir == "" {
		return nil, errors.New("no pod manifest directory")
	}
	if c.NodeName == "" {
		return nil, errors.New("no node name for static pods")
	}
	entries, err := os.ReadDir(c.Dir)
	if err != nil {
		return nil, fmt.Errorf("reading pod manifest directory: %w", err)
	}
	now := time.Now()
	if c.Clock != nil {
		now = c.Clock.Now()
	}
	var out []Manifest
	byKey := map[string]string{} // namespace/name → file that defines it
	for _, e := range entries {
		name := e.Name()
		if !isManifestName(name) {
			continue
		}
		path := filepath.Join(c.Dir, name)
		pod, err := loadFile(c, path, now)
		if err == nil {
			key := pod.Namespace + "/" + pod.Name
			if first, dup := byKey[key]; dup {
				pod, err = nil, fmt.Errorf("pod %s is already defined by %s", key, first)
			} else {
				byKey[key] = name
			}
		}
		out = append(out, Manifest{File: path, Pod: pod, Err: err})
	}
	return out, nil
}

func isManifestName(name string) bool {
	if strings.HasPrefix(name, ".") {
		return false
	}
	ext := strings.ToLower(filepath.Ext(name))
	for _, want := range manifestExtensions {
		if ext == want {
			return true
		}
	}
	return false
}

// loadFile reads one manifest and makes its mirror pod, or says why it cannot.
func loadFile(c Config, path string, now time.Time) (*corev1.Pod, error) {
	data, err := readRegular(path)
	if err != nil {
		return nil, err
	}
	pod, err := decodePod(data)
	if err != nil {
		return nil, err
	}
	if pod.Name == "" {
		return nil, errors.New("metadata.name: Required value: a static pod needs a name")
	}
	// The manifest says what to run; status is the node's to report, never the file's.
	pod.Status = corev1.PodStatus{}
	if err := refuseReferences(pod); err != nil {
		return nil, err
	}
	// The server's decode defaults, so that the hash and the checks see the pod it will store.
	defaults.Pod(pod)
	hash, err := podHash(pod, c.NodeName, filepath.Base(path))
	if err != nil {
		return nil, err
	}
	mirror(pod, c, hash, now)
	if errs := validation.ValidatePod(pod); len(errs) > 0 {
		return nil, fmt.Errorf("invalid pod: %w", errs.ToAggregate())
	}
	return pod, nil
}

// readRegular reads a file that is regular, following symlinks as the kubelet does. A FIFO or
// device is never opened for reading: opening is non-blocking and the open file is checked again,
// in case it was swapped after the first look.
func readRegular(path string) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := checkRegular(info); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := checkRegular(info); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxManifestBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxManifestBytes {
		return nil, fmt.Errorf("larger than %d bytes", MaxManifestBytes)
	}
	return data, nil
}

func checkRegular(info os.FileInfo) error {
	switch {
	case info.IsDir():
		return errors.New("is a directory (manifest directories are not read recursively)")
	case !info.Mode().IsRegular():
		return fmt.Errorf("not a regular file (mode %s)", info.Mode().Type())
	case info.Size() > MaxManifestBytes:
		return fmt.Errorf("%d bytes, larger than %d", info.Size(), MaxManifestBytes)
	}
	return nil
}

// podDecoder decodes YAML or JSON into core/v1 types. It does not default: defaulting is done
// once, by the server's rules.
var podDecoder = func() runtime.Decoder {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		panic(err)
	}
	return serializer.NewCodecFactory(s).UniversalDeserializer()
}()

// decodePod decodes a file that holds exactly one v1 Pod.
func decodePod(data []byte) (*corev1.Pod, error) {
	var docs [][]byte
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("not YAML or JSON: %w", err)
		}
		if len(bytes.TrimSpace(doc)) > 0 && !isYAMLComment(doc) {
			docs = append(docs, doc)
		}
	}
	switch len(docs) {
	case 0:
		return nil, errors.New("empty: no pod in the file")
	case 1:
	default:
		return nil, fmt.Errorf("%d documents: a manifest file holds one pod", len(docs))
	}
	// The kind first, so that another kind is refused by name rather than by a decoding error.
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(docs[0], &tm); err != nil {
		return nil, fmt.Errorf("not YAML or JSON: %w", err)
	}
	if tm.APIVersion != "v1" || tm.Kind != "Pod" {
		return nil, fmt.Errorf("not a Pod: apiVersion %q kind %q, want \"v1\" \"Pod\"", tm.APIVersion, tm.Kind)
	}
	obj, _, err := podDecoder.Decode(docs[0], nil, nil)
	if err != nil {
		return nil, fmt.Errorf("not a valid Pod document: %w", err)
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("not a Pod: decoded %T", obj)
	}
	return pod, nil
}

// isYAMLComment reports whether a document holds nothing but comments.
func isYAMLComment(doc []byte) bool {
	for line := range bytes.Lines(doc) {
		if l := bytes.TrimSpace(line); len(l) > 0 && l[0] != '#' {
			return false
		}
	}
	return true
}

// refuseReferences refuses a pod that names any API object. A static pod must run without the
// API (it often is the API), and NodeRestriction refuses such mirror pods anyway, since creating
// one would give the node a path to the object in the Node authorizer's graph.
func refuseReferences(pod *corev1.Pod) error {
	var found []string
	for r := range podwalk.References(pod) {
		switch {
		case r.Kind == podwalk.Unknown:
			found = append(found, fmt.Sprintf("a volume source this node cannot judge (%s)", r.Path))
		case r.Name == "":
			found = append(found, fmt.Sprintf("%s (%s)", r.Kind.Resource(), r.Path))
		default:
			found = append(found, fmt.Sprintf("%s %q (%s)", r.Kind.Resource(), r.Name, r.Path))
		}
	}
	if len(found) == 0 {
		return nil
	}
	return fmt.Errorf("static pods may not reference API objects: %s", strings.Join(found, ", "))
}

// podHash identifies one version of one manifest on one node: the pod as decoded and defaulted
// (so that comments and formatting do not count), the node and the file name. It is the static
// pod's UID and the mirror pod's annotation, and a change of it replaces the mirror pod.
func podHash(pod *corev1.Pod, nodeName, file string) (string, error) {
	data, err := json.Marshal(pod)
	if err != nil {
		return "", fmt.Errorf("hashing the pod: %w", err)
	}
	h := sha256.New()
	h.Write(data)
	fmt.Fprintf(h, "\x00host:%s\x00file:%s", nodeName, file)
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// noExecuteToleration keeps static pods on their node whatever its taints, as the kubelet does:
// nothing but the file decides where a static pod runs.
var noExecuteToleration = corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}

// mirror makes the decoded pod this node's mirror pod of it, with the kubelet's static pod
// defaults.
func mirror(pod *corev1.Pod, c Config, hash string, now time.Time) {
	// Fields only the server sets; a manifest copied from `kubectl get -o yaml` carries them.
	pod.ObjectMeta = metav1.ObjectMeta{
		Name:        pod.Name + "-" + strings.ToLower(c.NodeName),
		Namespace:   pod.Namespace,
		UID:         types.UID(hash),
		Labels:      pod.Labels,
		Annotations: pod.Annotations,
		Finalizers:  pod.Finalizers,
	}
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[HashAnnotation] = hash
	pod.Annotations[SourceAnnotation] = SourceFile
	pod.Annotations[SeenAnnotation] = now.UTC().Format(time.RFC3339Nano)
	pod.Annotations[MirrorAnnotation] = hash
	if c.NodeUID != "" {
		pod.OwnerReferences = []metav1.OwnerReference{nodeOwner(c.NodeName, c.NodeUID)}
	}
	pod.Spec.NodeName = c.NodeName
	if !hasToleration(pod.Spec.Tolerations, noExecuteToleration) {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, noExecuteToleration)
	}
}

// nodeOwner is the owner reference NodeRestriction requires of a mirror pod: the node's own
// Node as controller, without blockOwnerDeletion (which would need delete rights on the Node).
func nodeOwner(nodeName string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: corev1.SchemeGroupVersion.String(),
		Kind:       "Node",
		Name:       nodeName,
		UID:        uid,
		Controller: ptr.To(true),
	}
}

func hasToleration(list []corev1.Toleration, t corev1.Toleration) bool {
	for _, have := range list {
		if have.Key == t.Key && have.Operator == t.Operator && have.Value == t.Value && have.Effect == t.Effect {
			return true
		}
	}
	return false
}
