package validation

import (
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	// Attachment metadata is handed to the kubelet on every mount, and errors are logged and
	// shown to users: both stay small.
	maxAttachmentMetadataSize = 256 * 1024
	maxVolumeErrorMessageSize = 1024
	// maxCSINodeIDLength is upstream's longer limit, which its strategy has always enabled since
	// storage systems with long node IDs (cloud instance ARNs) appeared.
	maxCSINodeIDLength = 256
)

// ValidateVolumeAttachment validates a VolumeAttachment on create. The attacher must be a CSI
// driver name and the source exactly one of a persistent volume name or an inline (CSI
// migration) volume spec.
func ValidateVolumeAttachment(va *storagev1.VolumeAttachment) field.ErrorList {
	allErrs := validateObjectMeta(&va.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	allErrs = append(allErrs, validateVolumeAttachmentSpec(&va.Spec, field.NewPath("spec"))...)
	return append(allErrs, validateVolumeAttachmentStatus(&va.Status, field.NewPath("status"))...)
}

// ValidateVolumeAttachmentUpdate validates an update of a VolumeAttachment. The spec is the
// attach request itself and never changes; only metadata and status do.
func ValidateVolumeAttachmentUpdate(newVA, oldVA *storagev1.VolumeAttachment) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&newVA.ObjectMeta, &oldVA.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateVolumeAttachmentStatus(&newVA.Status, field.NewPath("status"))...)
	if !apiequality.Semantic.DeepEqual(newVA.Spec, oldVA.Spec) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec"), newVA.Spec, apivalidation.FieldImmutableErrorMsg))
	}
	return allErrs
}

// ValidateVolumeAttachmentStatusUpdate validates a write to the status subresource; upstream
// applies the same rules as to updates.
func ValidateVolumeAttachmentStatusUpdate(newVA, oldVA *storagev1.VolumeAttachment) field.ErrorList {
	return ValidateVolumeAttachmentUpdate(newVA, oldVA)
}

func validateVolumeAttachmentSpec(spec *storagev1.VolumeAttachmentSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateCSIDriverName(spec.Attacher, fldPath.Child("attacher"))
	allErrs = append(allErrs, validateVolumeAttachmentSource(&spec.Source, fldPath.Child("source"))...)
	return append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, spec.NodeName, fldPath.Child("nodeName"))...)
}

func validateVolumeAttachmentSource(src *storagev1.VolumeAttachmentSource, fldPath *field.Path) field.ErrorList {
	const exactlyOne = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"
	switch {
	case src.PersistentVolumeName == nil && src.InlineVolumeSpec == nil:
		return field.ErrorList{field.Required(fldPath, exactlyOne)}
	case src.PersistentVolumeName != nil && src.InlineVolumeSpec != nil:
		return field.ErrorList{field.Forbidden(fldPath, exactlyOne)}
	case src.PersistentVolumeName != nil:
		pvPath := fldPath.Child("persistentVolumeName")
		if *src.PersistentVolumeName == "" {
			return field.ErrorList{field.Required(pvPath, "must specify non empty persistentVolumeName")}
		}
		return nameErrors(apivalidation.NameIsDNSSubdomain, *src.PersistentVolumeName, pvPath)
	default:
		return validateInlineVolumeSpec(src.InlineVolumeSpec, fldPath.Child("inlineVolumeSpec"))
	}
}

// inlineVolumeSpecRules check the persistent volume spec that CSI migration translates from a
// pod's inline volume, in the order they report. The spec describes only how to reach a CSI
// volume: what a real PersistentVolume has for binding, scheduling and reclaiming is
// meaningless here.
var inlineVolumeSpecRules = []volumeSpecRule{
	inlineVolumeUnset("claimRef", func(s *corev1.PersistentVolumeSpec) bool { return s.ClaimRef != nil }),
	inlineVolumeUnset("capacity", func(s *corev1.PersistentVolumeSpec) bool { return len(s.Capacity) != 0 }),
	func(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
		if spec.CSI != nil {
			return nil
		}
		return field.ErrorList{field.Required(fldPath.Child("csi"), "has to be specified in the context of inline volumes")}
	},
	func(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
		return validateAccessModes(spec.AccessModes, fldPath.Child("accessModes"))
	},
	func(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
		if p := spec.PersistentVolumeReclaimPolicy; p == "" || p == corev1.PersistentVolumeReclaimRetain {
			return nil
		}
		return field.ErrorList{field.Forbidden(fldPath.Child("persistentVolumeReclaimPolicy"), "may only be Retain in the context of inline volumes")}
	},
	inlineVolumeUnset("nodeAffinity", func(s *corev1.PersistentVolumeSpec) bool { return s.NodeAffinity != nil }),
	func(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
		return validatePersistentVolumeSource(&spec.PersistentVolumeSource, fldPath)
	},
	inlineVolumeUnset("storageClassName", func(s *corev1.PersistentVolumeSpec) bool { return s.StorageClassName != "" }),
	func(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
		if spec.VolumeMode == nil || *spec.VolumeMode == corev1.PersistentVolumeFilesystem {
			return nil
		}
		return field.ErrorList{field.Forbidden(fldPath.Child("volumeMode"), "may not specify volumeMode other than Filesystem in the context of inline volumes")}
	},
	func(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
		if spec.VolumeAttributesClassName == nil {
			return nil
		}
		return validateRequiredClassName(*spec.VolumeAttributesClassName, fldPath.Child("volumeAttributesClassName"))
	},
}

