package validation

import (
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedClaimResourceStatuses = sets.New(
	corev1.PersistentVolumeClaimControllerResizeInProgress,
	corev1.PersistentVolumeClaimControllerResizeInfeasible,
	corev1.PersistentVolumeClaimNodeResizePending,
	corev1.PersistentVolumeClaimNodeResizeInProgress,
	corev1.PersistentVolumeClaimNodeResizeInfeasible,
)

// ValidatePersistentVolumeClaim validates a claim on create.
func ValidatePersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) field.ErrorList {
	allErrs := validateObjectMeta(&pvc.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(allErrs, validatePersistentVolumeClaimSpec(&pvc.Spec, field.NewPath("spec"))...)
}

// ValidatePersistentVolumeClaimUpdate validates an update of a claim. Claims
// are immutable so that quota and limit ranges cannot be gamed, except for
// what binding and expansion need: volumeName is set once, a bound claim may
// grow (or shrink back towards its real capacity after a failed expansion)
// and change its volume attributes class, and a nil storage class may be
// filled in from the legacy beta annotation.
func ValidatePersistentVolumeClaimUpdate(newPVC, oldPVC *corev1.PersistentVolumeClaim) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&newPVC.ObjectMeta, &oldPVC.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, ValidatePersistentVolumeClaim(newPVC)...)

	newSpec := *newPVC.Spec.DeepCopy()
	oldSpec := *oldPVC.Spec.DeepCopy()
	if oldSpec.VolumeName == "" {
		oldSpec.VolumeName = newSpec.VolumeName
	}

	oldClass, oldHasAnnotation := oldPVC.Annotations[corev1.BetaStorageClassAnnotation]
	newClass, newHasAnnotation := newPVC.Annotations[corev1.BetaStorageClassAnnotation]
	switch {
	case oldHasAnnotation && oldSpec.StorageClassName == nil && newSpec.StorageClassName != nil &&
		*newSpec.StorageClassName == oldClass && (!newHasAnnotation || newClass == oldClass):
		// Upgrade from the beta annotation to the field.
		newSpec.StorageClassName = nil
	default:
		if newClass != oldClass {
			allErrs = append(allErrs, field.Invalid(field.NewPath("metadata", "annotations").Key(corev1.BetaStorageClassAnnotation), newClass, apivalidation.FieldImmutableErrorMsg))
		}
		if oldSpec.StorageClassName == nil && newSpec.StorageClassName != nil && (!oldHasAnnotation || *newSpec.StorageClassName == oldClass) {
			newSpec.StorageClassName = nil
		}
	}

	if newPVC.Status.Phase == corev1.ClaimBound {
		if newSpec.Resources.Requests != nil {
			if storage, ok := oldPVC.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
				newSpec.Resources.Requests[corev1.ResourceStorage] = storage
			} else {
				delete(newSpec.Resources.Requests, corev1.ResourceStorage)
			}
		}
		if newSpec.VolumeAttributesClassName != nil {
			newSpec.VolumeAttributesClassName = oldSpec.VolumeAttributesClassName
		}
	}
	if !apiequality.Semantic.DeepEqual(newSpec, oldSpec) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec"),
			"spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n"+cmp.Diff(oldSpec, newSpec)))
	}

	oldSize := oldPVC.Spec.Resources.Requests[corev1.ResourceStorage]
	newSize := newPVC.Spec.Resources.Requests[corev1.ResourceStorage]
	statusSize := oldPVC.Status.Capacity[corev1.ResourceStorage]
	if newSize.Cmp(oldSize) < 0 && newSize.Cmp(statusSize) <= 0 {
		// Shrinking is only a way back from a failed expansion, never below
		// what the volume really has.
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than status.capacity"))
	}

	allErrs = append(allErrs, apivalidation.ValidateImmutableField(newPVC.Spec.VolumeMode, oldPVC.Spec.VolumeMode, field.NewPath("spec", "volumeMode"))...)

	if oldPVC.Spec.VolumeAttributesClassName != nil {
		vacPath := field.NewPath("spec", "volumeAttributesClassName")
		if newPVC.Spec.VolumeAttributesClassName == nil {
			allErrs = append(allErrs, field.Forbidden(vacPath, "update from non-nil value to nil is forbidden"))
		} else if *newPVC.Spec.VolumeAttributesClassName == "" {
			allErrs = append(allErrs, field.Forbidden(vacPath, "update from non-nil value to an empty string is forbidden"))
		}
	}
	return allErrs
}

// ValidatePersistentVolumeClaimStatusUpdate validates a write to the status
// subresource, made by the PV controller and the resizers.
func ValidatePersistentVolumeClaimStatusUpdate(newPVC, oldPVC *corev1.PersistentVolumeClaim) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&newPVC.ObjectMeta, &oldPVC.ObjectMeta, field.NewPath("metadata"))
	if len(newPVC.Spec.AccessModes) == 0 {
		allErrs = append(allErrs, field.Required(field.NewPath("spec", "accessModes"), ""))
	}
	capPath := field.NewPath("status", "capacity")
	for name, q := range newPVC.Status.Capacity {
		allErrs = append(allErrs, validateNonnegativeQuantity(q, capPath.Key(string(name)))...)
	}
	statusPath := field.NewPath("status", "allocatedResourceStatuses")
	for name, status := range newPVC.Status.AllocatedResourceStatuses {
		allErrs = append(allErrs, validateClaimResourceKey(name, statusPath)...)
		if !supportedClaimResourceStatuses.Has(status) {
			allErrs = append(allErrs, field.NotSupported(statusPath.Key(string(name)), status, sets.List(supportedClaimResourceStatuses)))
		}
	}
	allocPath := field.NewPath("status", "allocatedResources")
	for name, q := range newPVC.Status.AllocatedResources {
		if errs := validateClaimResourceKey(name, allocPath); len(errs) > 0 {
			allErrs = append(allErrs, errs...)
			continue
		}
		allErrs = append(allErrs, validateResourceQuantityValue(corev1.ResourceStorage, q, allocPath.Key(string(name)))...)
	}
	return allErrs
}

