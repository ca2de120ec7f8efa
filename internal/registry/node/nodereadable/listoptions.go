package nodereadable

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	nodev1alpha1 "github.com/idplane/idplane/api/node/v1alpha1"
)

// unpaged refuses the list options a node's list cannot honour, naming the field: the list is
// always the node's whole set at the stream's latest position. limit is served by ignoring it,
// as the API allows (the answer then has every item and no continue, as the watch cache answers
// a list at resourceVersion 0); but a continue token can only come from elsewhere, since these
// lists never give one, and an exact older position is not kept.
func unpaged(opts *metainternalversion.ListOptions) error {
	var errs field.ErrorList
	if opts.Continue != "" {
		errs = append(errs, field.Invalid(field.NewPath("continue"), opts.Continue, "nodereadables are never paginated: a list holds every item and gives no continue token"))
	}
	if opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact {
		errs = append(errs, field.NotSupported(field.NewPath("resourceVersionMatch"), opts.ResourceVersionMatch,
			[]string{string(metav1.ResourceVersionMatchNotOlderThan), ""}))
	}
	if len(errs) == 0 {
		return nil
	}
	err := apierrors.NewBadRequest(fmt.Sprintf("nodereadables are listed whole, at the latest position: %s", errs.ToAggregate()))
	err.ErrStatus.Details = &metav1.StatusDetails{Group: nodev1alpha1.GroupName, Kind: nodev1alpha1.ResourceName}
	for _, e := range errs {
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: metav1.CauseType(e.Type), Message: e.ErrorBody(), Field: e.Field})
	}
	return err
}
