package validation

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateServiceAccount validates a service account on create. The names
// of the referenced secrets are checked so that the token and pull-secret
// machinery never has to look up something that cannot exist.
func ValidateServiceAccount(sa *corev1.ServiceAccount) field.ErrorList {
	allErrs := validateObjectMeta(&sa.ObjectMeta, true, apivalidation.ValidateServiceAccountName, field.NewPath("metadata"))
	for i, ref := range sa.Secrets {
		allErrs = append(allErrs, validateSecretReferenceName(ref.Name, field.NewPath("secrets").Index(i).Child("name"))...)
	}
	for i, ref := range sa.ImagePullSecrets {
		allErrs = append(allErrs, validateSecretReferenceName(ref.Name, field.NewPath("imagePullSecrets").Index(i).Child("name"))...)
	}
	return allErrs
}

// ValidateServiceAccountUpdate validates an update of a service account.
func ValidateServiceAccountUpdate(newSA, oldSA *corev1.ServiceAccount) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&newSA.ObjectMeta, &oldSA.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, ValidateServiceAccount(newSA)...)
}

func validateSecretReferenceName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return nameErrors(apivalidation.NameIsDNSSubdomain, name, fldPath)
}
