package validation

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// supportedLeaseStrategies are the unprefixed strategies Kubernetes defines;
// anyone else's must carry a domain.
var supportedLeaseStrategies = []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion}

// leaseSpecRules are the checks of a lease spec, each about one field.
var leaseSpecRules = []func(*coordinationv1.LeaseSpec, *field.Path) field.ErrorList{
	leaseDurationPositive,
	leaseTransitionsCounted,
	leaseStrategyKnown,
	preferredHolderNeedsStrategy,
}

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
	for _, rule := range leaseSpecRules {
		allErrs = append(allErrs, rule(spec, fldPath)...)
	}
	return allErrs
}

func leaseDurationPositive(spec *coordinationv1.LeaseSpec, fldPath *field.Path) field.ErrorList {
	if d := spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		return field.ErrorList{field.Invalid(fldPath.Child("leaseDurationSeconds"), *d, "must be greater than 0")}
	}
	return nil
}

func leaseTransitionsCounted(spec *coordinationv1.LeaseSpec, fldPath *field.Path) field.ErrorList {
	if n := spec.LeaseTransitions; n != nil && *n < 0 {
		return field.ErrorList{field.Invalid(fldPath.Child("leaseTransitions"), *n, "must be greater than or equal to 0")}
	}
	return nil
}

// leaseStrategyKnown accepts the strategies Kubernetes defines and any
// domain-qualified custom one.
func leaseStrategyKnown(spec *coordinationv1.LeaseSpec, fldPath *field.Path) field.ErrorList {
	if spec.Strategy == nil {
		return nil
	}
	strategy, strategyPath := *spec.Strategy, fldPath.Child("strategy")
	if unprefixed(strategy) {
		return oneOf(strategyPath, strategy, supportedLeaseStrategies...)
	}
	return validateQualifiedName(string(strategy), strategyPath)
}

// preferredHolderNeedsStrategy: a preferred holder only means something to a
// coordinated election.
func preferredHolderNeedsStrategy(spec *coordinationv1.LeaseSpec, fldPath *field.Path) field.ErrorList {
	if ptr.Deref(spec.PreferredHolder, "") != "" && ptr.Deref(spec.Strategy, "") == "" {
		return field.ErrorList{field.Forbidden(fldPath.Child("preferredHolder"), "may only be specified if `strategy` is defined")}
	}
	return nil
}
