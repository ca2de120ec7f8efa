package validation

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedProcMountTypes = []corev1.ProcMountType{corev1.DefaultProcMount, corev1.UnmaskedProcMount}

var supportedSeccompProfileTypes = []corev1.SeccompProfileType{
	corev1.SeccompProfileTypeLocalhost,
	corev1.SeccompProfileTypeRuntimeDefault,
	corev1.SeccompProfileTypeUnconfined,
}

var supportedAppArmorProfileTypes = []corev1.AppArmorProfileType{
	corev1.AppArmorProfileTypeLocalhost,
	corev1.AppArmorProfileTypeRuntimeDefault,
	corev1.AppArmorProfileTypeUnconfined,
}

// validateSecurityContext checks a container's security context. Whether
// privileged containers are allowed at all is cluster policy, which idplane
// leaves to admission.
func validateSecurityContext(sc *corev1.SecurityContext, hostUsers bool, fldPath *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var allErrs field.ErrorList
	if sc.RunAsUser != nil {
		allErrs = append(allErrs, validateUserID(*sc.RunAsUser, fldPath.Child("runAsUser"))...)
	}
	if sc.RunAsGroup != nil {
		allErrs = append(allErrs, validateGroupID(*sc.RunAsGroup, fldPath.Child("runAsGroup"))...)
	}
	if sc.ProcMount != nil {
		procPath := fldPath.Child("procMount")
		switch *sc.ProcMount {
		case corev1.DefaultProcMount:
		case corev1.UnmaskedProcMount:
			// An unmasked /proc is only safe inside a user namespace.
			if hostUsers {
				allErrs = append(allErrs, field.Invalid(procPath, *sc.ProcMount, "`hostUsers` must be false to use `Unmasked`"))
			}
		default:
			allErrs = append(allErrs, field.NotSupported(procPath, *sc.ProcMount, supportedProcMountTypes))
		}
	}
	allErrs = append(allErrs, validateSeccompProfile(sc.SeccompProfile, fldPath.Child("seccompProfile"))...)
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Privileged != nil && *sc.Privileged {
			allErrs = append(allErrs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				if c == "CAP_SYS_ADMIN" {
					allErrs = append(allErrs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
				}
			}
		}
	}
	return append(allErrs, validateAppArmorProfile(sc.AppArmorProfile, fldPath.Child("appArmorProfile"))...)
}

func validateUserID(uid int64, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsValidUserID(uid) {
		allErrs = append(allErrs, field.Invalid(fldPath, uid, msg))
	}
	return allErrs
}

func validateGroupID(gid int64, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsValidGroupID(gid) {
		allErrs = append(allErrs, field.Invalid(fldPath, gid, msg))
	}
	return allErrs
}

func validateSeccompProfile(sp *corev1.SeccompProfile, fldPath *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	var allErrs field.ErrorList
	switch sp.Type {
	case corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined:
	case "":
		allErrs = append(allErrs, field.Required(fldPath.Child("type"), "type is required when seccompProfile is set"))
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("type"), sp.Type, supportedSeccompProfileTypes))
	}
	if sp.Type == corev1.SeccompProfileTypeLocalhost {
		if sp.LocalhostProfile == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("localhostProfile"), "must be set when seccomp type is Localhost"))
		} else {
			allErrs = append(allErrs, validateLocalDescendingPath(*sp.LocalhostProfile, fldPath.Child("localhostProfile"))...)
		}
	} else if sp.LocalhostProfile != nil {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("localhostProfile"), sp, "can only be set when seccomp type is Localhost"))
	}
	return allErrs
}

func validateAppArmorProfile(p *corev1.AppArmorProfile, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	var allErrs field.ErrorList
	switch p.Type {
	case corev1.AppArmorProfileTypeLocalhost:
		lpPath := fldPath.Child("localhostProfile")
		switch {
		case p.LocalhostProfile == nil:
			allErrs = append(allErrs, field.Required(lpPath, "must be set when AppArmor type is Localhost"))
		case strings.TrimSpace(*p.LocalhostProfile) != *p.LocalhostProfile:
			allErrs = append(allErrs, field.Invalid(lpPath, *p.LocalhostProfile, "must not be padded with whitespace"))
		case *p.LocalhostProfile == "":
			allErrs = append(allErrs, field.Required(lpPath, "must be set when AppArmor type is Localhost"))
		}
		if p.LocalhostProfile != nil && len(*p.LocalhostProfile) > 4095 {
			allErrs = append(allErrs, field.TooLong(lpPath, "", 4095))
		}
	case corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined:
		if p.LocalhostProfile != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("localhostProfile"), p.LocalhostProfile, "can only be set when AppArmor type is Localhost"))
		}
	case "":
		allErrs = append(allErrs, field.Required(fldPath.Child("type"), "type is required when appArmorProfile is set"))
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("type"), p.Type, supportedAppArmorProfileTypes))
	}
	return allErrs
}
