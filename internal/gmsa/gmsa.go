// Package gmsa is the logic of Windows GMSA credential specs in pods, shared by the GMSA
// admission plugin and the standalone gmsa-webhook: the expander fills the contents of the
// credential specs a pod names, the authorizer checks that the pod's service account (and,
// optionally, the requesting user) may use them, that contents match the named specs, and that an
// update changes none of them. How specs are fetched and how authorization is asked are the
// callers' (a lister and the server's authorizer in process, a client and SubjectAccessReviews in
// the webhook), behind CredSpecs and UseChecker.
//
// Errors are Kubernetes API errors so that both callers answer with the design's codes: 422
// (Invalid) for a name that does not exist, contents without a name and contents that differ from
// the named spec; 403 (Forbidden) for a denied use; 400 (BadRequest) for a change on update.
package gmsa

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/idplane/idplane/internal/podwalk"
)

// Group, Resource and Verb are what a pod's service account must be allowed on a named credential
// spec: verb "use" on gmsacredentialspecs/<name> in windows.k8s.io.
const (
	Group    = "windows.k8s.io"
	Resource = "gmsacredentialspecs"
	Verb     = "use"
)

// CredSpecs looks up GMSACredentialSpecs.
type CredSpecs interface {
	// CredSpec returns the credspec of the named GMSACredentialSpec as JSON. An object that does
	// not exist is an error for which apierrors.IsNotFound is true, as listers and clients answer.
	CredSpec(ctx context.Context, name string) ([]byte, error)
}

// UseChecker asks whether a user may use a credential spec.
type UseChecker interface {
	// MayUse reports whether u is allowed Verb on Resource named name in Group, asked in the
	// pod's namespace (so that a RoleBinding there counts, as in the design's user story), and the
	// authorizer's reason; err is a failure to decide, not a denial.
	MayUse(ctx context.Context, namespace string, u user.Info, name string) (allowed bool, reason string, err error)
}

// Options are the cluster admin's choices, the same for the expander and the authorizer.
type Options struct {
	// AuthorizeRequester makes the authorizer ask use of the requesting user too: otherwise a
	// user who may create pods in a namespace may borrow any spec its service accounts may use
	// (the design's threat 2).
	AuthorizeRequester bool
	// AlphaAnnotations handles the design's alpha annotations like the fields, for clusters
	// migrating from alpha; off, they are ignored, as the fields superseded them.
	AlphaAnnotations bool
}

// Request is one admission of a pod.
type Request struct {
	// Pod is the pod written; the expander fills its contents in place.
	Pod *corev1.Pod
	// OldPod is the stored pod, on update.
	OldPod *corev1.Pod
	// Namespace is the request's namespace, the service account's: a pod being created may leave
	// its own empty.
	Namespace string
	// Requester is the user asking, checked only with Options.AuthorizeRequester.
	Requester user.Info
	// Operation and Subresource say what is written: a pod created, a pod updated, its status
	// written (Update, "status"), or debug containers added through pods/ephemeralcontainers
	// (Update, "ephemeralcontainers").
	Operation   admission.Operation
	Subresource string
}

// Pod subresources that write a pod. pods/ephemeralcontainers adds debug containers to a running
// pod; the public webhook never sees it, so a pod could otherwise smuggle an unchecked spec
// through it. pods/status writes the pod's labels and annotations along with its status, so the
// alpha annotations could otherwise be added there. Both also write the rest of the metadata.
const (
	ephemeralContainers = "ephemeralcontainers"
	status              = "status"
)

var (
	podKind          = schema.GroupKind{Kind: "Pod"}
	credSpecResource = schema.GroupResource{Group: Group, Resource: Resource}
)

// scope says which places of a request's pod are the GMSA logic's business.
type scope uint8

const (
	// none: the request writes nothing the GMSA logic governs (a delete, an eviction).
	none scope = iota
	// everything: a pod being created; every place is expanded and checked.
	everything
	// kept: an update of the pod, its status or its debug containers; every place must stay as it
	// was, except debug containers that a write to pods/ephemeralcontainers adds, which are
	// expanded and checked like a new pod's.
	kept
)

func (r Request) scope() (scope, error) {
	if r.Pod == nil {
		return none, nil
	}
	switch {
	case r.Operation == admission.Create && r.Subresource == "":
		return everything, nil
	case r.Operation == admission.Update && (r.Subresource == "" || r.Subresource == ephemeralContainers || r.Subresource == status):
		if r.OldPod == nil {
			return none, apierrors.NewInternalError(fmt.Errorf("GMSA: update of pod %q without the stored pod", r.Pod.Name))
		}
		return kept, nil
	}
	return none, nil
}

// fresh are the places of the request's pod to expand and check: every place of a pod being
// created; on an update, those of the debug containers added through pods/ephemeralcontainers.
// The others of an update are unchanged or refused (see Authorizer.Authorize).
func (r Request) fresh(s scope, alpha bool) []place {
	ps := places(r.Pod, alpha)
	if s == everything {
		return ps
	}
	return slices.DeleteFunc(ps, func(p place) bool { return !r.added(p) })
}

