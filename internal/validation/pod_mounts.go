package validation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedMountPropagations = sets.New(
	corev1.MountPropagationBidirectional,
	corev1.MountPropagationHostToContainer,
	corev1.MountPropagationNone,
)

var supportedRecursiveReadOnly = sets.New(
	corev1.RecursiveReadOnlyDisabled,
	corev1.RecursiveReadOnlyIfPossible,
	corev1.RecursiveReadOnlyEnabled,
)

func validateVolumeMounts(ctr *corev1.Container, volumes map[string]corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	devices := map[string]string{}
	for _, d := range ctr.VolumeDevices {
		devices[d.Name] = d.DevicePath
	}
	mountPoints := sets.New[string]()
	for i, mnt := range ctr.VolumeMounts {
		idxPath := fldPath.Index(i)
		if mnt.Name == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("name"), ""))
		}
		vol, found := volumes[mnt.Name]
		if !found {
			allErrs = append(allErrs, field.NotFound(idxPath.Child("name"), mnt.Name))
		}
		if mnt.MountPath == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("mountPath"), ""))
		}
		if mountPoints.Has(mnt.MountPath) {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("mountPath"), mnt.MountPath, "must be unique"))
		}
		mountPoints.Insert(mnt.MountPath)
		if _, ok := devices[mnt.Name]; ok {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), mnt.Name, "must not already exist in volumeDevices"))
		}
		for _, devicePath := range devices {
			if devicePath == mnt.MountPath {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("mountPath"), mnt.MountPath, "must not already exist as a path in volumeDevices"))
			}
		}
		if found && vol.Image != nil {
			if mnt.SubPath != "" {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("subPath"), mnt.SubPath, "not allowed in image volume sources"))
			}
			if mnt.SubPathExpr != "" {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("subPathExpr"), mnt.SubPathExpr, "not allowed in image volume sources"))
			}
		}
		if mnt.SubPath != "" {
			allErrs = append(allErrs, validateLocalDescendingPath(mnt.SubPath, idxPath.Child("subPath"))...)
		}
		if mnt.SubPathExpr != "" {
			if mnt.SubPath != "" {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("subPathExpr"), mnt.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			allErrs = append(allErrs, validateLocalDescendingPath(mnt.SubPathExpr, idxPath.Child("subPathExpr"))...)
		}
		allErrs = append(allErrs, validateMountPropagation(mnt.MountPropagation, ctr, idxPath.Child("mountPropagation"))...)
		allErrs = append(allErrs, validateRecursiveReadOnly(mnt, idxPath.Child("recursiveReadOnly"))...)
	}
	return allErrs
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
	var allErrs field.ErrorList
	switch *mnt.RecursiveReadOnly {
	case corev1.RecursiveReadOnlyDisabled:
	case corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible:
		if !mnt.ReadOnly {
			allErrs = append(allErrs, field.Forbidden(fldPath, "may only be specified when readOnly is true"))
		}
		if mnt.MountPropagation != nil && *mnt.MountPropagation != corev1.MountPropagationNone {
			allErrs = append(allErrs, field.Forbidden(fldPath, "may only be specified when mountPropagation is None or not specified"))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath, *mnt.RecursiveReadOnly, sets.List(supportedRecursiveReadOnly)))
	}
	return allErrs
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
