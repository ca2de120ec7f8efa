package validation

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateEnv checks environment variables. Since 1.34 names may be any
// printable ASCII except '=', which is what shells and execve accept.
func validateEnv(vars []corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, ev := range vars {
		idxPath := fldPath.Index(i)
		if ev.Name == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("name"), ""))
		} else {
			for _, msg := range utilvalidation.IsRelaxedEnvVarName(ev.Name) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), ev.Name, msg))
			}
		}
		allErrs = append(allErrs, validateEnvVarValueFrom(ev, idxPath.Child("valueFrom"))...)
	}
	return allErrs
}

func validateEnvVarValueFrom(ev corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	from := ev.ValueFrom
	if from == nil {
		return nil
	}
	var allErrs field.ErrorList
	numSources := 0
	if from.FieldRef != nil {
		numSources++
		allErrs = append(allErrs, validateObjectFieldSelector(from.FieldRef, validEnvDownwardAPIFieldPaths, fldPath.Child("fieldRef"))...)
	}
	if from.ResourceFieldRef != nil {
		numSources++
		allErrs = append(allErrs, validateResourceFieldSelector(from.ResourceFieldRef, false, fldPath.Child("resourceFieldRef"))...)
	}
	if from.ConfigMapKeyRef != nil {
		numSources++
		allErrs = append(allErrs, validateKeySelector(from.ConfigMapKeyRef.Name, from.ConfigMapKeyRef.Key, fldPath.Child("configMapKeyRef"))...)
	}
	if from.SecretKeyRef != nil {
		numSources++
		allErrs = append(allErrs, validateKeySelector(from.SecretKeyRef.Name, from.SecretKeyRef.Key, fldPath.Child("secretKeyRef"))...)
	}
	if from.FileKeyRef != nil {
		numSources++
		allErrs = append(allErrs, validateFileKeySelector(from.FileKeyRef, fldPath.Child("fileKeyRef"))...)
	}
	switch {
	case numSources == 0:
		allErrs = append(allErrs, field.Invalid(fldPath, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
	case ev.Value != "":
		allErrs = append(allErrs, field.Invalid(fldPath, "", "may not be specified when `value` is not empty"))
	case numSources > 1:
		allErrs = append(allErrs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
	}
	return allErrs
}

func validateKeySelector(name, key string, fldPath *field.Path) field.ErrorList {
	allErrs := nameErrors(apivalidation.NameIsDNSSubdomain, name, fldPath.Child("name"))
	if key == "" {
		return append(allErrs, field.Required(fldPath.Child("key"), ""))
	}
	return append(allErrs, validateConfigKey(key, fldPath.Child("key"))...)
}

// validateFileKeySelector checks an env var read from a file that an init
// container wrote into an emptyDir volume.
func validateFileKeySelector(s *corev1.FileKeySelector, fldPath *field.Path) field.ErrorList {
	allErrs := requireString(s.VolumeName, fldPath.Child("volumeName"))
	if s.Path == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("path"), ""))
	} else {
		allErrs = append(allErrs, validateLocalNonReservedPath(s.Path, fldPath.Child("path"))...)
	}
	if s.Key == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("key"), ""))
	} else {
		for _, msg := range utilvalidation.IsRelaxedEnvVarName(s.Key) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("key"), s.Key, msg))
		}
	}
	return allErrs
}

func validateEnvFrom(sources []corev1.EnvFromSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, src := range sources {
		idxPath := fldPath.Index(i)
		if src.Prefix != "" {
			for _, msg := range utilvalidation.IsRelaxedEnvVarName(src.Prefix) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("prefix"), src.Prefix, msg))
			}
		}
		numSources := 0
		if src.ConfigMapRef != nil {
			numSources++
			allErrs = append(allErrs, validateEnvSourceName(src.ConfigMapRef.Name, idxPath.Child("configMapRef", "name"))...)
		}
		if src.SecretRef != nil {
			numSources++
			allErrs = append(allErrs, validateEnvSourceName(src.SecretRef.Name, idxPath.Child("secretRef", "name"))...)
		}
		switch {
		case numSources == 0:
			allErrs = append(allErrs, field.Invalid(fldPath, "", "must specify one of: `configMapRef` or `secretRef`"))
		case numSources > 1:
			allErrs = append(allErrs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
		}
	}
	return allErrs
}

func validateEnvSourceName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var allErrs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSSubdomain(name, true) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	return allErrs
}
