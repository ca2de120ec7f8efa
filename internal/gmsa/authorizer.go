package gmsa

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
)

// Authorizer is the validating half: only service accounts (and, optionally, users) allowed to
// use a spec may run pods with it, and a pod's contents are exactly its named spec's, so that
// nobody hands the node a credential spec of their own making.
type Authorizer struct {
	specs CredSpecs
	use   UseChecker
	opts  Options
}

// NewAuthorizer returns an authorizer fetching specs from specs and asking use of use.
func NewAuthorizer(specs CredSpecs, use UseChecker, opts Options) *Authorizer {
	return &Authorizer{specs: specs, use: use, opts: opts}
}

// Authorize checks, in the design's order, the places of a pod being created, or of the debug
// containers a write to pods/ephemeralcontainers adds:
//   - every spec named must be allowed to the pod's service account, and with
//     AuthorizeRequester to the requesting user: else 403 naming the spec and who was refused;
//   - contents without a name, and contents that are not the named spec's credspec as a JSON
//     value, are 422s, the latter showing both;
//   - more distinct specs than the pod has containers, plus one, is a 422, before anything is
//     asked.
//
// On any update — of the pod, its status or its debug containers — a change to a name or
// contents anywhere else is a 400 naming what changed: the node has started the pod's containers
// with them, and the design makes them immutable. Pod validation refuses changes to the fields
// first (422); this also covers the alpha annotations, which it does not see.
func (a *Authorizer) Authorize(ctx context.Context, req Request) error {
	s, err := req.scope()
	if err != nil || s == none {
		return err
	}
	if s == kept {
		if err := a.unchanged(req); err != nil {
			return err
		}
	}
	ps := req.fresh(s, a.opts.AlphaAnnotations)
	if err := req.checkNameCount(ps); err != nil {
		return err
	}
	if err := a.authorizeUse(ctx, req, ps); err != nil {
		return err
	}
	return a.compare(ctx, req, ps)
}

// authorizeUse asks, once per spec, whether the pod's service account and, with
// AuthorizeRequester, the requester may use it.
func (a *Authorizer) authorizeUse(ctx context.Context, req Request, ps []place) error {
	var sa user.Info
	asked := map[string]bool{}
	for _, p := range ps {
		if p.name == "" || asked[p.name] {
			continue
		}
		asked[p.name] = true
		if sa == nil {
			sa = serviceAccountUser(req)
		}
		if err := a.mayUse(ctx, req.Namespace, sa, "service account", p); err != nil {
			return err
		}
		if a.opts.AuthorizeRequester {
			if req.Requester == nil {
				return apierrors.NewInternalError(fmt.Errorf("GMSA: no requesting user to authorize for GMSACredentialSpec %q", p.name))
			}
			if err := a.mayUse(ctx, req.Namespace, req.Requester, "user", p); err != nil {
				return err
			}
		}
	}
	return nil
}

// serviceAccountUser is the pod's service account as it is when it authenticates, so that a
// binding to its groups counts as it would for its own requests. A pod that names none runs as
// "default", which the ServiceAccount admission plugin fills in before anything asks.
func serviceAccountUser(req Request) user.Info {
	name := req.Pod.Spec.ServiceAccountName
	if name == "" {
		name = "default"
	}
	return &user.DefaultInfo{
		Name:   serviceaccount.MakeUsername(req.Namespace, name),
		Groups: append(serviceaccount.MakeGroupNames(req.Namespace), user.AllAuthenticated),
	}
}

// mayUse refuses with a 403 naming the spec, who (described by what) and where the pod names it.
func (a *Authorizer) mayUse(ctx context.Context, namespace string, u user.Info, what string, p place) error {
	allowed, reason, err := a.use.MayUse(ctx, namespace, u, p.name)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("asking whether %s %q may use GMSACredentialSpec %q: %w", what, u.GetName(), p.name, err))
	}
	if allowed {
		return nil
	}
	msg := fmt.Sprintf("%s %q may not %s it (named at %s)", what, u.GetName(), Verb, p.namePath)
	if reason != "" {
		msg += ": " + reason
	}
	return apierrors.NewForbidden(credSpecResource, p.name, errors.New(msg))
}

// compare refuses contents without a name and contents that differ from the named spec's.
func (a *Authorizer) compare(ctx context.Context, req Request, ps []place) error {
	l := lookups{specs: a.specs}
	var errs field.ErrorList
	for _, p := range ps {
		if p.contents == "" {
			continue // a name alone: the expander fills it, or the node gets no contents
		}
		if p.name == "" {
			errs = append(errs, field.Required(p.namePath, "the credential spec's contents must come with the name of the GMSACredentialSpec they are from"))
			continue
		}
		contents := []byte(p.contents)
		if err := checkCredSpec(contents); err != nil {
			errs = append(errs, field.Invalid(p.contentsPath, field.OmitValueType{}, "the credential spec "+err.Error()))
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
		if !sameCredSpec(contents, spec) {
			errs = append(errs, field.Invalid(p.contentsPath, p.contents, fmt.Sprintf("differs from the credspec of GMSACredentialSpec %q, %s", p.name, spec)))
		}
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(podKind, req.Pod.Name, errs)
	}
	return nil
}

// unchanged refuses an update that changes a name or contents anywhere but in the debug
// containers it adds.
func (a *Authorizer) unchanged(req Request) error {
	old := places(req.OldPod, a.opts.AlphaAnnotations)
	cur := slices.DeleteFunc(places(req.Pod, a.opts.AlphaAnnotations), req.added)
	var changed []string
	for _, o := range old {
		i := slices.IndexFunc(cur, func(c place) bool { return c.key == o.key })
		var c place
		if i >= 0 {
			c = cur[i]
			cur = slices.Delete(cur, i, i+1)
		}
		changed = appendChanges(changed, o, c, o)
	}
	for _, c := range cur { // places the old pod did not have
		changed = appendChanges(changed, place{}, c, c)
	}
	if len(changed) > 0 {
		return apierrors.NewBadRequest("GMSA credential specs of a pod cannot change: " + strings.Join(changed, "; "))
	}
	return nil
}

// appendChanges describes how a place went from old to cur; at locates it. Names are short and
// shown; contents, up to 64 KiB each, are not.
func appendChanges(changed []string, old, cur, at place) []string {
	if old.name != cur.name {
		changed = append(changed, fmt.Sprintf("%s changed from %q to %q", at.namePath, old.name, cur.name))
	}
	if old.contents != cur.contents {
		changed = append(changed, fmt.Sprintf("%s changed", at.contentsPath))
	}
	return changed
}

// AuthorizeBinding refuses, with the alpha annotations on, a pods/binding that carries any of
// them: a binding's annotations are copied onto the pod it binds, and a pod's credential specs
// cannot change after it is created (400, as for an update). A scheduler has no reason to set
// them; anyone else allowed to bind pods could otherwise give a pending pod a spec unchecked.
func (a *Authorizer) AuthorizeBinding(b *corev1.Binding) error {
	if !a.opts.AlphaAnnotations {
		return nil
	}
	var changed []string
	for _, p := range appendAnnotations(nil, b.Annotations) {
		if p.name != "" {
			changed = append(changed, fmt.Sprintf("%s set to %q by a binding", p.namePath, p.name))
		}
		if p.contents != "" {
			changed = append(changed, fmt.Sprintf("%s set by a binding", p.contentsPath))
		}
	}
	if len(changed) > 0 {
		return apierrors.NewBadRequest("GMSA credential specs of a pod cannot change: " + strings.Join(changed, "; "))
	}
	return nil
}