// validateClaimResourceKey allows storage as the only native resource of a
// claim; other keys must be domain-qualified.
func validateClaimResourceKey(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	if errs := validateQualifiedName(string(name), fldPath); len(errs) > 0 {
		return errs
	}
	if isNativeResource(name) && name != corev1.ResourceStorage {
		return field.ErrorList{field.NotSupported(fldPath, name, []corev1.ResourceName{corev1.ResourceStorage})}
	}
	return nil
}

func validatePersistentVolumeClaimSpec(spec *corev1.PersistentVolumeClaimSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateAccessModes(spec.AccessModes, fldPath.Child("accessModes"))
	if spec.Selector != nil {
		allErrs = append(allErrs, validateLabelSelector(spec.Selector, fldPath.Child("selector"))...)
	}

	storagePath := fldPath.Child("resources", "requests").Key(string(corev1.ResourceStorage))
	if storage, ok := spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		allErrs = append(allErrs, field.Required(storagePath, ""))
	} else {
		allErrs = append(allErrs, validatePositiveQuantity(storage, storagePath)...)
	}

	if spec.StorageClassName != nil && *spec.StorageClassName != "" {
		allErrs = append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, *spec.StorageClassName, fldPath.Child("storageClassName"))...)
	}
	if spec.VolumeMode != nil && !supportedVolumeModes.Has(*spec.VolumeMode) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("volumeMode"), *spec.VolumeMode, sets.List(supportedVolumeModes)))
	}

	if spec.DataSource != nil {
		allErrs = append(allErrs, validateDataSource(spec.DataSource.APIGroup, spec.DataSource.Kind, spec.DataSource.Name, fldPath.Child("dataSource"))...)
	}
	if ref := spec.DataSourceRef; ref != nil {
		refPath := fldPath.Child("dataSourceRef")
		allErrs = append(allErrs, validateDataSource(ref.APIGroup, ref.Kind, ref.Name, refPath)...)
		if ref.Namespace != nil && *ref.Namespace != "" {
			allErrs = append(allErrs, nameErrors(apivalidation.ValidateNamespaceName, *ref.Namespace, refPath.Child("namespace"))...)
		}
	}
	// dataSource is the legacy spelling of dataSourceRef; when both are
	// given they must agree, and cross-namespace sources only exist in the
	// new field.
	if ref := spec.DataSourceRef; ref != nil && ref.Namespace != nil && *ref.Namespace != "" {
		if spec.DataSource != nil {
			allErrs = append(allErrs, field.Invalid(fldPath, fldPath.Child("dataSource"), "may not be specified when dataSourceRef.namespace is specified"))
		}
	} else if spec.DataSource != nil && ref != nil {
		if !apiequality.Semantic.DeepEqual(spec.DataSource.APIGroup, ref.APIGroup) || spec.DataSource.Kind != ref.Kind || spec.DataSource.Name != ref.Name {
			allErrs = append(allErrs, field.Invalid(fldPath, fldPath.Child("dataSource"), "must match dataSourceRef"))
		}
	}

	if spec.VolumeAttributesClassName != nil && *spec.VolumeAttributesClassName != "" {
		allErrs = append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, *spec.VolumeAttributesClassName, fldPath.Child("volumeAttributesClassName"))...)
	}
	return allErrs
}

func validateDataSource(apiGroup *string, kind, name string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	}
	if kind == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("kind"), ""))
	}
	group := ""
	if apiGroup != nil {
		group = *apiGroup
	}
	if group == "" && kind != "PersistentVolumeClaim" {
		allErrs = append(allErrs, field.Invalid(fldPath, kind, "must be 'PersistentVolumeClaim' when referencing the default apiGroup"))
	}
	if group != "" {
		allErrs = append(allErrs, validateDNS1123Subdomain(group, fldPath.Child("apiGroup"))...)
	}
	return allErrs
}

// validateClaimTemplateMeta checks the metadata of an ephemeral volume's
// claim template: only labels and annotations are copied to the claim, so
// nothing else may be set.
func validateClaimTemplateMeta(meta *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	allErrs := apivalidation.ValidateAnnotations(meta.Annotations, fldPath.Child("annotations"))
	allErrs = append(allErrs, validateLabels(meta.Labels, fldPath.Child("labels"))...)
	rest := meta.DeepCopy()
	rest.Labels, rest.Annotations = nil, nil
	allErrs = append(allErrs, forbidSetFields(*rest, nil, "cannot be set", fldPath)...)
	return allErrs
}
