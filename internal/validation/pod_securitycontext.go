package validation

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// securityContextRule checks one aspect of a container's security context.
// hostUsers says whether the pod runs in the host's user namespace.
type securityContextRule func(sc *corev1.SecurityContext, hostUsers bool, fldPath *field.Path) field.ErrorList

// containerSecurityRules are a container's security-context rules, in the
// order their errors are reported. Whether privileged containers are allowed
// at all is cluster policy, which idplane leaves to admission.
var containerSecurityRules = []securityContextRule{
	runAsIDsRule,
	procMountRule,
	func(sc *corev1.SecurityContext, _ bool, fldPath *field.Path) field.ErrorList {
		return validateSeccompProfile(sc.SeccompProfile, fldPath.Child("seccompProfile"))
	},
	noEscalationRule,
	func(sc *corev1.SecurityContext, _ bool, fldPath *field.Path) field.ErrorList {
		return validateAppArmorProfile(sc.AppArmorProfile, fldPath.Child("appArmorProfile"))
	},
}

func validateSecurityContext(sc *corev1.SecurityContext, hostUsers bool, fldPath *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	for _, rule := range containerSecurityRules {
		errs = append(errs, rule(sc, hostUsers, fldPath)...)
	}
	return errs
}

func runAsIDsRule(sc *corev1.SecurityContext, _ bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if sc.RunAsUser != nil {
		errs = append(errs, validateUserID(*sc.RunAsUser, fldPath.Child("runAsUser"))...)
	}
	if sc.RunAsGroup != nil {
		errs = append(errs, validateGroupID(*sc.RunAsGroup, fldPath.Child("runAsGroup"))...)
	}
	return errs
}

func validateUserID(uid int64, fldPath *field.Path) field.ErrorList {
	return invalidEach(fldPath, uid, utilvalidation.IsValidUserID(uid))
}

func validateGroupID(gid int64, fldPath *field.Path) field.ErrorList {
	return invalidEach(fldPath, gid, utilvalidation.IsValidGroupID(gid))
}

// procMountNeedsUserNamespace lists the /proc views a container may ask for,
// and whether the view is only safe inside a user namespace of the pod's own:
// an unmasked /proc exposes kernel knobs of the host otherwise.
var procMountNeedsUserNamespace = map[corev1.ProcMountType]bool{
	corev1.DefaultProcMount:  false,
	corev1.UnmaskedProcMount: true,
}

func procMountRule(sc *corev1.SecurityContext, hostUsers bool, fldPath *field.Path) field.ErrorList {
	if sc.ProcMount == nil {
		return nil
	}
	mount := *sc.ProcMount
	needsUserNS, known := procMountNeedsUserNamespace[mount]
	switch {
	case !known:
		supported := slices.Sorted(maps.Keys(procMountNeedsUserNamespace))
		return field.ErrorList{field.NotSupported(fldPath.Child("procMount"), mount, supported)}
	case needsUserNS && hostUsers:
		return field.ErrorList{field.Invalid(fldPath.Child("procMount"), mount, fmt.Sprintf("`hostUsers` must be false to use `%s`", mount))}
	}
	return nil
}

// escalatingCapabilities grant what allowPrivilegeEscalation: false is meant
// to withhold, so a container cannot ask for both.
var escalatingCapabilities = sets.New[corev1.Capability]("CAP_SYS_ADMIN")

func noEscalationRule(sc *corev1.SecurityContext, _ bool, fldPath *field.Path) field.ErrorList {
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		return nil
	}
	var errs field.ErrorList
	if sc.Privileged != nil && *sc.Privileged {
		errs = append(errs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
	}
	var added []corev1.Capability
	if sc.Capabilities != nil {
		added = sc.Capabilities.Add
	}
	for _, c := range added {
		if escalatingCapabilities.Has(c) {
			errs = append(errs, field.Invalid(fldPath, sc, fmt.Sprintf("cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` %s", c)))
		}
	}
	return errs
}

