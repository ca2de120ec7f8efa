package volumes

import (
	"fmt"
	"io/fs"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/idplane/idplane/internal/agent/atomicwriter"
)

// podFields are the pod fields a downward API file may name, and how each is written.
var podFields = map[string]func(*corev1.Pod) string{
	"metadata.name":           func(p *corev1.Pod) string { return p.Name },
	"metadata.namespace":      func(p *corev1.Pod) string { return p.Namespace },
	"metadata.uid":            func(p *corev1.Pod) string { return string(p.UID) },
	"metadata.labels":         func(p *corev1.Pod) string { return formatMap(p.Labels) },
	"metadata.annotations":    func(p *corev1.Pod) string { return formatMap(p.Annotations) },
	"spec.nodeName":           func(p *corev1.Pod) string { return p.Spec.NodeName },
	"spec.serviceAccountName": func(p *corev1.Pod) string { return p.Spec.ServiceAccountName },
	"status.podIP":            func(p *corev1.Pod) string { return p.Status.PodIP },
	"status.podIPs": func(p *corev1.Pod) string {
		ips := make([]string, len(p.Status.PodIPs))
		for i, ip := range p.Status.PodIPs {
			ips[i] = ip.IP
		}
		return strings.Join(ips, ",")
	},
	"status.hostIP": func(p *corev1.Pod) string { return p.Status.HostIP },
	"status.hostIPs": func(p *corev1.Pod) string {
		ips := make([]string, len(p.Status.HostIPs))
		for i, ip := range p.Status.HostIPs {
			ips[i] = ip.IP
		}
		return strings.Join(ips, ",")
	},
}

// subscriptedFields are the maps a field path may index, `metadata.labels['key']`, with the
// check of the key the API applies.
var subscriptedFields = map[string]struct {
	value    func(*corev1.Pod) map[string]string
	checkKey func(string) []string
}{
	"metadata.labels": {
		value:    func(p *corev1.Pod) map[string]string { return p.Labels },
		checkKey: validation.IsQualifiedName,
	},
	"metadata.annotations": {
		value:    func(p *corev1.Pod) map[string]string { return p.Annotations },
		checkKey: func(k string) []string { return validation.IsQualifiedName(strings.ToLower(k)) },
	},
}

// formatMap writes labels or annotations as the kubelet does: one key="value" line per
// entry in key order, the value quoted as Go quotes strings, no final newline.
func formatMap(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = fmt.Sprintf("%s=%q", k, m[k])
	}
	return strings.Join(lines, "\n")
}

func (b *builder) downwardAPI(items []corev1.DownwardAPIVolumeFile, mode fs.FileMode, prefix string) {
	for i, it := range items {
		what := fmt.Sprintf("%sdownwardAPI item %d (path %q)", prefix, i, it.Path)
		m, ok := b.mode(what+" mode", it.Mode, mode)
		if !ok {
			continue
		}
		var value string
		var err error
		switch {
		case it.FieldRef != nil && it.ResourceFieldRef != nil:
			b.fail("%s: has both fieldRef and resourceFieldRef", what)
			continue
		case it.FieldRef != nil:
			value, err = podFieldValue(b.pod, it.FieldRef)
		case it.ResourceFieldRef != nil:
			value, err = b.resourceValue(it.ResourceFieldRef)
		default:
			b.fail("%s: has neither fieldRef nor resourceFieldRef", what)
			continue
		}
		if err != nil {
			if IsNotReady(err) {
				b.waits = append(b.waits, fmt.Errorf("%s: %w", what, err))
			} else {
				b.fail("%s: %w", what, err)
			}
			continue
		}
		b.add(it.Path, what, atomicwriter.FileProjection{Data: []byte(value), Mode: m})
	}
}

func podFieldValue(pod *corev1.Pod, ref *corev1.ObjectFieldSelector) (string, error) {
	if ref.APIVersion != "" && ref.APIVersion != "v1" {
		return "", fmt.Errorf("fieldRef apiVersion %q: only v1 is supported", ref.APIVersion)
	}
	if field, key, ok := splitSubscript(ref.FieldPath); ok {
		sub, known := subscriptedFields[field]
		if !known {
			return "", fmt.Errorf("field path %q: only metadata.labels and metadata.annotations take a ['key'] subscript", ref.FieldPath)
		}
		if errs := sub.checkKey(key); len(errs) > 0 {
			return "", fmt.Errorf("field path %q: invalid key: %s", ref.FieldPath, strings.Join(errs, "; "))
		}
		return sub.value(pod)[key], nil
	}
	get, ok := podFields[ref.FieldPath]
	if !ok {
		return "", fmt.Errorf("field path %q is not supported (supported: %s, metadata.labels['key'], metadata.annotations['key'])", ref.FieldPath, strings.Join(slices.Sorted(maps.Keys(podFields)), ", "))
	}
	return get(pod), nil
}

// splitSubscript splits `field['key']` into field and key.
func splitSubscript(p string) (field, key string, ok bool) {
	rest, found := strings.CutSuffix(p, "']")
	if !found {
		return "", "", false
	}
	field, key, found = strings.Cut(rest, "['")
	if !found || field == "" {
		return "", "", false
	}
	return field, key, true
}

