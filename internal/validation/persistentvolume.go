package validation

import (
	"path"
	"reflect"
	"slices"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The values the volume and claim enums accept.
var (
	volumeAccessModes     = sets.New(corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod)
	volumeReclaimPolicies = sets.New(corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRecycle, corev1.PersistentVolumeReclaimRetain)
	volumeModes           = sets.New(corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem)
)

// volumeSpecRule checks one aspect of a persistent volume's spec; fldPath is the spec's.
type volumeSpecRule func(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList

// persistentVolumeSpecRules are the rules of a persistent volume's spec, in the order they
// report.
var persistentVolumeSpecRules = []volumeSpecRule{
	func(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
		return validateAccessModes(spec.AccessModes, fldPath.Child("accessModes"))
	},
	volumeOffersStorage,
	volumeReclaimPolicy,
	volumeNodeAffinity,
	func(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
		return validatePersistentVolumeSource(&spec.PersistentVolumeSource, fldPath)
	},
	localVolumeOnItsNode,
	hostRootNeverRecycled,
	func(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
		if spec.StorageClassName == "" {
			return nil
		}
		return nameErrors(apivalidation.NameIsDNSSubdomain, spec.StorageClassName, fldPath.Child("storageClassName"))
	},
	func(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
		if spec.VolumeMode == nil {
			return nil
		}
		return oneOf(fldPath.Child("volumeMode"), *spec.VolumeMode, sets.List(volumeModes)...)
	},
	volumeAttributesClassOfCSI,
}

// ValidatePersistentVolume validates a persistent volume on create.
func ValidatePersistentVolume(pv *corev1.PersistentVolume) field.ErrorList {
	allErrs := validateObjectMeta(&pv.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(allErrs, validatePersistentVolumeSpec(&pv.Spec, field.NewPath("spec"))...)
}

func validatePersistentVolumeSpec(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
	return checkSpecRules(persistentVolumeSpecRules, spec, fldPath)
}

// checkSpecRules applies a type's spec rules in order and gathers what they report.
func checkSpecRules[S any, R ~func(S, *field.Path) field.ErrorList](rules []R, spec S, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, rule := range rules {
		allErrs = append(allErrs, rule(spec, fldPath)...)
	}
	return allErrs
}

// volumeOffersStorage: a volume's capacity is a positive amount of storage and nothing else.
func volumeOffersStorage(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
	capPath := fldPath.Child("capacity")
	var allErrs field.ErrorList
	_, hasStorage := spec.Capacity[corev1.ResourceStorage]
	switch {
	case len(spec.Capacity) == 0:
		allErrs = field.ErrorList{field.Required(capPath, ""), field.NotSupported(capPath, spec.Capacity, []corev1.ResourceName{corev1.ResourceStorage})}
	case !hasStorage || len(spec.Capacity) > 1:
		allErrs = field.ErrorList{field.NotSupported(capPath, spec.Capacity, []corev1.ResourceName{corev1.ResourceStorage})}
	}
	for name, amount := range spec.Capacity {
		allErrs = append(allErrs, validatePositiveQuantity(amount, capPath.Key(string(name)))...)
	}
	return allErrs
}

func volumeReclaimPolicy(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
	if spec.PersistentVolumeReclaimPolicy == "" {
		return nil
	}
	return oneOf(fldPath.Child("persistentVolumeReclaimPolicy"), spec.PersistentVolumeReclaimPolicy, sets.List(volumeReclaimPolicies)...)
}

// volumeNodeAffinity: node affinity, when given, states which nodes are required.
func volumeNodeAffinity(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
	if spec.NodeAffinity == nil {
		return nil
	}
	requiredPath := fldPath.Child("nodeAffinity", "required")
	if spec.NodeAffinity.Required == nil {
		return field.ErrorList{field.Required(requiredPath, "must specify required node constraints")}
	}
	return validateNodeSelector(spec.NodeAffinity.Required, requiredPath)
}

// localVolumeOnItsNode: a local volume exists on one node, which its node affinity names.
func localVolumeOnItsNode(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
	if spec.Local == nil || spec.NodeAffinity != nil {
		return nil
	}
	return field.ErrorList{field.Required(fldPath.Child("nodeAffinity"), "Local volume requires node affinity")}
}

// hostRootNeverRecycled: recycling scrubs the volume, which for the host's root is fatal.
func hostRootNeverRecycled(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
	recycled := spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRecycle
	if !recycled || spec.HostPath == nil || path.Clean(spec.HostPath.Path) != "/" {
		return nil
	}
	return field.ErrorList{field.Forbidden(fldPath.Child("persistentVolumeReclaimPolicy"), "may not be 'recycle' for a hostPath mount of '/'")}
}

// volumeAttributesClassOfCSI: a volume attributes class is a CSI driver's, so only CSI volumes
// name one.
func volumeAttributesClassOfCSI(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
	if spec.VolumeAttributesClassName == nil {
		return nil
	}
	allErrs := validateRequiredClassName(*spec.VolumeAttributesClassName, fldPath.Child("volumeAttributesClassName"))
	if spec.CSI == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("csi"), "has to be specified when using volumeAttributesClassName"))
	}
	return allErrs
}

