package gmsa

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Expander is the mutating half: it fills the contents of every credential spec a pod names but
// does not hold, so that the node, which cannot read GMSACredentialSpecs, finds them in the pod.
type Expander struct {
	specs CredSpecs
	opts  Options
}

// NewExpander returns an expander fetching specs from specs; of opts it uses AlphaAnnotations.
func NewExpander(specs CredSpecs, opts Options) *Expander {
	return &Expander{specs: specs, opts: opts}
}

// Expand fills, in req.Pod, the contents of every place that names a spec and has none, with the
// spec's credspec as compact JSON: on create, in the pod, its containers of every kind and, with
// the alpha annotations, its annotations; on a write to pods/ephemeralcontainers, in the debug
// containers it adds. Contents already there are left for the authorizer to compare. A name
// that no GMSACredentialSpec has is a 422 naming it, at every place that names it; so is a pod
// naming more distinct specs than it has containers, plus one. Each spec is looked up once.
func (e *Expander) Expand(ctx context.Context, req Request) error {
	s, err := req.scope()
	if err != nil || s == none {
		return err
	}
	ps := req.fresh(s, e.opts.AlphaAnnotations)
	if err := req.checkNameCount(ps); err != nil {
		return err
	}
	l := lookups{specs: e.specs}
	var errs field.ErrorList
	for _, p := range ps {
		if p.name == "" || p.contents != "" {
			continue
		}
		spec, invalid, err := l.get(ctx, p)
		if err != nil {
			return err
		}
		if invalid != nil {
			errs = append(errs, invalid)
			continue
		}
		p.fill(string(spec))
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(podKind, req.Pod.Name, errs)
	}
	return nil
}