// profileKind describes a kind of confinement profile (seccomp, AppArmor).
// Both are a type plus a profile name that the Localhost type, and only it,
// carries; they differ in their names for messages and in how the name of a
// profile on the node is checked.
type profileKind[T ~string] struct {
	label     string // the kind as messages call it
	apiField  string // the field that holds such a profile
	types     []T    // the supported types, in the order users are told
	localhost T
	checkName func(name string, fldPath *field.Path) field.ErrorList
}

var seccompProfiles = profileKind[corev1.SeccompProfileType]{
	label:    "seccomp",
	apiField: "seccompProfile",
	types: []corev1.SeccompProfileType{
		corev1.SeccompProfileTypeLocalhost,
		corev1.SeccompProfileTypeRuntimeDefault,
		corev1.SeccompProfileTypeUnconfined,
	},
	localhost: corev1.SeccompProfileTypeLocalhost,
	// The kubelet reads the profile from a file below its seccomp directory.
	checkName: validateLocalDescendingPath,
}

var appArmorProfiles = profileKind[corev1.AppArmorProfileType]{
	label:    "AppArmor",
	apiField: "appArmorProfile",
	types: []corev1.AppArmorProfileType{
		corev1.AppArmorProfileTypeLocalhost,
		corev1.AppArmorProfileTypeRuntimeDefault,
		corev1.AppArmorProfileTypeUnconfined,
	},
	localhost: corev1.AppArmorProfileTypeLocalhost,
	checkName: validateAppArmorProfileName,
}

func (k profileKind[T]) typeErrors(t T, fldPath *field.Path) field.ErrorList {
	switch {
	case t == "":
		return field.ErrorList{field.Required(fldPath, fmt.Sprintf("type is required when %s is set", k.apiField))}
	case !slices.Contains(k.types, t):
		return field.ErrorList{field.NotSupported(fldPath, t, k.types)}
	}
	return nil
}

// nameErrors requires the profile name of a Localhost profile and refuses it
// on any other type; shown is what the refusal quotes.
func (k profileKind[T]) nameErrors(t T, name *string, shown any, fldPath *field.Path) field.ErrorList {
	switch {
	case t == k.localhost && name == nil:
		return field.ErrorList{field.Required(fldPath, fmt.Sprintf("must be set when %s type is %s", k.label, k.localhost))}
	case t == k.localhost:
		return k.checkName(*name, fldPath)
	case name != nil:
		return field.ErrorList{field.Invalid(fldPath, shown, fmt.Sprintf("can only be set when %s type is %s", k.label, k.localhost))}
	}
	return nil
}

// validateSeccompProfile checks the name even when the type is unknown, and
// quotes the whole profile when refusing it: both as upstream reports them.
func validateSeccompProfile(sp *corev1.SeccompProfile, fldPath *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	errs := seccompProfiles.typeErrors(sp.Type, fldPath.Child("type"))
	return append(errs, seccompProfiles.nameErrors(sp.Type, sp.LocalhostProfile, sp, fldPath.Child("localhostProfile"))...)
}

// validateAppArmorProfile checks the name only once the type is known.
func validateAppArmorProfile(p *corev1.AppArmorProfile, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	if errs := appArmorProfiles.typeErrors(p.Type, fldPath.Child("type")); len(errs) > 0 {
		return errs
	}
	return appArmorProfiles.nameErrors(p.Type, p.LocalhostProfile, p.LocalhostProfile, fldPath.Child("localhostProfile"))
}

// maxAppArmorProfileName is PATH_MAX less its terminating NUL: the longest
// profile name the kernel takes.
const maxAppArmorProfileName = 4095

// validateAppArmorProfileName: AppArmor looks a profile up by its exact
// name, so padding would name a profile nobody loaded.
func validateAppArmorProfileName(name string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if trimmed := strings.TrimSpace(name); trimmed != name {
		errs = append(errs, field.Invalid(fldPath, name, "must not be padded with whitespace"))
	} else if trimmed == "" {
		errs = append(errs, field.Required(fldPath, "must be set when AppArmor type is Localhost"))
	}
	if len(name) > maxAppArmorProfileName {
		errs = append(errs, field.TooLong(fldPath, "", maxAppArmorProfileName))
	}
	return errs
}