// validateRequiredClassName checks a class name that, once the field is set, may not be empty.
func validateRequiredClassName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "an empty string is disallowed")}
	}
	return nameErrors(apivalidation.NameIsDNSSubdomain, name, fldPath)
}

// validateAccessModes requires at least one known mode; ReadWriteOncePod is exclusive by
// definition and cannot be combined with the others.
func validateAccessModes(modes []corev1.PersistentVolumeAccessMode, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(modes) == 0 {
		allErrs = append(allErrs, field.Required(fldPath, "at least 1 access mode is required"))
	}
	for _, mode := range modes {
		allErrs = append(allErrs, oneOf(fldPath, mode, sets.List(volumeAccessModes)...)...)
	}
	known := slices.DeleteFunc(slices.Clone(modes), func(m corev1.PersistentVolumeAccessMode) bool { return !volumeAccessModes.Has(m) })
	exclusive := slices.Contains(known, corev1.ReadWriteOncePod)
	shared := slices.ContainsFunc(known, func(m corev1.PersistentVolumeAccessMode) bool { return m != corev1.ReadWriteOncePod })
	if exclusive && shared {
		allErrs = append(allErrs, field.Forbidden(fldPath, "may not use ReadWriteOncePod with other access modes"))
	}
	return allErrs
}

// validatePersistentVolumeSource requires exactly one source, counted over every pointer field
// of PersistentVolumeSource so new sources are covered, and checks the one given.
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
		allErrs = append(allErrs, requiredThen(s.Path, srcPath.Child("path"), validatePathNoBacksteps)...)
	case *corev1.CSIPersistentVolumeSource:
		allErrs = append(allErrs, validateCSIPersistentVolumeSource(s, srcPath)...)
	default:
		allErrs = append(allErrs, validateLegacyPluginSource(value, srcPath)...)
	}
	return allErrs
}

// csiVolumeSecrets are the secret references of a CSI volume, by field name: one per
// operation the driver may need credentials for.
var csiVolumeSecrets = []struct {
	field string
	ref   func(*corev1.CSIPersistentVolumeSource) *corev1.SecretReference
}{
	{"controllerPublishSecretRef", func(s *corev1.CSIPersistentVolumeSource) *corev1.SecretReference { return s.ControllerPublishSecretRef }},
	{"controllerExpandSecretRef", func(s *corev1.CSIPersistentVolumeSource) *corev1.SecretReference { return s.ControllerExpandSecretRef }},
	{"nodePublishSecretRef", func(s *corev1.CSIPersistentVolumeSource) *corev1.SecretReference { return s.NodePublishSecretRef }},
	{"nodeStageSecretRef", func(s *corev1.CSIPersistentVolumeSource) *corev1.SecretReference { return s.NodeStageSecretRef }},
	{"nodeExpandSecretRef", func(s *corev1.CSIPersistentVolumeSource) *corev1.SecretReference { return s.NodeExpandSecretRef }},
}

func validateCSIPersistentVolumeSource(csi *corev1.CSIPersistentVolumeSource, fldPath *field.Path) field.ErrorList {
	allErrs := validateCSIDriverName(csi.Driver, fldPath.Child("driver"))
	allErrs = append(allErrs, requireString(csi.VolumeHandle, fldPath.Child("volumeHandle"))...)
	for _, secret := range csiVolumeSecrets {
		if ref := secret.ref(csi); ref != nil {
			allErrs = append(allErrs, validateVolumeSecretReference(ref, fldPath.Child(secret.field))...)
		}
	}
	return allErrs
}

