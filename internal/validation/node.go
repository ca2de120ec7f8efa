package validation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

const setOnceNodeMsg = "node updates may not change %s except from \"\" to valid"

// ValidateNode validates a node on create. Status is optional at this point
// (the kubelet fills it in later) but what is there must be sane.
func ValidateNode(n *corev1.Node) field.ErrorList {
	allErrs := validateObjectMeta(&n.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	allErrs = append(allErrs, validateNodeSpec(&n.Spec)...)
	return append(allErrs, validateNodeResources(n)...)
}

// ValidateNodeUpdate validates an update of a node. podCIDR(s) and
// providerID are set once (by the IPAM controller and the cloud provider),
// taints and unschedulable stay mutable.
func ValidateNodeUpdate(newN, oldN *corev1.Node) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&newN.ObjectMeta, &oldN.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateNodeSpec(&newN.Spec)...)
	allErrs = append(allErrs, validateNodeResources(newN)...)
	allErrs = append(allErrs, validateNodeAddresses(newN.Status.Addresses)...)

	specPath := field.NewPath("spec")
	if oldN.Spec.PodCIDR != "" && newN.Spec.PodCIDR != oldN.Spec.PodCIDR {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("podCIDR"), fmt.Sprintf(setOnceNodeMsg, "podCIDR")))
	}
	if len(oldN.Spec.PodCIDRs) > 0 && !slices.Equal(oldN.Spec.PodCIDRs, newN.Spec.PodCIDRs) {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("podCIDRs"), fmt.Sprintf(setOnceNodeMsg, "podCIDR")))
	}
	if oldN.Spec.ProviderID != "" && newN.Spec.ProviderID != oldN.Spec.ProviderID {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("providerID"), fmt.Sprintf(setOnceNodeMsg, "providerID")))
	}
	if newN.Spec.DoNotUseExternalID != oldN.Spec.DoNotUseExternalID {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("externalID"), "may not be updated"))
	}
	return allErrs
}

// ValidateNodeStatusUpdate validates a write to the status subresource. The
// kubelet owns node status; upstream applies the same rules as to updates.
func ValidateNodeStatusUpdate(newN, oldN *corev1.Node) field.ErrorList {
	return ValidateNodeUpdate(newN, oldN)
}

func validateNodeSpec(spec *corev1.NodeSpec) field.ErrorList {
	specPath := field.NewPath("spec")
	allErrs := validateNodeTaints(spec.Taints, specPath.Child("taints"))

	if spec.PodCIDR != "" {
		allErrs = append(allErrs, utilvalidation.IsValidCIDR(specPath.Child("podCIDR"), spec.PodCIDR)...)
		if len(spec.PodCIDRs) > 0 && spec.PodCIDRs[0] != spec.PodCIDR {
			allErrs = append(allErrs, field.Invalid(specPath.Child("podCIDR"), spec.PodCIDR, "must match the first entry of `podCIDRs`"))
		}
	}
	cidrsPath := specPath.Child("podCIDRs")
	for i, cidr := range spec.PodCIDRs {
		allErrs = append(allErrs, utilvalidation.IsValidCIDR(cidrsPath.Index(i), cidr)...)
	}
	if len(spec.PodCIDRs) > 1 {
		dualStack, err := netutils.IsDualStackCIDRStrings(spec.PodCIDRs)
		if err != nil || !dualStack || len(spec.PodCIDRs) > 2 {
			allErrs = append(allErrs, field.Invalid(cidrsPath, spec.PodCIDRs, "may specify no more than one CIDR for each IP family"))
		}
		seen := sets.New[string]()
		for i, cidr := range spec.PodCIDRs {
			if seen.Has(cidr) {
				allErrs = append(allErrs, field.Duplicate(cidrsPath.Index(i), cidr))
			}
			seen.Insert(cidr)
		}
	}
	return allErrs
}

// taintRule checks one taint on its own, at its index in the list.
type taintRule func(t corev1.Taint, at *field.Path) field.ErrorList

// nodeTaintRules are what every taint of a node must pass by itself; errors come in this
// order. Taints on nodes must name an effect; tolerations may leave it empty (pod_spec.go).
var nodeTaintRules = []taintRule{
	func(t corev1.Taint, at *field.Path) field.ErrorList {
		return metav1validation.ValidateLabelName(t.Key, at.Child("key"))
	},
	func(t corev1.Taint, at *field.Path) field.ErrorList {
		return labelValue(t.Value, at.Child("value"))
	},
	func(t corev1.Taint, at *field.Path) field.ErrorList {
		return validateTaintEffect(t.Effect, false, at.Child("effect"))
	},
}

// taintIdentity is what makes two taints the same taint: the scheduler and the taint manager
// key taints by it, so a node may not carry two of them.
type taintIdentity struct {
	key    string
	effect corev1.TaintEffect
}

// validateNodeTaints applies nodeTaintRules to each taint, then refuses a taint whose identity
// an earlier one already has.
func validateNodeTaints(taints []corev1.Taint, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	earlier := sets.New[taintIdentity]()
	for i, t := range taints {
		at := fldPath.Index(i)
		for _, rule := range nodeTaintRules {
			errs = append(errs, rule(t, at)...)
		}
		id := taintIdentity{key: t.Key, effect: t.Effect}
		if earlier.Has(id) {
			dup := field.Duplicate(at, t)
			dup.Detail = "taints must be unique by key and effect pair"
			errs = append(errs, dup)
		}
		earlier.Insert(id)
	}
	return errs
}

// labelValue reports every problem of a label-shaped value in one error, joined with ";".
func labelValue(v string, at *field.Path) field.ErrorList {
	problems := utilvalidation.IsValidLabelValue(v)
	if len(problems) == 0 {
		return nil
	}
	return field.ErrorList{field.Invalid(at, v, strings.Join(problems, ";"))}
}

// supportedTaintEffects are the effects the scheduler and the taint manager act on, in the
// order the "supported values" message lists them.
var supportedTaintEffects = []corev1.TaintEffect{
	corev1.TaintEffectNoSchedule,
	corev1.TaintEffectPreferNoSchedule,
	corev1.TaintEffectNoExecute,
}

// validateTaintEffect checks an effect against supportedTaintEffects; allowEmpty is for
// tolerations, where no effect means every effect.
func validateTaintEffect(effect corev1.TaintEffect, allowEmpty bool, fldPath *field.Path) field.ErrorList {
	switch {
	case effect == "" && allowEmpty:
		return nil
	case effect == "":
		return field.ErrorList{field.Required(fldPath, "")}
	case slices.Contains(supportedTaintEffects, effect):
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath, effect, supportedTaintEffects)}
}

func validateNodeResources(n *corev1.Node) field.ErrorList {
	var allErrs field.ErrorList
	for name, q := range n.Status.Capacity {
		allErrs = append(allErrs, validateResourceQuantityValue(name, q, field.NewPath("status", "capacity").Key(string(name)))...)
	}
	for name, q := range n.Status.Allocatable {
		allErrs = append(allErrs, validateResourceQuantityValue(name, q, field.NewPath("status", "allocatable").Key(string(name)))...)
	}
	return allErrs
}

func validateNodeAddresses(addresses []corev1.NodeAddress) field.ErrorList {
	var allErrs field.ErrorList
	seen := map[corev1.NodeAddress]bool{}
	for i, a := range addresses {
		if seen[a] {
			allErrs = append(allErrs, field.Duplicate(field.NewPath("status", "addresses").Index(i), a))
		}
		seen[a] = true
	}
	return allErrs
}
