package validation

import (
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// claimResizeStatuses are the states the resizers report for a claim's resources.
var claimResizeStatuses = sets.New(
	corev1.PersistentVolumeClaimControllerResizeInProgress,
	corev1.PersistentVolumeClaimControllerResizeInfeasible,
	corev1.PersistentVolumeClaimNodeResizePending,
	corev1.PersistentVolumeClaimNodeResizeInProgress,
	corev1.PersistentVolumeClaimNodeResizeInfeasible,
)

// claimSpecRule checks one aspect of a claim's spec; fldPath is the spec's.
type claimSpecRule func(spec *corev1.PersistentVolumeClaimSpec, fldPath *field.Path) field.ErrorList

// persistentVolumeClaimSpecRules are the rules of a claim's spec, in the order they report.
var persistentVolumeClaimSpecRules = []claimSpecRule{
	func(spec *corev1.PersistentVolumeClaimSpec, fldPath *field.Path) field.ErrorList {
		return validateAccessModes(spec.AccessModes, fldPath.Child("accessModes"))
	},
	func(spec *corev1.PersistentVolumeClaimSpec, fldPath *field.Path) field.ErrorList {
		if spec.Selector == nil {
			return nil
		}
		return validateLabelSelector(spec.Selector, fldPath.Child("selector"))
	},
	claimRequestsStorage,
	func(spec *corev1.PersistentVolumeClaimSpec, fldPath *field.Path) field.ErrorList {
		return optionalClassName(spec.StorageClassName, fldPath.Child("storageClassName"))
	},
	func(spec *corev1.PersistentVolumeClaimSpec, fldPath *field.Path) field.ErrorList {
		if spec.VolumeMode == nil {
			return nil
		}
		return oneOf(fldPath.Child("volumeMode"), *spec.VolumeMode, sets.List(volumeModes)...)
	},
	claimDataSources,
	func(spec *corev1.PersistentVolumeClaimSpec, fldPath *field.Path) field.ErrorList {
		return optionalClassName(spec.VolumeAttributesClassName, fldPath.Child("volumeAttributesClassName"))
	},
}

// ValidatePersistentVolumeClaim validates a claim on create.
func ValidatePersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) field.ErrorList {
	allErrs := validateObjectMeta(&pvc.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(allErrs, validatePersistentVolumeClaimSpec(&pvc.Spec, field.NewPath("spec"))...)
}

func validatePersistentVolumeClaimSpec(spec *corev1.PersistentVolumeClaimSpec, fldPath *field.Path) field.ErrorList {
	return checkSpecRules(persistentVolumeClaimSpecRules, spec, fldPath)
}

// claimRequestsStorage: a claim asks for a positive amount of storage.
func claimRequestsStorage(spec *corev1.PersistentVolumeClaimSpec, fldPath *field.Path) field.ErrorList {
	storagePath := fldPath.Child("resources", "requests").Key(string(corev1.ResourceStorage))
	amount, requested := spec.Resources.Requests[corev1.ResourceStorage]
	if !requested {
		return field.ErrorList{field.Required(storagePath, "")}
	}
	return validatePositiveQuantity(amount, storagePath)
}

// optionalClassName checks a class name where nil and empty both mean none.
func optionalClassName(name *string, fldPath *field.Path) field.ErrorList {
	if ptr.Deref(name, "") == "" {
		return nil
	}
	return nameErrors(apivalidation.NameIsDNSSubdomain, *name, fldPath)
}

// claimDataSources: dataSource is the legacy spelling of dataSourceRef. When both are given
// they must agree, and cross-namespace sources exist only in the new field.
func claimDataSources(spec *corev1.PersistentVolumeClaimSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	legacy, ref := spec.DataSource, spec.DataSourceRef
	if legacy != nil {
		allErrs = validateDataSource(legacy.APIGroup, legacy.Kind, legacy.Name, fldPath.Child("dataSource"))
	}
	if ref == nil {
		return allErrs
	}
	refPath := fldPath.Child("dataSourceRef")
	allErrs = append(allErrs, validateDataSource(ref.APIGroup, ref.Kind, ref.Name, refPath)...)
	otherNamespace := ptr.Deref(ref.Namespace, "") != ""
	if otherNamespace {
		allErrs = append(allErrs, nameErrors(apivalidation.ValidateNamespaceName, *ref.Namespace, refPath.Child("namespace"))...)
	}
	switch {
	case legacy == nil:
	case otherNamespace:
		allErrs = append(allErrs, field.Invalid(fldPath, fldPath.Child("dataSource"), "may not be specified when dataSourceRef.namespace is specified"))
	case !ptr.Equal(legacy.APIGroup, ref.APIGroup) || legacy.Kind != ref.Kind || legacy.Name != ref.Name:
		allErrs = append(allErrs, field.Invalid(fldPath, fldPath.Child("dataSource"), "must match dataSourceRef"))
	}
	return allErrs
}

// validateDataSource checks what a claim is populated from: a named object of a kind, which
// in the core group can only be another claim.
func validateDataSource(apiGroup *string, kind, name string, fldPath *field.Path) field.ErrorList {
	allErrs := requireString(name, fldPath.Child("name"))
	allErrs = append(allErrs, requireString(kind, fldPath.Child("kind"))...)
	if group := ptr.Deref(apiGroup, ""); group != "" {
		return append(allErrs, validateDNS1123Subdomain(group, fldPath.Child("apiGroup"))...)
	}
	if kind != "PersistentVolumeClaim" {
		allErrs = append(allErrs, field.Invalid(fldPath, kind, "must be 'PersistentVolumeClaim' when referencing the default apiGroup"))
	}
	return allErrs
}

// claimUpdateRule checks one change between a claim's old and new version.
type claimUpdateRule func(newPVC, oldPVC *corev1.PersistentVolumeClaim) field.ErrorList

// persistentVolumeClaimUpdateRules are the rules of a claim update, in the order they report.
var persistentVolumeClaimUpdateRules = []claimUpdateRule{
	claimClassAnnotationFixed,
	claimSpecFixed,
	claimNotBelowCapacity,
	func(newPVC, oldPVC *corev1.PersistentVolumeClaim) field.ErrorList {
		return apivalidation.ValidateImmutableField(newPVC.Spec.VolumeMode, oldPVC.Spec.VolumeMode, field.NewPath("spec", "volumeMode"))
	},
	claimKeepsAttributesClass,
}

// ValidatePersistentVolumeClaimUpdate validates an update of a claim.
func ValidatePersistentVolumeClaimUpdate(newPVC, oldPVC *corev1.PersistentVolumeClaim) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&newPVC.ObjectMeta, &oldPVC.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, ValidatePersistentVolumeClaim(newPVC)...)
	for _, rule := range persistentVolumeClaimUpdateRules {
		allErrs = append(allErrs, rule(newPVC, oldPVC)...)
	}
	return allErrs
}

