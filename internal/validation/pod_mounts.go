package validation

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedMountPropagations = sets.New(
	corev1.MountPropagationBidirectional,
	corev1.MountPropagationHostToContainer,
	corev1.MountPropagationNone,
)

// recursiveReadOnlyModes say whether each mode makes a mount read-only all
// the way down, which needs a read-only mount that takes no mounts back in
// from the host.
var recursiveReadOnlyModes = map[corev1.RecursiveReadOnlyMode]bool{
	corev1.RecursiveReadOnlyDisabled:   false,
	corev1.RecursiveReadOnlyIfPossible: true,
	corev1.RecursiveReadOnlyEnabled:    true,
}

// mountSubPathFields are the two ways a mount names a path below its
// volume's root: literally, or with $(VAR) expanded from the environment.
var mountSubPathFields = []struct {
	name  string
	value func(corev1.VolumeMount) string
}{
	{"subPath", func(m corev1.VolumeMount) string { return m.SubPath }},
	{"subPathExpr", func(m corev1.VolumeMount) string { return m.SubPathExpr }},
}

// mountCheck is one volume mount of a container under validation.
type mountCheck struct {
	m   *corev1.VolumeMount
	ctr *corev1.Container
	// vol is the pod's volume the mount names, nil if there is none.
	vol *corev1.VolumeSource
	// devices maps the container's block devices to their paths.
	devices map[string]string
	// mountPoints holds the mount paths of the container's earlier mounts.
	mountPoints sets.Set[string]
	path        *field.Path
}

// volumeMountRules are the rules of one volume mount, in report order.
var volumeMountRules = []func(c mountCheck) field.ErrorList{
	mountedVolumeRule,
	mountPointRule,
	notAlsoADeviceRule,
	mountSubPathRule,
	func(c mountCheck) field.ErrorList {
		return validateMountPropagation(c.m.MountPropagation, c.ctr, c.path.Child("mountPropagation"))
	},
	func(c mountCheck) field.ErrorList {
		return validateRecursiveReadOnly(*c.m, c.path.Child("recursiveReadOnly"))
	},
}

func validateVolumeMounts(ctr *corev1.Container, volumes map[string]corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	devices := map[string]string{}
	for _, d := range ctr.VolumeDevices {
		devices[d.Name] = d.DevicePath
	}
	c := mountCheck{ctr: ctr, devices: devices, mountPoints: sets.New[string]()}
	var errs field.ErrorList
	for i := range ctr.VolumeMounts {
		c.m, c.path, c.vol = &ctr.VolumeMounts[i], fldPath.Index(i), nil
		if vol, ok := volumes[c.m.Name]; ok {
			c.vol = &vol
		}
		for _, rule := range volumeMountRules {
			errs = append(errs, rule(c)...)
		}
	}
	return errs
}

func mountedVolumeRule(c mountCheck) field.ErrorList {
	var errs field.ErrorList
	if c.m.Name == "" {
		errs = append(errs, field.Required(c.path.Child("name"), ""))
	}
	if c.vol == nil {
		errs = append(errs, field.NotFound(c.path.Child("name"), c.m.Name))
	}
	return errs
}

func mountPointRule(c mountCheck) field.ErrorList {
	var errs field.ErrorList
	if c.m.MountPath == "" {
		errs = append(errs, field.Required(c.path.Child("mountPath"), ""))
	}
	if c.mountPoints.Has(c.m.MountPath) {
		errs = append(errs, field.Invalid(c.path.Child("mountPath"), c.m.MountPath, "must be unique"))
	}
	c.mountPoints.Insert(c.m.MountPath)
	return errs
}

// notAlsoADeviceRule: a volume is either mounted or attached as a block
// device, and a path holds one or the other.
func notAlsoADeviceRule(c mountCheck) field.ErrorList {
	var errs field.ErrorList
	if _, ok := c.devices[c.m.Name]; ok {
		errs = append(errs, field.Invalid(c.path.Child("name"), c.m.Name, "must not already exist in volumeDevices"))
	}
	for _, devicePath := range c.devices {
		if devicePath == c.m.MountPath {
			errs = append(errs, field.Invalid(c.path.Child("mountPath"), c.m.MountPath, "must not already exist as a path in volumeDevices"))
		}
	}
	return errs
}

// mountSubPathRule: an image volume is mounted whole; any other takes one
// sub path, literal or expanded, below its root.
func mountSubPathRule(c mountCheck) field.ErrorList {
	var errs field.ErrorList
	if c.vol != nil && c.vol.Image != nil {
		for _, f := range mountSubPathFields {
			if v := f.value(*c.m); v != "" {
				errs = append(errs, field.Invalid(c.path.Child(f.name), v, "not allowed in image volume sources"))
			}
		}
	}
	set := 0
	for _, f := range mountSubPathFields {
		v := f.value(*c.m)
		if v == "" {
			continue
		}
		if set++; set > 1 {
			errs = append(errs, field.Invalid(c.path.Child(f.name), v, "subPathExpr and subPath are mutually exclusive"))
		}
		errs = append(errs, validateLocalDescendingPath(v, c.path.Child(f.name))...)
	}
	return errs
}