// checkNameCount refuses places that name more distinct specs than the pod can use: one for the
// pod and one per container. Only the alpha annotations can name more, since a container's
// annotations count whether or not the pod has that container; and each name costs a lookup and
// a use check or two, so without a bound one pod naming thousands of specs would cost thousands
// of API calls. It runs before anything is looked up.
func (r Request) checkNameCount(ps []place) error {
	spec := &r.Pod.Spec
	limit := 1 + len(spec.InitContainers) + len(spec.Containers) + len(spec.EphemeralContainers)
	names := make(map[string]bool, min(len(ps), limit+1))
	var over place // the place naming the first spec past the limit
	for _, p := range ps {
		if p.name == "" || names[p.name] {
			continue
		}
		names[p.name] = true
		if len(names) == limit+1 {
			over = p
		}
	}
	if len(names) <= limit {
		return nil
	}
	return apierrors.NewInvalid(podKind, r.Pod.Name, field.ErrorList{field.Forbidden(over.namePath, fmt.Sprintf(
		"the pod names %d distinct GMSACredentialSpecs, more than the %d it can use: one for the pod and one per container", len(names), limit))})
}

// added reports whether p is in a debug container this request adds.
func (r Request) added(p place) bool {
	if r.Subresource != ephemeralContainers || p.key.kind != containerPlace+placeKind(podwalk.EphemeralContainer) {
		return false
	}
	return !slices.ContainsFunc(r.OldPod.Spec.EphemeralContainers, func(c corev1.EphemeralContainer) bool { return c.Name == p.key.name })
}

// place is where a pod sets one credential spec: the windowsOptions of the pod's security context
// or of a container's, or, with the alpha annotations, the pod's or a container's pair of them.
type place struct {
	key placeKey
	// name and contents are "" when unset: the design treats empty contents as absent ones.
	name, contents         string
	namePath, contentsPath *field.Path
	// Where expanded contents go: opts for the fields; for annotations, the contents key of
	// annotations.
	opts        *corev1.WindowsSecurityContextOptions
	annotations map[string]string
	contentsKey string
}

// placeKey identifies a place across an update: by container kind and name rather than index,
// since debug containers are found by name.
type placeKey struct {
	kind placeKind
	// name is the container's name, or the annotations' prefix.
	name string
}

type placeKind uint8

// Place kinds: the pod's security context, the alpha annotations, then one per container kind
// (containerPlace + podwalk.ContainerKind).
const (
	podPlace placeKind = iota
	annotationPlace
	containerPlace
)

// fill writes expanded contents into the place.
func (p place) fill(contents string) {
	if p.opts != nil {
		p.opts.GMSACredentialSpec = &contents
		return
	}
	p.annotations[p.contentsKey] = contents
}

// places are the places of pod that name a spec or hold contents, in a fixed order: the pod's
// security context, its containers in podwalk's order, then the annotations by key.
func places(pod *corev1.Pod, alpha bool) []place {
	var ps []place
	if sc := pod.Spec.SecurityContext; sc != nil {
		ps = appendField(ps, placeKey{kind: podPlace}, sc.WindowsOptions, func() *field.Path { return field.NewPath("spec", "securityContext") })
	}
	for c := range podwalk.Containers(&pod.Spec) {
		if sc := c.SecurityContext; sc != nil {
			key := placeKey{containerPlace + placeKind(c.Kind), c.Name}
			ps = appendField(ps, key, sc.WindowsOptions, func() *field.Path { return c.Path(field.NewPath("spec")).Child("securityContext") })
		}
	}
	if alpha {
		ps = appendAnnotations(ps, pod.Annotations)
	}
	return ps
}

// appendField appends the place of a windowsOptions when it sets either field; path, the
// security context's, is built only then, since most pods set none.
func appendField(ps []place, key placeKey, o *corev1.WindowsSecurityContextOptions, path func() *field.Path) []place {
	if o == nil {
		return ps
	}
	name, contents := deref(o.GMSACredentialSpecName), deref(o.GMSACredentialSpec)
	if name == "" && contents == "" {
		return ps
	}
	opts := path().Child("windowsOptions")
	return append(ps, place{
		key: key, name: name, contents: contents,
		namePath: opts.Child("gmsaCredentialSpecName"), contentsPath: opts.Child("gmsaCredentialSpec"),
		opts: o,
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// The design's alpha annotations: <prefix>/<name> and <prefix>/<contents>, with the prefix
// pod.alpha.windows.kubernetes.io for the pod and <container>.container.alpha.windows.kubernetes.io
// for a container.
const (
	alphaPodPrefix       = "pod.alpha.windows.kubernetes.io"
	alphaContainerSuffix = ".container.alpha.windows.kubernetes.io"
	alphaName            = "gmsa-credential-spec-name"
	alphaContents        = "gmsa-credential-spec"
)

// appendAnnotations appends one place per annotation prefix that sets a name or contents. A
// container's annotations count whether or not the pod has a container of that name: a debug
// container added later under that name would run with them.
func appendAnnotations(ps []place, annotations map[string]string) []place {
	first := len(ps)
	for key, value := range annotations {
		prefix, which, ok := strings.Cut(key, "/")
		if !ok || value == "" || (which != alphaName && which != alphaContents) {
			continue
		}
		if container, ok := strings.CutSuffix(prefix, alphaContainerSuffix); prefix != alphaPodPrefix && (!ok || container == "") {
			continue
		}
		i := slices.IndexFunc(ps[first:], func(p place) bool { return p.key.name == prefix })
		if i < 0 {
			i = len(ps) - first
			path := field.NewPath("metadata", "annotations")
			ps = append(ps, place{
				key:          placeKey{annotationPlace, prefix},
				namePath:     path.Key(prefix + "/" + alphaName),
				contentsPath: path.Key(prefix + "/" + alphaContents),
				annotations:  annotations,
				contentsKey:  prefix + "/" + alphaContents,
			})
		}
		p := &ps[first+i]
		if which == alphaName {
			p.name = value
		} else {
			p.contents = value
		}
	}
	// Map order is random; errors and messages list places in a fixed one.
	slices.SortFunc(ps[first:], func(a, b place) int { return strings.Compare(a.key.name, b.key.name) })
	return ps
}
