// Package volumes builds the files of a pod's secret, configMap, downwardAPI and projected
// volumes from the pod and the API objects they name, as the kubelet would write them. It
// does no I/O of its own: objects and tokens come through Sources, files go to an
// atomicwriter. Nothing from the API is trusted to have been validated: paths, modes, sizes
// and field references are checked again here.
package volumes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/idplane/idplane/internal/agent/atomicwriter"
)

// Sources gives a volume builder the API objects it needs. Implementations read the API
// server (by name or single-object watch).
type Sources interface {
	Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)       // apierrors NotFound when missing
	ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) // idem
	ServiceAccountToken(ctx context.Context, pod *corev1.Pod, source *corev1.ServiceAccountTokenProjection) ([]byte, error)
	ClusterTrustBundles(ctx context.Context, source *corev1.ClusterTrustBundleProjection) ([]byte, error) // PEM, concatenated and deduplicated, NotFound when none and not optional
}

// NodeAllocatableSource may also be implemented by a Sources. A downward API file naming a
// cpu, memory or ephemeral-storage limit the container does not set gets the node's
// allocatable amount, as in the kubelet; without this the file is refused.
type NodeAllocatableSource interface {
	NodeAllocatable(ctx context.Context) (corev1.ResourceList, error)
}

// Supported reports whether the agent writes this volume's contents (secret, configMap,
// downwardAPI, projected).
func Supported(v *corev1.Volume) bool {
	return v != nil && (v.Secret != nil || v.ConfigMap != nil || v.DownwardAPI != nil || v.Projected != nil)
}

// defaultMode is the mode of files when the volume names none, the API's default for all
// four kinds.
const defaultMode = fs.FileMode(0o644)

// Build returns the files of volume v of pod. A missing non-optional source is an error for
// which IsNotReady(err) is true (the pod's volume stays unready and is retried); other errors
// are failures (bad item path, too large, ...). Every error a Sources returns counts as not
// ready, so a timeout or a refusal by the API server is retried too; a failure is reported in
// preference to a not-ready source, since waiting would not cure it.
func Build(ctx context.Context, pod *corev1.Pod, v *corev1.Volume, src Sources) (map[string]atomicwriter.FileProjection, error) {
	if pod == nil || v == nil || src == nil {
		return nil, errors.New("building a volume needs a pod, a volume and sources")
	}
	b := &builder{
		ctx:        ctx,
		pod:        pod,
		volumeName: v.Name,
		src:        src,
		owner:      podOwnership(pod),
		files:      map[string]atomicwriter.FileProjection{},
		origin:     map[string]string{},
	}
	b.volume(v)
	if len(b.failures) > 0 {
		return nil, fmt.Errorf("volume %q of pod %s/%s: %w", v.Name, pod.Namespace, pod.Name, errors.Join(b.failures...))
	}
	if len(b.waits) > 0 {
		return nil, fmt.Errorf("volume %q of pod %s/%s: %w", v.Name, pod.Namespace, pod.Name, &notReadyError{errors.Join(b.waits...)})
	}
	b.owner.applyFSGroup(b.files)
	files, err := atomicwriter.ValidateFiles(b.files)
	if err != nil {
		return nil, fmt.Errorf("volume %q of pod %s/%s: %w", v.Name, pod.Namespace, pod.Name, err)
	}
	return files, nil
}

// IsNotReady reports whether err says that a source of the volume is not there (yet): the
// volume is retried rather than failed.
func IsNotReady(err error) bool {
	var nr *notReadyError
	return errors.As(err, &nr)
}

type notReadyError struct{ err error }

func (e *notReadyError) Error() string { return e.err.Error() }
func (e *notReadyError) Unwrap() error { return e.err }

// builder collects the files of one volume, and every problem on the way, so that a failure
// is not hidden behind a source that is merely missing.
type builder struct {
	ctx        context.Context
	pod        *corev1.Pod
	volumeName string
	src        Sources
	owner      ownership

	files    map[string]atomicwriter.FileProjection
	origin   map[string]string // clean path → what put it there, for collisions
	failures []error
	waits    []error
}

func (b *builder) fail(format string, args ...any) {
	b.failures = append(b.failures, fmt.Errorf(format, args...))
}
func (b *builder) wait(format string, args ...any) {
	b.waits = append(b.waits, fmt.Errorf(format, args...))
}

