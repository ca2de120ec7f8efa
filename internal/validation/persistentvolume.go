package validation

import (
	"path"
	"reflect"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedAccessModes = sets.New(
	corev1.ReadWriteOnce,
	corev1.ReadOnlyMany,
	corev1.ReadWriteMany,
	corev1.ReadWriteOncePod,
)

var supportedReclaimPolicies = sets.New(
	corev1.PersistentVolumeReclaimDelete,
	corev1.PersistentVolumeReclaimRecycle,
	corev1.PersistentVolumeReclaimRetain,
)

var supportedVolumeModes = sets.New(corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem)

// ValidatePersistentVolume validates a persistent volume on create.
func ValidatePersistentVolume(pv *corev1.PersistentVolume) field.ErrorList {
	allErrs := validateObjectMeta(&pv.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(allErrs, validatePersistentVolumeSpec(&pv.Spec, field.NewPath("spec"))...)
}

// ValidatePersistentVolumeUpdate validates an update of a persistent volume.
// What the volume is (its source, mode and node affinity) is fixed once
// created; binding, capacity, class and reclaim policy may change.
func ValidatePersistentVolumeUpdate(newPV, oldPV *corev1.PersistentVolume) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&newPV.ObjectMeta, &oldPV.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validatePersistentVolumeSpec(&newPV.Spec, field.NewPath("spec"))...)

	newSource := newPV.Spec.PersistentVolumeSource
	// Adding a controller expand secret to a CSI volume is how volumes
	// created before expansion existed become expandable.
	if oldPV.Spec.CSI != nil && oldPV.Spec.CSI.ControllerExpandSecretRef == nil && newSource.CSI != nil && newSource.CSI.ControllerExpandSecretRef != nil {
		csi := *newSource.CSI
		csi.ControllerExpandSecretRef = nil
		newSource.CSI = &csi
	}
	if !apiequality.Semantic.DeepEqual(newSource, oldPV.Spec.PersistentVolumeSource) {
		diff := cmp.Diff(oldPV.Spec.PersistentVolumeSource, newSource)
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "persistentvolumesource"), "spec.persistentvolumesource is immutable after creation\n"+diff))
	}
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(newPV.Spec.VolumeMode, oldPV.Spec.VolumeMode, field.NewPath("spec", "volumeMode"))...)
	if oldPV.Spec.NodeAffinity != nil {
		allErrs = append(allErrs, apivalidation.ValidateImmutableField(newPV.Spec.NodeAffinity, oldPV.Spec.NodeAffinity, field.NewPath("spec", "nodeAffinity"))...)
	}
	if oldPV.Spec.VolumeAttributesClassName != nil && newPV.Spec.VolumeAttributesClassName == nil {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "volumeAttributesClassName"), "update from non-nil value to nil is forbidden"))
	}
	return allErrs
}

// ValidatePersistentVolumeStatusUpdate validates a write to the status
// subresource; status itself is owned by the PV controller and unchecked.
func ValidatePersistentVolumeStatusUpdate(newPV, oldPV *corev1.PersistentVolume) field.ErrorList {
	return validateObjectMetaUpdate(&newPV.ObjectMeta, &oldPV.ObjectMeta, field.NewPath("metadata"))
}

func validatePersistentVolumeSpec(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateAccessModes(spec.AccessModes, fldPath.Child("accessModes"))

	capPath := fldPath.Child("capacity")
	if len(spec.Capacity) == 0 {
		allErrs = append(allErrs, field.Required(capPath, ""))
	}
	if _, ok := spec.Capacity[corev1.ResourceStorage]; !ok || len(spec.Capacity) > 1 {
		allErrs = append(allErrs, field.NotSupported(capPath, spec.Capacity, []corev1.ResourceName{corev1.ResourceStorage}))
	}
	for name, q := range spec.Capacity {
		allErrs = append(allErrs, validatePositiveQuantity(q, capPath.Key(string(name)))...)
	}

	if spec.PersistentVolumeReclaimPolicy != "" && !supportedReclaimPolicies.Has(spec.PersistentVolumeReclaimPolicy) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("persistentVolumeReclaimPolicy"), spec.PersistentVolumeReclaimPolicy, sets.List(supportedReclaimPolicies)))
	}

	hasNodeAffinity := spec.NodeAffinity != nil
	if hasNodeAffinity {
		affPath := fldPath.Child("nodeAffinity")
		if spec.NodeAffinity.Required == nil {
			allErrs = append(allErrs, field.Required(affPath.Child("required"), "must specify required node constraints"))
		} else {
			allErrs = append(allErrs, validateNodeSelector(spec.NodeAffinity.Required, affPath.Child("required"))...)
		}
	}

	allErrs = append(allErrs, validatePersistentVolumeSource(&spec.PersistentVolumeSource, fldPath)...)
	if spec.Local != nil && !hasNodeAffinity {
		allErrs = append(allErrs, field.Required(fldPath.Child("nodeAffinity"), "Local volume requires node affinity"))
	}
	// Recycling scrubs the volume; doing that to the host's root is fatal.
	if spec.HostPath != nil && path.Clean(spec.HostPath.Path) == "/" && spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRecycle {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("persistentVolumeReclaimPolicy"), "may not be 'recycle' for a hostPath mount of '/'"))
	}

	if spec.StorageClassName != "" {
		allErrs = append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, spec.StorageClassName, fldPath.Child("storageClassName"))...)
	}
	if spec.VolumeMode != nil && !supportedVolumeModes.Has(*spec.VolumeMode) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("volumeMode"), *spec.VolumeMode, sets.List(supportedVolumeModes)))
	}
	if spec.VolumeAttributesClassName != nil {
		vacPath := fldPath.Child("volumeAttributesClassName")
		if *spec.VolumeAttributesClassName == "" {
			allErrs = append(allErrs, field.Required(vacPath, "an empty string is disallowed"))
		} else {
			allErrs = append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, *spec.VolumeAttributesClassName, vacPath)...)
		}
		if spec.CSI == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("csi"), "has to be specified when using volumeAttributesClassName"))
		}
	}
	return allErrs
}