// claimSpecFixed: claims are immutable, so that quota and limit ranges cannot be gamed, except
// for what binding and expansion need. Each allowed change is undone on a copy of the new spec;
// what remains must equal the old spec.
func claimSpecFixed(newPVC, oldPVC *corev1.PersistentVolumeClaim) field.ErrorList {
	spec := newPVC.Spec.DeepCopy()
	for _, undo := range allowedClaimSpecChanges {
		undo(spec, newPVC, oldPVC)
	}
	if apiequality.Semantic.DeepEqual(*spec, oldPVC.Spec) {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec"),
		"spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n"+cmp.Diff(oldPVC.Spec, *spec))}
}

// allowedClaimSpecChanges each undo, on a copy of the new spec, one change an update may make.
var allowedClaimSpecChanges = []func(spec *corev1.PersistentVolumeClaimSpec, newPVC, oldPVC *corev1.PersistentVolumeClaim){
	// Binding sets volumeName, once.
	func(spec *corev1.PersistentVolumeClaimSpec, _, oldPVC *corev1.PersistentVolumeClaim) {
		if oldPVC.Spec.VolumeName == "" {
			spec.VolumeName = ""
		}
	},
	func(spec *corev1.PersistentVolumeClaimSpec, newPVC, oldPVC *corev1.PersistentVolumeClaim) {
		if claimClassFilledIn(newPVC, oldPVC) {
			spec.StorageClassName = nil
		}
	},
	// A bound claim may be resized (its storage request) and change its volume attributes
	// class.
	func(spec *corev1.PersistentVolumeClaimSpec, newPVC, oldPVC *corev1.PersistentVolumeClaim) {
		if newPVC.Status.Phase != corev1.ClaimBound {
			return
		}
		if spec.Resources.Requests != nil {
			if before, ok := oldPVC.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
				spec.Resources.Requests[corev1.ResourceStorage] = before
			} else {
				delete(spec.Resources.Requests, corev1.ResourceStorage)
			}
		}
		if spec.VolumeAttributesClassName != nil {
			spec.VolumeAttributesClassName = oldPVC.Spec.VolumeAttributesClassName
		}
	},
}

// claimClassFilledIn: a claim without a storage class may be given one, provided it agrees
// with the legacy beta annotation if the claim has that.
func claimClassFilledIn(newPVC, oldPVC *corev1.PersistentVolumeClaim) bool {
	if oldPVC.Spec.StorageClassName != nil || newPVC.Spec.StorageClassName == nil {
		return false
	}
	annotated, ok := oldPVC.Annotations[corev1.BetaStorageClassAnnotation]
	return !ok || *newPVC.Spec.StorageClassName == annotated
}