// add puts one file in the volume, refusing a bad path or one already taken.
func (b *builder) add(p, origin string, f atomicwriter.FileProjection) {
	clean, err := atomicwriter.ValidatePath(p)
	if err != nil {
		b.fail("%s: %w", origin, err)
		return
	}
	if prev, taken := b.origin[clean]; taken {
		b.fail("%s: path %q is already written by %s", origin, p, prev)
		return
	}
	b.files[clean] = f
	b.origin[clean] = origin
}

func (b *builder) volume(v *corev1.Volume) {
	kinds := 0
	for _, set := range []bool{v.Secret != nil, v.ConfigMap != nil, v.DownwardAPI != nil, v.Projected != nil} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		b.fail("the agent writes volumes with exactly one of secret, configMap, downwardAPI or projected; this one has %d", kinds)
		return
	}
	switch {
	case v.Secret != nil:
		s := v.Secret
		if mode, ok := b.mode("defaultMode", s.DefaultMode, defaultMode); ok {
			b.secret(s.SecretName, s.Items, mode, isTrue(s.Optional), "")
		}
	case v.ConfigMap != nil:
		c := v.ConfigMap
		if mode, ok := b.mode("defaultMode", c.DefaultMode, defaultMode); ok {
			b.configMap(c.Name, c.Items, mode, isTrue(c.Optional), "")
		}
	case v.DownwardAPI != nil:
		d := v.DownwardAPI
		if mode, ok := b.mode("defaultMode", d.DefaultMode, defaultMode); ok {
			b.downwardAPI(d.Items, mode, "")
		}
	case v.Projected != nil:
		b.projected(v.Projected)
	}
}

// mode checks a mode from the API: permission bits only, as API validation requires.
func (b *builder) mode(what string, m *int32, fallback fs.FileMode) (fs.FileMode, bool) {
	if m == nil {
		return fallback, true
	}
	if *m < 0 || *m > 0o777 {
		b.fail("%s %#o: must be between 0 and 0777", what, *m)
		return 0, false
	}
	return fs.FileMode(*m), true
}

func (b *builder) secret(name string, items []corev1.KeyToPath, mode fs.FileMode, optional bool, prefix string) {
	what := fmt.Sprintf("%ssecret %q", prefix, name)
	if name == "" {
		b.fail("%s: no name", what)
		return
	}
	obj, err := b.src.Secret(b.ctx, b.pod.Namespace, name)
	if err != nil {
		if !(optional && apierrors.IsNotFound(err)) {
			b.wait("%s: %w", what, err)
		}
		return
	}
	size := 0
	for _, v := range obj.Data {
		size += len(v)
	}
	if size > corev1.MaxSecretSize {
		b.fail("%s: data is %d bytes, more than the API's limit of %d", what, size, corev1.MaxSecretSize)
		return
	}
	b.keys(what, obj.Data, items, mode, optional)
}

func (b *builder) configMap(name string, items []corev1.KeyToPath, mode fs.FileMode, optional bool, prefix string) {
	what := fmt.Sprintf("%sconfigMap %q", prefix, name)
	if name == "" {
		b.fail("%s: no name", what)
		return
	}
	obj, err := b.src.ConfigMap(b.ctx, b.pod.Namespace, name)
	if err != nil {
		if !(optional && apierrors.IsNotFound(err)) {
			b.wait("%s: %w", what, err)
		}
		return
	}
	data := make(map[string][]byte, len(obj.Data)+len(obj.BinaryData))
	size := 0
	for k, v := range obj.Data {
		data[k] = []byte(v)
		size += len(v)
	}
	for k, v := range obj.BinaryData {
		if _, dup := data[k]; dup {
			b.fail("%s: key %q is in both data and binaryData", what, k)
			return
		}
		data[k] = v
		size += len(v)
	}
	if size > corev1.MaxSecretSize {
		b.fail("%s: data is %d bytes, more than the API's limit of %d", what, size, corev1.MaxSecretSize)
		return
	}
	b.keys(what, data, items, mode, optional)
}