// inlineVolumeUnset forbids a field that only a real PersistentVolume has.
func inlineVolumeUnset(name string, set func(*corev1.PersistentVolumeSpec) bool) volumeSpecRule {
	return func(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
		if !set(spec) {
			return nil
		}
		return field.ErrorList{field.Forbidden(fldPath.Child(name), "may not be specified in the context of inline volumes")}
	}
}

func validateInlineVolumeSpec(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
	return checkSpecRules(inlineVolumeSpecRules, spec, fldPath)
}

func validateVolumeAttachmentStatus(status *storagev1.VolumeAttachmentStatus, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	size := 0
	for k, v := range status.AttachmentMetadata {
		size += len(k) + len(v)
	}
	if size > maxAttachmentMetadataSize {
		allErrs = append(allErrs, field.TooLong(fldPath.Child("attachmentMetadata"), "", maxAttachmentMetadataSize))
	}
	allErrs = append(allErrs, validateVolumeError(status.AttachError, fldPath.Child("attachError"))...)
	return append(allErrs, validateVolumeError(status.DetachError, fldPath.Child("detachError"))...)
}

func validateVolumeError(e *storagev1.VolumeError, fldPath *field.Path) field.ErrorList {
	if e == nil {
		return nil
	}
	var allErrs field.ErrorList
	if len(e.Message) > maxVolumeErrorMessageSize {
		allErrs = append(allErrs, field.TooLong(fldPath.Child("message"), "", maxVolumeErrorMessageSize))
	}
	// errorCode is a gRPC status code, which is never negative.
	if e.ErrorCode != nil && *e.ErrorCode < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("errorCode"), *e.ErrorCode, utilvalidation.InclusiveRangeError(0, math.MaxInt32)))
	}
	return allErrs
}

// ValidateCSINode validates a CSINode on create: its name is a node's, and each driver entry
// names a distinct CSI driver with the node's ID in that driver and the topology keys it reports.
func ValidateCSINode(n *storagev1.CSINode) field.ErrorList {
	allErrs := validateObjectMeta(&n.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(allErrs, validateCSINodeDrivers(n.Spec.Drivers, field.NewPath("spec", "drivers"))...)
}

// ValidateCSINodeUpdate validates an update of a CSINode. Drivers may be added and removed as
// they register and unregister on the node, but a registered driver's identity (nodeID,
// topology keys) is fixed until it is removed; only its allocatable volume count may change,
// because drivers report attach capacity that shifts at run time (as upstream with
// MutableCSINodeAllocatableCount, on by default).
func ValidateCSINodeUpdate(newN, oldN *storagev1.CSINode) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&newN.ObjectMeta, &oldN.ObjectMeta, field.NewPath("metadata"))
	driversPath := field.NewPath("spec", "drivers")
	allErrs = append(allErrs, validateCSINodeDrivers(newN.Spec.Drivers, driversPath)...)
	for _, oldD := range oldN.Spec.Drivers {
		for _, newD := range newN.Spec.Drivers {
			if newD.Name != oldD.Name {
				continue
			}
			newD.Allocatable, oldD.Allocatable = nil, nil
			// As upstream, the error names the list rather than the entry.
			allErrs = append(allErrs, apivalidation.ValidateImmutableField(newD, oldD, driversPath)...)
		}
	}
	return allErrs
}

func validateCSINodeDrivers(drivers []storagev1.CSINodeDriver, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, d := range drivers {
		allErrs = append(allErrs, validateCSINodeDriver(&d, fldPath.Index(i))...)
		if seen.Has(d.Name) {
			allErrs = append(allErrs, field.Duplicate(fldPath.Index(i).Child("name"), d.Name))
		}
		seen.Insert(d.Name)
	}
	return allErrs
}

// validateCSINodeDriver checks one driver entry. Upstream reports topology key errors on the
// driver entry, not the key; the paths here match it so clients see the same errors.
func validateCSINodeDriver(d *storagev1.CSINodeDriver, fldPath *field.Path) field.ErrorList {
	allErrs := validateCSIDriverName(d.Name, fldPath.Child("name"))
	idPath := fldPath.Child("nodeID")
	if d.NodeID == "" {
		allErrs = append(allErrs, field.Required(idPath, ""))
	} else if len(d.NodeID) > maxCSINodeIDLength {
		allErrs = append(allErrs, field.Invalid(idPath, d.NodeID, fmt.Sprintf("must be %d characters or less", maxCSINodeIDLength)))
	}
	if d.Allocatable != nil && d.Allocatable.Count != nil {
		allErrs = append(allErrs, validateNonnegative(int64(*d.Allocatable.Count), fldPath.Child("allocatable", "count"))...)
	}
	keys := sets.New[string]()
	for _, key := range d.TopologyKeys {
		switch {
		case key == "":
			allErrs = append(allErrs, field.Required(fldPath, "topology keys may not be empty"))
		case keys.Has(key):
			allErrs = append(allErrs, field.Duplicate(fldPath, key))
		default:
			allErrs = append(allErrs, validateQualifiedName(key, fldPath)...)
		}
		keys.Insert(key)
	}
	return allErrs
}
