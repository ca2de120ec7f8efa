package validation

import (
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedPropagationPolicies = []metav1.DeletionPropagation{
	metav1.DeletePropagationForeground,
	metav1.DeletePropagationBackground,
	metav1.DeletePropagationOrphan,
}

// ValidateEviction validates an eviction request. The eviction deletes the
// pod with the embedded options, so those must be valid delete options.
func ValidateEviction(e *policyv1.Eviction) field.ErrorList {
	opts := e.DeleteOptions
	if opts == nil {
		return nil
	}
	fldPath := field.NewPath("deleteOptions")
	var allErrs field.ErrorList
	if opts.GracePeriodSeconds != nil {
		allErrs = append(allErrs, validateNonnegative(*opts.GracePeriodSeconds, fldPath.Child("gracePeriodSeconds"))...)
	}
	//lint:ignore SA1019 orphanDependents is deprecated but still accepted, and conflicts with propagationPolicy.
	if opts.OrphanDependents != nil && opts.PropagationPolicy != nil {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("propagationPolicy"), *opts.PropagationPolicy, "orphanDependents and deletionPropagation cannot be both set"))
	}
	if opts.PropagationPolicy != nil {
		allErrs = append(allErrs, validateEnum(*opts.PropagationPolicy, supportedPropagationPolicies, fldPath.Child("propagationPolicy"))...)
	}
	return append(allErrs, metav1validation.ValidateDryRun(fldPath.Child("dryRun"), opts.DryRun)...)
}
