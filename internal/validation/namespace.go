package validation

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateNamespace validates a namespace on create. Namespace names end up
// in DNS names of services, hence the stricter DNS-1123 label rule.
func ValidateNamespace(ns *corev1.Namespace) field.ErrorList {
	allErrs := validateObjectMeta(&ns.ObjectMeta, false, apivalidation.ValidateNamespaceName, field.NewPath("metadata"))
	return append(allErrs, validateNamespaceFinalizers(ns.Spec.Finalizers)...)
}

// ValidateNamespaceUpdate validates a spec/metadata update of a namespace.
func ValidateNamespaceUpdate(newNs, oldNs *corev1.Namespace) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&newNs.ObjectMeta, &oldNs.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, validateNamespaceFinalizers(newNs.Spec.Finalizers)...)
}

// ValidateNamespaceStatusUpdate ties the phase to the deletion state: a
// namespace is Active until it is deleted and Terminating afterwards, which
// is what the namespace controller and admission rely on.
func ValidateNamespaceStatusUpdate(newNs, oldNs *corev1.Namespace) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&newNs.ObjectMeta, &oldNs.ObjectMeta, field.NewPath("metadata"))
	phasePath := field.NewPath("status", "phase")
	if newNs.DeletionTimestamp.IsZero() {
		if newNs.Status.Phase != corev1.NamespaceActive {
			allErrs = append(allErrs, field.Invalid(phasePath, newNs.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty"))
		}
	} else if newNs.Status.Phase != corev1.NamespaceTerminating {
		allErrs = append(allErrs, field.Invalid(phasePath, newNs.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty"))
	}
	return allErrs
}

// ValidateNamespaceFinalizeUpdate validates a write to the finalize
// subresource, the only way spec.finalizers changes.
func ValidateNamespaceFinalizeUpdate(newNs, oldNs *corev1.Namespace) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&newNs.ObjectMeta, &oldNs.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, validateNamespaceFinalizers(newNs.Spec.Finalizers)...)
}

func validateNamespaceFinalizers(finalizers []corev1.FinalizerName) field.ErrorList {
	var allErrs field.ErrorList
	fldPath := field.NewPath("spec", "finalizers")
	for i, f := range finalizers {
		allErrs = append(allErrs, validateFinalizerName(string(f), fldPath.Index(i))...)
	}
	return allErrs
}
