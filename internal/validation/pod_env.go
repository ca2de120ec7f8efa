package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// unionMember is one member of an API struct of which exactly one member is
// set: its serialized name, whether it is set, and its own checks.
type unionMember[T any] struct {
	name  string
	isSet func(*T) bool
	check func(v *T, fldPath *field.Path) field.ErrorList
}

// checkUnion runs the checks of the members set in v, each at its own path,
// and returns how many are set.
func checkUnion[T any](v *T, members []unionMember[T], fldPath *field.Path) (int, field.ErrorList) {
	set := 0
	var errs field.ErrorList
	for _, m := range members {
		if m.isSet(v) {
			set++
			errs = append(errs, m.check(v, fldPath.Child(m.name))...)
		}
	}
	return set, errs
}

// unionCountErrors reports a union with no member set, or with several.
func unionCountErrors[T any](set int, members []unionMember[T], fldPath *field.Path) field.ErrorList {
	switch {
	case set == 0:
		names := make([]string, len(members))
		for i, m := range members {
			names[i] = "`" + m.name + "`"
		}
		last := len(names) - 1
		return field.ErrorList{field.Invalid(fldPath, "", fmt.Sprintf("must specify one of: %s or %s", strings.Join(names[:last], ", "), names[last]))}
	case set > 1:
		return field.ErrorList{field.Invalid(fldPath, "", "may not have more than one field specified at a time")}
	}
	return nil
}

// envVarSources are where an environment variable's value may come from.
var envVarSources = []unionMember[corev1.EnvVarSource]{
	{
		name:  "fieldRef",
		isSet: func(s *corev1.EnvVarSource) bool { return s.FieldRef != nil },
		check: func(s *corev1.EnvVarSource, p *field.Path) field.ErrorList {
			return validateObjectFieldSelector(s.FieldRef, validEnvDownwardAPIFieldPaths, p)
		},
	},
	{
		name:  "resourceFieldRef",
		isSet: func(s *corev1.EnvVarSource) bool { return s.ResourceFieldRef != nil },
		check: func(s *corev1.EnvVarSource, p *field.Path) field.ErrorList {
			return validateResourceFieldSelector(s.ResourceFieldRef, false, p)
		},
	},
	{
		name:  "configMapKeyRef",
		isSet: func(s *corev1.EnvVarSource) bool { return s.ConfigMapKeyRef != nil },
		check: func(s *corev1.EnvVarSource, p *field.Path) field.ErrorList {
			return validateKeySelector(s.ConfigMapKeyRef.Name, s.ConfigMapKeyRef.Key, p)
		},
	},
	{
		name:  "secretKeyRef",
		isSet: func(s *corev1.EnvVarSource) bool { return s.SecretKeyRef != nil },
		check: func(s *corev1.EnvVarSource, p *field.Path) field.ErrorList {
			return validateKeySelector(s.SecretKeyRef.Name, s.SecretKeyRef.Key, p)
		},
	},
	{
		name:  "fileKeyRef",
		isSet: func(s *corev1.EnvVarSource) bool { return s.FileKeyRef != nil },
		check: func(s *corev1.EnvVarSource, p *field.Path) field.ErrorList {
			return validateFileKeySelector(s.FileKeyRef, p)
		},
	},
}

// envFromSources are what a container may import all variables from.
var envFromSources = []unionMember[corev1.EnvFromSource]{
	{
		name:  "configMapRef",
		isSet: func(s *corev1.EnvFromSource) bool { return s.ConfigMapRef != nil },
		check: func(s *corev1.EnvFromSource, p *field.Path) field.ErrorList {
			return validateEnvSourceName(s.ConfigMapRef.Name, p.Child("name"))
		},
	},
	{
		name:  "secretRef",
		isSet: func(s *corev1.EnvFromSource) bool { return s.SecretRef != nil },
		check: func(s *corev1.EnvFromSource, p *field.Path) field.ErrorList {
			return validateEnvSourceName(s.SecretRef.Name, p.Child("name"))
		},
	},
}

// validateEnvVarName: since 1.34 names may be any printable ASCII except
// '=', which is what shells and execve accept.
func validateEnvVarName(name string, fldPath *field.Path) field.ErrorList {
	return invalidEach(fldPath, name, utilvalidation.IsRelaxedEnvVarName(name))
}

func validateEnv(vars []corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range vars {
		idxPath := fldPath.Index(i)
		errs = append(errs, requiredThen(vars[i].Name, idxPath.Child("name"), validateEnvVarName)...)
		errs = append(errs, validateEnvVarValueFrom(&vars[i], idxPath.Child("valueFrom"))...)
	}
	return errs
}

// validateEnvVarValueFrom: a variable takes its value from one source, and
// then has no literal value.
func validateEnvVarValueFrom(ev *corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	if ev.ValueFrom == nil {
		return nil
	}
	set, errs := checkUnion(ev.ValueFrom, envVarSources, fldPath)
	if set > 0 && ev.Value != "" {
		return append(errs, field.Invalid(fldPath, "", "may not be specified when `value` is not empty"))
	}
	return append(errs, unionCountErrors(set, envVarSources, fldPath)...)
}

func validateEnvFrom(sources []corev1.EnvFromSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range sources {
		idxPath := fldPath.Index(i)
		if p := sources[i].Prefix; p != "" {
			errs = append(errs, validateEnvVarName(p, idxPath.Child("prefix"))...)
		}
		set, sourceErrs := checkUnion(&sources[i], envFromSources, idxPath)
		errs = append(errs, sourceErrs...)
		// Reported at the list, not at the entry: upstream's path, which
		// clients may match on.
		errs = append(errs, unionCountErrors(set, envFromSources, fldPath)...)
	}
	return errs
}

// validateKeySelector checks a reference to one key of a ConfigMap or Secret.
func validateKeySelector(name, key string, fldPath *field.Path) field.ErrorList {
	errs := nameErrors(apivalidation.NameIsDNSSubdomain, name, fldPath.Child("name"))
	return append(errs, requiredThen(key, fldPath.Child("key"), validateConfigKey)...)
}

// validateFileKeySelector checks a variable read from a file that an init
// container wrote into an emptyDir volume.
func validateFileKeySelector(s *corev1.FileKeySelector, fldPath *field.Path) field.ErrorList {
	errs := requireString(s.VolumeName, fldPath.Child("volumeName"))
	errs = append(errs, requiredThen(s.Path, fldPath.Child("path"), validateLocalNonReservedPath)...)
	return append(errs, requiredThen(s.Key, fldPath.Child("key"), validateEnvVarName)...)
}

// validateEnvSourceName checks the name as upstream does, as a name prefix:
// a trailing '-' passes.
func validateEnvSourceName(name string, fldPath *field.Path) field.ErrorList {
	return requiredThen(name, fldPath, func(name string, fldPath *field.Path) field.ErrorList {
		return invalidEach(fldPath, name, apivalidation.NameIsDNSSubdomain(name, true))
	})
}
