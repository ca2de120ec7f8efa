package webhook

import (
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/idplane/idplane/internal/podwalk"
)

// patchOp is one JSON Patch (RFC 6902) operation. The webhook only ever adds: the expander fills
// contents next to a name already in the pod (so the object holding them exists), and "add" of a
// member that is there, null or empty, replaces it.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value string `json:"value"`
}

func add(path, value string) patchOp { return patchOp{Op: "add", Path: path, Value: value} }

// windowsOptionsAt is a windowsOptions of a pod with the JSON pointer of its object.
type windowsOptionsAt struct {
	pointer string
	opts    *corev1.WindowsSecurityContextOptions
}

// windowsOptions lists the pod's windowsOptions, its security context's then its containers' in
// podwalk's order: the only objects whose credential-spec contents the expander writes.
func windowsOptions(pod *corev1.Pod) []windowsOptionsAt {
	var out []windowsOptionsAt
	if sc := pod.Spec.SecurityContext; sc != nil && sc.WindowsOptions != nil {
		out = append(out, windowsOptionsAt{"/spec/securityContext/windowsOptions", sc.WindowsOptions})
	}
	for c := range podwalk.Containers(&pod.Spec) {
		if sc := c.SecurityContext; sc != nil && sc.WindowsOptions != nil {
			p := "/spec/" + c.Kind.FieldName() + "/" + strconv.Itoa(c.Index) + "/securityContext/windowsOptions"
			out = append(out, windowsOptionsAt{p, sc.WindowsOptions})
		}
	}
	return out
}

// before is what the expander may change in a pod, taken before it runs: the credential-spec
// contents of every windowsOptions by pointer, and the annotations (which hold the alpha
// contents).
type before struct {
	contents    map[string]string
	annotations map[string]string
}

func snapshot(pod *corev1.Pod) before {
	b := before{annotations: maps.Clone(pod.Annotations)}
	for _, w := range windowsOptions(pod) {
		if b.contents == nil {
			b.contents = map[string]string{}
		}
		b.contents[w.pointer] = deref(w.opts.GMSACredentialSpec)
	}
	return b
}

// changes are the operations turning the pod as it was into pod: the contents the expander wrote,
// in the pod's order, then the annotations it wrote, by key.
func (b before) changes(pod *corev1.Pod) []patchOp {
	var ops []patchOp
	for _, w := range windowsOptions(pod) {
		if c := deref(w.opts.GMSACredentialSpec); c != b.contents[w.pointer] {
			ops = append(ops, add(w.pointer+"/gmsaCredentialSpec", c))
		}
	}
	var keys []string
	for k, v := range pod.Annotations {
		if old, ok := b.annotations[k]; !ok || old != v {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		ops = append(ops, add("/metadata/annotations/"+escapePointer(k), pod.Annotations[k]))
	}
	return ops
}

// escapePointer escapes a JSON pointer's reference token (RFC 6901): annotation keys hold "/".
func escapePointer(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// namesGMSA reports whether the pod names a credential spec or holds contents anywhere: in a
// windowsOptions or, with the alpha annotations, in an annotation of the alpha form. The test of
// annotation keys is looser than the GMSA logic's parse; it only decides a hostname.
func namesGMSA(pod *corev1.Pod, alpha bool) bool {
	for _, w := range windowsOptions(pod) {
		if deref(w.opts.GMSACredentialSpecName) != "" || deref(w.opts.GMSACredentialSpec) != "" {
			return true
		}
	}
	if alpha {
		for k, v := range pod.Annotations {
			if v != "" && (strings.HasSuffix(k, ".alpha.windows.kubernetes.io/gmsa-credential-spec-name") ||
				strings.HasSuffix(k, ".alpha.windows.kubernetes.io/gmsa-credential-spec")) {
				return true
			}
		}
	}
	return false
}

// hostnameLength is the longest hostname a GMSA container keeps whole: Windows uses the hostname
// as the container's NetBIOS computer name, at most 15 characters, when it authenticates as the
// gMSA. Longer pod names get truncated into colliding computer names, which breaks Kerberos for
// all but one of the pods sharing them.
const hostnameLength = 15

// randomHostname is a DNS label of hostnameLength lower-case letters and digits, starting with a
// letter (a computer name may not be all digits). Collisions are what it prevents, not guessing,
// so a non-cryptographic source does: 26·36¹⁴ names.
func randomHostname() string {
	const letters, alnum = "abcdefghijklmnopqrstuvwxyz", "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, hostnameLength)
	b[0] = letters[rand.IntN(len(letters))]
	for i := 1; i < len(b); i++ {
		b[i] = alnum[rand.IntN(len(alnum))]
	}
	return string(b)
}
