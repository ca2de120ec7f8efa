package validation

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateConfigMap validates a configmap on create. A key may live in data
// or binaryData but not both, since both are projected into the same files.
func ValidateConfigMap(c *corev1.ConfigMap) field.ErrorList {
	allErrs := validateObjectMeta(&c.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))

	totalSize := 0
	dataPath := field.NewPath("data")
	for key, value := range c.Data {
		allErrs = append(allErrs, validateConfigKey(key, dataPath.Key(key))...)
		if _, dup := c.BinaryData[key]; dup {
			allErrs = append(allErrs, field.Invalid(dataPath.Key(key), key, "duplicate of key present in binaryData"))
		}
		totalSize += len(value)
	}
	for key, value := range c.BinaryData {
		allErrs = append(allErrs, validateConfigKey(key, field.NewPath("binaryData").Key(key))...)
		totalSize += len(value)
	}
	if totalSize > maxSecretSize {
		// The limit applies to the object as a whole, so upstream reports it
		// against the root path.
		allErrs = append(allErrs, field.TooLong(field.NewPath(""), "", maxSecretSize))
	}
	return allErrs
}

// ValidateConfigMapUpdate validates an update of a configmap; an immutable
// configmap keeps its data, its binaryData and its immutability.
func ValidateConfigMapUpdate(newC, oldC *corev1.ConfigMap) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&newC.ObjectMeta, &oldC.ObjectMeta, field.NewPath("metadata"))
	if oldC.Immutable != nil && *oldC.Immutable {
		if newC.Immutable == nil || !*newC.Immutable {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("immutable"), immutableWhenSetMsg))
		}
		if !maps.Equal(newC.Data, oldC.Data) {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("data"), immutableWhenSetMsg))
		}
		if !maps.EqualFunc(newC.BinaryData, oldC.BinaryData, slices.Equal[[]byte]) {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("binaryData"), immutableWhenSetMsg))
		}
	}
	return append(allErrs, ValidateConfigMap(newC)...)
}