// validateAccessModes requires at least one known mode; ReadWriteOncePod is
// exclusive by definition and cannot be combined with the others.
func validateAccessModes(modes []corev1.PersistentVolumeAccessMode, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(modes) == 0 {
		allErrs = append(allErrs, field.Required(fldPath, "at least 1 access mode is required"))
	}
	rwop, others := false, false
	for _, mode := range modes {
		switch {
		case !supportedAccessModes.Has(mode):
			allErrs = append(allErrs, field.NotSupported(fldPath, mode, sets.List(supportedAccessModes)))
		case mode == corev1.ReadWriteOncePod:
			rwop = true
		default:
			others = true
		}
	}
	if rwop && others {
		allErrs = append(allErrs, field.Forbidden(fldPath, "may not use ReadWriteOncePod with other access modes"))
	}
	return allErrs
}

// validatePersistentVolumeSource requires exactly one source, counted over
// every pointer field of PersistentVolumeSource so new sources are covered.
func validatePersistentVolumeSource(src *corev1.PersistentVolumeSource, fldPath *field.Path) field.ErrorList {
	name, value, allErrs := exactlyOneSource(reflect.ValueOf(src).Elem(), fldPath)
	if value == nil {
		return allErrs
	}
	srcPath := fldPath.Child(name)
	switch s := value.(type) {
	case *corev1.HostPathVolumeSource:
		allErrs = append(allErrs, validateHostPathVolumeSource(s, srcPath)...)
	case *corev1.NFSVolumeSource:
		allErrs = append(allErrs, validateNFSVolumeSource(s, srcPath)...)
	case *corev1.LocalVolumeSource:
		if s.Path == "" {
			allErrs = append(allErrs, field.Required(srcPath.Child("path"), ""))
		} else {
			allErrs = append(allErrs, validatePathNoBacksteps(s.Path, srcPath.Child("path"))...)
		}
	case *corev1.CSIPersistentVolumeSource:
		allErrs = append(allErrs, validateCSIPersistentVolumeSource(s, srcPath)...)
	default:
		allErrs = append(allErrs, validateLegacyPluginSource(value, srcPath)...)
	}
	return allErrs
}

func validateCSIPersistentVolumeSource(csi *corev1.CSIPersistentVolumeSource, fldPath *field.Path) field.ErrorList {
	allErrs := validateCSIDriverName(csi.Driver, fldPath.Child("driver"))
	allErrs = append(allErrs, requireString(csi.VolumeHandle, fldPath.Child("volumeHandle"))...)
	refs := []struct {
		name string
		ref  *corev1.SecretReference
	}{
		{"controllerPublishSecretRef", csi.ControllerPublishSecretRef},
		{"controllerExpandSecretRef", csi.ControllerExpandSecretRef},
		{"nodePublishSecretRef", csi.NodePublishSecretRef},
		{"nodeStageSecretRef", csi.NodeStageSecretRef},
		{"nodeExpandSecretRef", csi.NodeExpandSecretRef},
	}
	for _, r := range refs {
		if r.ref != nil {
			allErrs = append(allErrs, validatePVSecretReference(r.ref, fldPath.Child(r.name))...)
		}
	}
	return allErrs
}

// validatePVSecretReference checks a reference to a secret in another
// namespace: PVs are cluster scoped, so both parts are needed.
func validatePVSecretReference(ref *corev1.SecretReference, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if ref.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	} else {
		allErrs = append(allErrs, validateDNS1123Subdomain(ref.Name, fldPath.Child("name"))...)
	}
	if ref.Namespace == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("namespace"), ""))
	} else {
		allErrs = append(allErrs, validateDNS1123Label(ref.Namespace, fldPath.Child("namespace"))...)
	}
	return allErrs
}

func requireString(value string, fldPath *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return nil
}