// validateVolumeSecretReference checks a reference from a cluster-scoped volume to a secret,
// which must therefore name both the secret and its namespace.
func validateVolumeSecretReference(ref *corev1.SecretReference, fldPath *field.Path) field.ErrorList {
	allErrs := requiredThen(ref.Name, fldPath.Child("name"), validateDNS1123Subdomain)
	return append(allErrs, requiredThen(ref.Namespace, fldPath.Child("namespace"), validateDNS1123Label)...)
}

// requiredThen requires a value and checks the value given.
func requiredThen(value string, fldPath *field.Path, check func(string, *field.Path) field.ErrorList) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return check(value, fldPath)
}

func requireString(value string, fldPath *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return nil
}

// volumeUpdateRule checks one change between a persistent volume's old and new spec.
type volumeUpdateRule func(newSpec, oldSpec *corev1.PersistentVolumeSpec) field.ErrorList

// persistentVolumeUpdateRules: what a volume is (its source, mode and node affinity) is fixed
// once created; binding, capacity, class and reclaim policy may change.
var persistentVolumeUpdateRules = []volumeUpdateRule{
	volumeSourceFixed,
	func(newSpec, oldSpec *corev1.PersistentVolumeSpec) field.ErrorList {
		return apivalidation.ValidateImmutableField(newSpec.VolumeMode, oldSpec.VolumeMode, field.NewPath("spec", "volumeMode"))
	},
	func(newSpec, oldSpec *corev1.PersistentVolumeSpec) field.ErrorList {
		// A volume created without node affinity may be given one.
		if oldSpec.NodeAffinity == nil {
			return nil
		}
		return apivalidation.ValidateImmutableField(newSpec.NodeAffinity, oldSpec.NodeAffinity, field.NewPath("spec", "nodeAffinity"))
	},
	func(newSpec, oldSpec *corev1.PersistentVolumeSpec) field.ErrorList {
		if oldSpec.VolumeAttributesClassName == nil || newSpec.VolumeAttributesClassName != nil {
			return nil
		}
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "volumeAttributesClassName"), "update from non-nil value to nil is forbidden")}
	},
}

// ValidatePersistentVolumeUpdate validates an update of a persistent volume.
func ValidatePersistentVolumeUpdate(newPV, oldPV *corev1.PersistentVolume) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&newPV.ObjectMeta, &oldPV.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validatePersistentVolumeSpec(&newPV.Spec, field.NewPath("spec"))...)
	for _, rule := range persistentVolumeUpdateRules {
		allErrs = append(allErrs, rule(&newPV.Spec, &oldPV.Spec)...)
	}
	return allErrs
}

// volumeSourceFixed: the source is fixed, except that a CSI volume may gain a controller expand
// secret, which is how volumes created before expansion existed become expandable.
func volumeSourceFixed(newSpec, oldSpec *corev1.PersistentVolumeSpec) field.ErrorList {
	source := newSpec.PersistentVolumeSource
	gainsExpandSecret := oldSpec.CSI != nil && oldSpec.CSI.ControllerExpandSecretRef == nil &&
		source.CSI != nil && source.CSI.ControllerExpandSecretRef != nil
	if gainsExpandSecret {
		csi := *source.CSI
		csi.ControllerExpandSecretRef = nil
		source.CSI = &csi
	}
	if apiequality.Semantic.DeepEqual(source, oldSpec.PersistentVolumeSource) {
		return nil
	}
	diff := cmp.Diff(oldSpec.PersistentVolumeSource, source)
	return field.ErrorList{field.Forbidden(field.NewPath("spec", "persistentvolumesource"), "spec.persistentvolumesource is immutable after creation\n"+diff)}
}

// ValidatePersistentVolumeStatusUpdate validates a write to the status subresource; status
// itself is owned by the PV controller and unchecked.
func ValidatePersistentVolumeStatusUpdate(newPV, oldPV *corev1.PersistentVolume) field.ErrorList {
	return validateObjectMetaUpdate(&newPV.ObjectMeta, &oldPV.ObjectMeta, field.NewPath("metadata"))
}
