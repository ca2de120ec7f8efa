package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Resource names. A name without a domain, or in a kubernetes.io domain, is
// native; any other is an extended resource, which is counted in whole units
// and never overcommitted. Which native names exist, and which count whole
// units, are the tables below.

var standardContainerResources = sets.New(
	corev1.ResourceCPU,
	corev1.ResourceMemory,
	corev1.ResourceEphemeralStorage,
)

// integerResources are counted in whole objects.
var integerResources = sets.New(
	corev1.ResourcePods,
	corev1.ResourceServices,
	corev1.ResourceServicesNodePorts,
	corev1.ResourceServicesLoadBalancers,
	corev1.ResourceReplicationControllers,
	corev1.ResourceSecrets,
	corev1.ResourceConfigMaps,
	corev1.ResourcePersistentVolumeClaims,
	corev1.ResourceQuotas,
)

// standardResources are the native names known to the system: amounts of
// compute and storage with their request and limit forms, and object counts.
var standardResources = sets.New(
	corev1.ResourceCPU, corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU,
	corev1.ResourceMemory, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory,
	corev1.ResourceEphemeralStorage, corev1.ResourceRequestsEphemeralStorage, corev1.ResourceLimitsEphemeralStorage,
	corev1.ResourceStorage, corev1.ResourceRequestsStorage,
).Union(integerResources)

func isHugePageResourceName(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

func isNativeResource(name corev1.ResourceName) bool {
	return unprefixed(name) || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

// isExtendedResourceName also requires that quota can name the resource,
// as "requests.<name>"; a name already carrying that prefix would be ambiguous.
func isExtendedResourceName(name corev1.ResourceName) bool {
	quotaName := corev1.DefaultResourceRequestsPrefix + string(name)
	return !isNativeResource(name) &&
		!strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) &&
		len(utilvalidation.IsQualifiedName(quotaName)) == 0
}

func isOvercommitAllowed(name corev1.ResourceName) bool {
	return isNativeResource(name) && !isHugePageResourceName(name)
}

func isIntegerResourceName(name corev1.ResourceName) bool {
	return integerResources.Has(name) || isExtendedResourceName(name)
}

func isStandardResourceName(name corev1.ResourceName) bool {
	return standardResources.Has(name) || isHugePageResourceName(name) ||
		strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix+corev1.ResourceHugePagesPrefix)
}

// validateResourceName accepts qualified names that are either standard or
// carry a domain.
func validateResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	if allErrs := validateQualifiedName(string(name), fldPath); len(allErrs) != 0 {
		return allErrs
	}
	if unprefixed(name) && !isStandardResourceName(name) {
		return field.ErrorList{field.Invalid(fldPath, name, "must be a standard resource type or fully qualified")}
	}
	return nil
}

// validateContainerResourceName narrows resource names to what a container
// can request: compute resources, hugepages and extended resources.
func validateContainerResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	allErrs := validateResourceName(name, fldPath)
	if why := notRequestable(name); why != "" {
		allErrs = append(allErrs, field.Invalid(fldPath, name, why))
	}
	return allErrs
}

// notRequestable says why a container cannot request name, or "" when it can.
func notRequestable(name corev1.ResourceName) string {
	switch {
	case unprefixed(name) && !standardContainerResources.Has(name) && !isHugePageResourceName(name):
		return "must be a standard resource for containers"
	case !isNativeResource(name) && !isExtendedResourceName(name):
		return "doesn't follow extended resource name standard"
	}
	return ""
}

// validateResourceQuantityValue checks a quantity for a named resource:
// never negative, and whole units for resources that cannot be split.
func validateResourceQuantityValue(name corev1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	allErrs := validateNonnegativeQuantity(q, fldPath)
	if isIntegerResourceName(name) && q.MilliValue()%1000 != 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, q.String(), isNotIntegerErrorMsg))
	}
	return allErrs
}

// validateHugePageValue requires hugepage amounts to be whole pages of the
// size named by the resource (hugepages-2Mi: multiples of 2Mi).
func validateHugePageValue(name corev1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	pageSize, err := resource.ParseQuantity(strings.TrimPrefix(string(name), corev1.ResourceHugePagesPrefix))
	if err == nil && pageSize.Value() > 0 && q.Value()%pageSize.Value() == 0 {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, q.String(), fmt.Sprintf("%s is not positive integer multiple of %s", q.String(), name))}
}