// keys writes an object's keys: all of them under their own names without items, else the
// items' keys at the items' paths. A listed key the object lacks is waited for unless the
// source is optional, in which case it is left out.
func (b *builder) keys(what string, data map[string][]byte, items []corev1.KeyToPath, mode fs.FileMode, optional bool) {
	if len(items) == 0 {
		for _, k := range slices.Sorted(maps.Keys(data)) {
			b.add(k, fmt.Sprintf("%s key %q", what, k), atomicwriter.FileProjection{Data: data[k], Mode: mode})
		}
		return
	}
	for i, it := range items {
		itemWhat := fmt.Sprintf("%s item %d (key %q)", what, i, it.Key)
		v, ok := data[it.Key]
		if !ok {
			if !optional {
				b.wait("%s: the object has no key %q", itemWhat, it.Key)
			}
			continue
		}
		m, ok := b.mode(itemWhat+" mode", it.Mode, mode)
		if !ok {
			continue
		}
		b.add(it.Path, itemWhat, atomicwriter.FileProjection{Data: v, Mode: m})
	}
}

func (b *builder) projected(p *corev1.ProjectedVolumeSource) {
	mode, ok := b.mode("defaultMode", p.DefaultMode, defaultMode)
	if !ok {
		return
	}
	for i := range p.Sources {
		s := &p.Sources[i]
		prefix := fmt.Sprintf("source %d: ", i)
		kinds := 0
		for _, set := range []bool{s.Secret != nil, s.ConfigMap != nil, s.DownwardAPI != nil, s.ServiceAccountToken != nil, s.ClusterTrustBundle != nil, s.PodCertificate != nil} {
			if set {
				kinds++
			}
		}
		if kinds != 1 {
			b.fail("source %d: must have exactly one kind of projection, has %d", i, kinds)
			continue
		}
		switch {
		case s.Secret != nil:
			b.secret(s.Secret.Name, s.Secret.Items, mode, isTrue(s.Secret.Optional), prefix)
		case s.ConfigMap != nil:
			b.configMap(s.ConfigMap.Name, s.ConfigMap.Items, mode, isTrue(s.ConfigMap.Optional), prefix)
		case s.DownwardAPI != nil:
			b.downwardAPI(s.DownwardAPI.Items, mode, prefix)
		case s.ServiceAccountToken != nil:
			b.serviceAccountToken(s.ServiceAccountToken, mode, prefix+"serviceAccountToken")
		case s.ClusterTrustBundle != nil:
			b.clusterTrustBundle(s.ClusterTrustBundle, mode, prefix+"clusterTrustBundle")
		case s.PodCertificate != nil:
			b.podCertificate(s.PodCertificate, i, mode, prefix+"podCertificate")
		}
	}
}

func (b *builder) serviceAccountToken(s *corev1.ServiceAccountTokenProjection, mode fs.FileMode, what string) {
	// The path is checked before a token is requested for it.
	if _, err := atomicwriter.ValidatePath(s.Path); err != nil {
		b.fail("%s: %w", what, err)
		return
	}
	token, err := b.src.ServiceAccountToken(b.ctx, b.pod, s)
	if err != nil {
		b.wait("%s: %w", what, err)
		return
	}
	b.add(s.Path, what, b.owner.token(token, mode))
}

func (b *builder) clusterTrustBundle(s *corev1.ClusterTrustBundleProjection, mode fs.FileMode, what string) {
	byName, bySigner := s.Name != nil, s.SignerName != nil
	if byName == bySigner {
		b.fail("%s: must select by exactly one of name and signerName", what)
		return
	}
	if byName && s.LabelSelector != nil {
		b.fail("%s: labelSelector goes with signerName, not name", what)
		return
	}
	if _, err := atomicwriter.ValidatePath(s.Path); err != nil {
		b.fail("%s: %w", what, err)
		return
	}
	pem, err := b.src.ClusterTrustBundles(b.ctx, s)
	if err != nil {
		// An optional bundle that matches nothing is an empty file, as in the kubelet.
		if !(isTrue(s.Optional) && apierrors.IsNotFound(err)) {
			b.wait("%s: %w", what, err)
			return
		}
		pem = []byte{}
	}
	b.add(s.Path, what, atomicwriter.FileProjection{Data: pem, Mode: mode})
}

func isTrue(b *bool) bool { return b != nil && *b }