// claimClassAnnotationFixed: the legacy beta storage class annotation is fixed, except that
// it may be dropped when its class moves into the field.
func claimClassAnnotationFixed(newPVC, oldPVC *corev1.PersistentVolumeClaim) field.ErrorList {
	newClass, kept := newPVC.Annotations[corev1.BetaStorageClassAnnotation]
	oldClass, had := oldPVC.Annotations[corev1.BetaStorageClassAnnotation]
	if newClass == oldClass {
		return nil
	}
	if movedToField := had && !kept && claimClassFilledIn(newPVC, oldPVC); movedToField {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("metadata", "annotations").Key(corev1.BetaStorageClassAnnotation), newClass, apivalidation.FieldImmutableErrorMsg)}
}

// claimNotBelowCapacity: a request may shrink only as a way back from a failed expansion,
// never to or below what the volume really has.
func claimNotBelowCapacity(newPVC, oldPVC *corev1.PersistentVolumeClaim) field.ErrorList {
	requested := newPVC.Spec.Resources.Requests[corev1.ResourceStorage]
	before := oldPVC.Spec.Resources.Requests[corev1.ResourceStorage]
	capacity := oldPVC.Status.Capacity[corev1.ResourceStorage]
	if requested.Cmp(before) >= 0 || requested.Cmp(capacity) > 0 {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than status.capacity")}
}

// claimKeepsAttributesClass: once set, a volume attributes class may change but not go away.
func claimKeepsAttributesClass(newPVC, oldPVC *corev1.PersistentVolumeClaim) field.ErrorList {
	if oldPVC.Spec.VolumeAttributesClassName == nil {
		return nil
	}
	vacPath := field.NewPath("spec", "volumeAttributesClassName")
	switch name := newPVC.Spec.VolumeAttributesClassName; {
	case name == nil:
		return field.ErrorList{field.Forbidden(vacPath, "update from non-nil value to nil is forbidden")}
	case *name == "":
		return field.ErrorList{field.Forbidden(vacPath, "update from non-nil value to an empty string is forbidden")}
	}
	return nil
}

// ValidatePersistentVolumeClaimStatusUpdate validates a write to the status subresource,
// made by the PV controller and the resizers.
func ValidatePersistentVolumeClaimStatusUpdate(newPVC, oldPVC *corev1.PersistentVolumeClaim) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&newPVC.ObjectMeta, &oldPVC.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, requiredAccessModes(newPVC.Spec.AccessModes)...)
	status := &newPVC.Status
	capacityPath := field.NewPath("status", "capacity")
	for name, amount := range status.Capacity {
		allErrs = append(allErrs, validateNonnegativeQuantity(amount, capacityPath.Key(string(name)))...)
	}
	statusesPath := field.NewPath("status", "allocatedResourceStatuses")
	for name, resizeStatus := range status.AllocatedResourceStatuses {
		allErrs = append(allErrs, validateClaimResourceKey(name, statusesPath)...)
		allErrs = append(allErrs, oneOf(statusesPath.Key(string(name)), resizeStatus, sets.List(claimResizeStatuses)...)...)
	}
	allocatedPath := field.NewPath("status", "allocatedResources")
	for name, amount := range status.AllocatedResources {
		if errs := validateClaimResourceKey(name, allocatedPath); errs != nil {
			allErrs = append(allErrs, errs...)
			continue
		}
		allErrs = append(allErrs, validateResourceQuantityValue(corev1.ResourceStorage, amount, allocatedPath.Key(string(name)))...)
	}
	return allErrs
}

// requiredAccessModes: status writers see the spec too, and a claim never loses its modes.
func requiredAccessModes(modes []corev1.PersistentVolumeAccessMode) field.ErrorList {
	if len(modes) > 0 {
		return nil
	}
	return field.ErrorList{field.Required(field.NewPath("spec", "accessModes"), "")}
}

// validateClaimResourceKey allows storage as the only native resource of a claim; other keys
// must be domain-qualified.
func validateClaimResourceKey(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	if errs := validateQualifiedName(string(name), fldPath); len(errs) > 0 {
		return errs
	}
	if isNativeResource(name) && name != corev1.ResourceStorage {
		return field.ErrorList{field.NotSupported(fldPath, name, []corev1.ResourceName{corev1.ResourceStorage})}
	}
	return nil
}

// validateClaimTemplateMeta checks the metadata of an ephemeral volume's claim template: only
// labels and annotations are copied to the claim, so nothing else may be set.
func validateClaimTemplateMeta(meta *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	allErrs := apivalidation.ValidateAnnotations(meta.Annotations, fldPath.Child("annotations"))
	allErrs = append(allErrs, validateLabels(meta.Labels, fldPath.Child("labels"))...)
	rest := meta.DeepCopy()
	rest.Labels, rest.Annotations = nil, nil
	return append(allErrs, forbidSetFields(*rest, nil, "cannot be set", fldPath)...)
}