// validateMountPropagation only lets privileged containers propagate mounts
// back to the host.
func validateMountPropagation(mode *corev1.MountPropagationMode, ctr *corev1.Container, fldPath *field.Path) field.ErrorList {
	if mode == nil {
		return nil
	}
	if !supportedMountPropagations.Has(*mode) {
		return field.ErrorList{field.NotSupported(fldPath, *mode, sets.List(supportedMountPropagations))}
	}
	privileged := ctr.SecurityContext != nil && ctr.SecurityContext.Privileged != nil && *ctr.SecurityContext.Privileged
	if *mode == corev1.MountPropagationBidirectional && !privileged {
		return field.ErrorList{field.Forbidden(fldPath, "Bidirectional mount propagation is available only to privileged containers")}
	}
	return nil
}

func validateRecursiveReadOnly(mnt corev1.VolumeMount, fldPath *field.Path) field.ErrorList {
	if mnt.RecursiveReadOnly == nil {
		return nil
	}
	mode := *mnt.RecursiveReadOnly
	recursive, known := recursiveReadOnlyModes[mode]
	if !known {
		return field.ErrorList{field.NotSupported(fldPath, mode, slices.Sorted(maps.Keys(recursiveReadOnlyModes)))}
	}
	var errs field.ErrorList
	if recursive && !mnt.ReadOnly {
		errs = append(errs, field.Forbidden(fldPath, "may only be specified when readOnly is true"))
	}
	if recursive && mnt.MountPropagation != nil && *mnt.MountPropagation != corev1.MountPropagationNone {
		errs = append(errs, field.Forbidden(fldPath, "may only be specified when mountPropagation is None or not specified"))
	}
	return errs
}

// blockVolumeSource says whether a volume source can back a raw block device: only claims, whose
// volume mode says block, can.
func blockVolumeSource(src corev1.VolumeSource) bool {
	return src.PersistentVolumeClaim != nil || src.Ephemeral != nil
}

// validateVolumeDevices checks a container's raw block devices: each names a claim-backed volume
// of the pod once, at a device path of its own that no volume mount of the container also uses.
func validateVolumeDevices(ctr *corev1.Container, volumes map[string]corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	mountPaths := map[string]string{} // volume name -> mount path
	for _, m := range ctr.VolumeMounts {
		mountPaths[m.Name] = m.MountPath
	}
	var allErrs field.ErrorList
	names, devicePaths := sets.New[string](), sets.New[string]()
	for i, dev := range ctr.VolumeDevices {
		idxPath := fldPath.Index(i)
		allErrs = append(allErrs, validateDeviceVolume(dev.Name, volumes, names, idxPath.Child("name"))...)
		allErrs = append(allErrs, validateDevicePath(dev.DevicePath, devicePaths, idxPath.Child("devicePath"))...)
		if _, mounted := mountPaths[dev.Name]; mounted {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), dev.Name, "must not already exist in volumeMounts"))
		}
		for _, mountPath := range mountPaths {
			if mountPath == dev.DevicePath {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("devicePath"), dev.DevicePath, "must not already exist as a path in volumeMounts"))
			}
		}
	}
	return allErrs
}

// validateDeviceVolume checks the volume a device names; seen collects the names so far.
func validateDeviceVolume(name string, volumes map[string]corev1.VolumeSource, seen sets.Set[string], fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, ""), field.NotFound(fldPath, name)}
	}
	var allErrs field.ErrorList
	if seen.Has(name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, "must be unique"))
	}
	seen.Insert(name)
	switch src, ok := volumes[name]; {
	case !ok:
		allErrs = append(allErrs, field.NotFound(fldPath, name))
	case !blockVolumeSource(src):
		allErrs = append(allErrs, field.Invalid(fldPath, name, "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"))
	}
	return allErrs
}

// validateDevicePath checks where a device appears in the container; seen collects the valid
// paths so far.
func validateDevicePath(path string, seen sets.Set[string], fldPath *field.Path) field.ErrorList {
	if path == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var allErrs field.ErrorList
	if seen.Has(path) {
		allErrs = append(allErrs, field.Invalid(fldPath, path, "must be unique"))
	}
	if len(validatePathNoBacksteps(path, fldPath)) > 0 {
		return append(allErrs, field.Invalid(fldPath, path, "can not contain backsteps ('..')"))
	}
	seen.Insert(path)
	return allErrs
}