// limitsFromNode are the limits that default to the node's allocatable amount when a
// container does not set them (hugepages are never overcommitted, so always set).
var limitsFromNode = map[corev1.ResourceName]bool{
	corev1.ResourceCPU:              true,
	corev1.ResourceMemory:           true,
	corev1.ResourceEphemeralStorage: true,
}

// resourceValue is a container's request or limit divided by the divisor, rounded up.
func (b *builder) resourceValue(ref *corev1.ResourceFieldSelector) (string, error) {
	if ref.ContainerName == "" {
		return "", fmt.Errorf("resourceFieldRef needs a containerName in a volume")
	}
	return ResourceValue(b.pod, nil, ref, b.nodeAllocatable)
}

// EnvFieldValue is the value of an env entry's fieldRef: a field a downward API file may name,
// but not the whole labels or annotations, which API validation keeps out of env.
func EnvFieldValue(pod *corev1.Pod, ref *corev1.ObjectFieldSelector) (string, error) {
	if _, whole := subscriptedFields[ref.FieldPath]; whole {
		return "", fmt.Errorf("field path %q is not supported in env (name one key: %s['key'])", ref.FieldPath, ref.FieldPath)
	}
	return podFieldValue(pod, ref)
}

// ResourceValue is a container's request or limit divided by the divisor, rounded up: of the
// container ref names, else of c (an env entry's own container). A cpu, memory or
// ephemeral-storage limit the container does not set is the node's allocatable amount, from
// allocatable.
func ResourceValue(pod *corev1.Pod, c *corev1.Container, ref *corev1.ResourceFieldSelector, allocatable func() (corev1.ResourceList, error)) (string, error) {
	if ref.ContainerName != "" || c == nil {
		c = findContainer(pod, ref.ContainerName)
		if c == nil {
			return "", fmt.Errorf("resourceFieldRef: the pod has no container %q", ref.ContainerName)
		}
	}
	kind, name, _ := strings.Cut(ref.Resource, ".")
	res := corev1.ResourceName(name)
	if !limitsFromNode[res] && !strings.HasPrefix(name, corev1.ResourceHugePagesPrefix) {
		return "", fmt.Errorf("resource %q is not supported (cpu, memory, ephemeral-storage or hugepages-<size> requests and limits are)", ref.Resource)
	}
	var list corev1.ResourceList
	switch kind {
	case "requests":
		list = c.Resources.Requests
	case "limits":
		list = c.Resources.Limits
	default:
		//lint:ignore ST1005 the message ends with the prefix "limits.", not with punctuation.
		return "", fmt.Errorf("resource %q is not supported: must start with requests. or limits.", ref.Resource)
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if divisor.Sign() < 0 {
		return "", fmt.Errorf("resource %q: divisor %s is negative", ref.Resource, divisor.String())
	}
	q, set := list[res]
	if kind == "limits" && limitsFromNode[res] && (!set || q.IsZero()) {
		alloc, err := allocatable()
		if err != nil {
			return "", fmt.Errorf("container %q sets no %s: %w", c.Name, ref.Resource, err)
		}
		q = alloc[res]
	}
	return ceilRatio(&q, &divisor), nil
}

func (b *builder) nodeAllocatable() (corev1.ResourceList, error) {
	na, ok := b.src.(NodeAllocatableSource)
	if !ok {
		return nil, fmt.Errorf("the node's allocatable resources are not known to the volume builder")
	}
	alloc, err := na.NodeAllocatable(b.ctx)
	if err != nil {
		return nil, &notReadyError{fmt.Errorf("reading the node's allocatable resources: %w", err)}
	}
	return alloc, nil
}

// findContainer finds a regular or init container by name; ephemeral containers have no
// resources.
func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// ceilRatio is ⌈q/d⌉ for a positive divisor d, "0" for a q that is not positive, saturated at
// the largest int64. It works on the exact decimal values and bounds the work by comparing
// magnitudes first, so a quantity like 1e1000000 costs nothing.
func ceilRatio(q, d *resource.Quantity) string {
	if q.Sign() <= 0 {
		return "0"
	}
	qd, dd := q.AsDec(), d.AsDec()
	qu, du := new(big.Int).Set(qd.UnscaledBig()), new(big.Int).Set(dd.UnscaledBig())
	qs, ds := int64(qd.Scale()), int64(dd.Scale())
	// A value u·10^-s with n digits in u lies in [10^(n-1-s), 10^(n-s)).
	qMag := int64(len(qu.String())) - qs
	dMag := int64(len(du.String())) - ds
	switch {
	case qMag-dMag > 20: // the ratio is at least 10^20, past any int64
		return strconv.FormatInt(math.MaxInt64, 10)
	case dMag-qMag >= 1: // the ratio is below 1 and positive
		return "1"
	}
	ten := big.NewInt(10)
	if diff := ds - qs; diff > 0 {
		qu.Mul(qu, new(big.Int).Exp(ten, big.NewInt(diff), nil))
	} else if diff < 0 {
		du.Mul(du, new(big.Int).Exp(ten, big.NewInt(-diff), nil))
	}
	r := new(big.Int).Add(qu, du)
	r.Sub(r, big.NewInt(1))
	r.Quo(r, du)
	if !r.IsInt64() {
		return strconv.FormatInt(math.MaxInt64, 10)
	}
	return r.String()
}
