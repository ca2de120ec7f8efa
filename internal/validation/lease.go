package validation

import (
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedLeaseStrategies = []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion}

// ValidateLease validates a lease on create. Leases are a coordination
// primitive of the control plane, not a core type, so they use the generic
// metadata rules.
func ValidateLease(l *coordinationv1.Lease) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&l.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(allErrs, validateLeaseSpec(&l.Spec, field.NewPath("spec"))...)
}

// ValidateLeaseUpdate validates an update of a lease.
func ValidateLeaseUpdate(newL, oldL *coordinationv1.Lease) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&newL.ObjectMeta, &oldL.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, validateLeaseSpec(&newL.Spec, field.NewPath("spec"))...)
}

func validateLeaseSpec(spec *coordinationv1.LeaseSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.LeaseDurationSeconds != nil && *spec.LeaseDurationSeconds <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("leaseDurationSeconds"), *spec.LeaseDurationSeconds, "must be greater than 0"))
	}
	if spec.LeaseTransitions != nil && *spec.LeaseTransitions < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("leaseTransitions"), *spec.LeaseTransitions, "must be greater than or equal to 0"))
	}
	if spec.Strategy != nil {
		allErrs = append(allErrs, validateLeaseStrategy(*spec.Strategy, fldPath.Child("strategy"))...)
	}
	// A preferred holder only means something to a coordinated election.
	if spec.PreferredHolder != nil && *spec.PreferredHolder != "" && (spec.Strategy == nil || *spec.Strategy == "") {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return allErrs
}

// validateLeaseStrategy accepts the strategies Kubernetes defines and any
// domain-qualified custom one.
func validateLeaseStrategy(strategy coordinationv1.CoordinatedLeaseStrategy, fldPath *field.Path) field.ErrorList {
	if !strings.Contains(string(strategy), "/") {
		for _, s := range supportedLeaseStrategies {
			if strategy == s {
				return nil
			}
		}
		return field.ErrorList{field.NotSupported(fldPath, strategy, supportedLeaseStrategies)}
	}
	return validateQualifiedName(string(strategy), fldPath)
}
