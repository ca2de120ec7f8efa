package validation

import (
	"fmt"
	"path"
	"path/filepath"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	isNegativeErrorMsg    = apivalidation.IsNegativeErrorMsg
	isNotPositiveErrorMsg = "must be greater than zero"
	isNotIntegerErrorMsg  = "must be an integer"
	fileModeErrorMsg      = "must be a number between 0 and 0777 (octal), both inclusive"
	immutableWhenSetMsg   = "field is immutable when `immutable` is set"
)

// maxSecretSize bounds both secrets and configmaps: etcd values and watch
// events have to stay small, so upstream caps their payload at 1 MiB.
const maxSecretSize = 1 * 1024 * 1024

// standardFinalizers are the only finalizer names that may omit a domain
// prefix; anything else must be fully qualified so that owners do not clash.
var standardFinalizers = sets.New(
	string(corev1.FinalizerKubernetes),
	metav1.FinalizerOrphanDependents,
	metav1.FinalizerDeleteDependents,
)

// validateObjectMeta is the core-group flavour of ObjectMeta validation: on
// top of the generic rules it insists that unprefixed finalizers are standard.
func validateObjectMeta(meta *metav1.ObjectMeta, namespaced bool, nameFn apivalidation.ValidateNameFunc, fldPath *field.Path) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(meta, namespaced, nameFn, fldPath)
	return append(allErrs, validateStandardFinalizers(meta.Finalizers, fldPath.Child("finalizers"))...)
}

// validateObjectMetaUpdate checks the immutable parts of metadata (name,
// namespace, uid, creationTimestamp, ...) plus the core finalizer rule.
func validateObjectMetaUpdate(newMeta, oldMeta *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(newMeta, oldMeta, fldPath)
	return append(allErrs, validateStandardFinalizers(newMeta.Finalizers, fldPath.Child("finalizers"))...)
}

func validateStandardFinalizers(finalizers []string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, f := range finalizers {
		allErrs = append(allErrs, validateStandardFinalizerName(f, fldPath.Index(i))...)
	}
	return allErrs
}

func validateStandardFinalizerName(name string, fldPath *field.Path) field.ErrorList {
	if !strings.Contains(name, "/") && !standardFinalizers.Has(name) {
		return field.ErrorList{field.Invalid(fldPath, name, "name is neither a standard finalizer name nor is it fully qualified")}
	}
	return nil
}

// validateFinalizerName applies to finalizers kept in a spec (namespaces):
// they must be qualified names and, when unprefixed, standard ones.
func validateFinalizerName(name string, fldPath *field.Path) field.ErrorList {
	allErrs := apivalidation.ValidateFinalizerName(name, fldPath)
	return append(allErrs, validateStandardFinalizerName(name, fldPath)...)
}

// nameErrors turns the messages of a ValidateNameFunc into Invalid errors.
func nameErrors(nameFn apivalidation.ValidateNameFunc, value string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range nameFn(value, false) {
		allErrs = append(allErrs, field.Invalid(fldPath, value, msg))
	}
	return allErrs
}

func validateDNS1123Label(value string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Label(value) {
		allErrs = append(allErrs, field.Invalid(fldPath, value, msg))
	}
	return allErrs
}

func validateDNS1123Subdomain(value string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Subdomain(value) {
		allErrs = append(allErrs, field.Invalid(fldPath, value, msg))
	}
	return allErrs
}

func validateQualifiedName(value string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsQualifiedName(value) {
		allErrs = append(allErrs, field.Invalid(fldPath, value, msg))
	}
	return allErrs
}

func validateLabelValue(value string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsValidLabelValue(value) {
		allErrs = append(allErrs, field.Invalid(fldPath, value, msg))
	}
	return allErrs
}

func validateNonnegative(value int64, fldPath *field.Path) field.ErrorList {
	return apivalidation.ValidateNonnegativeField(value, fldPath)
}

func validateNonnegativeQuantity(q resource.Quantity, fldPath *field.Path) field.ErrorList {
	if q.Sign() < 0 {
		return field.ErrorList{field.Invalid(fldPath, q.String(), isNegativeErrorMsg)}
	}
	return nil
}

func validatePositiveQuantity(q resource.Quantity, fldPath *field.Path) field.ErrorList {
	if q.Sign() <= 0 {
		return field.ErrorList{field.Invalid(fldPath, q.String(), isNotPositiveErrorMsg)}
	}
	return nil
}

func validateFileMode(mode *int32, fldPath *field.Path) field.ErrorList {
	if mode != nil && (*mode > 0o777 || *mode < 0) {
		return field.ErrorList{field.Invalid(fldPath, *mode, fileModeErrorMsg)}
	}
	return nil
}

// validatePathNoBacksteps rejects ".." elements: such paths would escape the
// directory the kubelet mounts them under.
func validatePathNoBacksteps(target string, fldPath *field.Path) field.ErrorList {
	for _, item := range strings.Split(filepath.ToSlash(target), "/") {
		if item == ".." {
			return field.ErrorList{field.Invalid(fldPath, target, "must not contain '..'")}
		}
	}
	return nil
}

func validateLocalDescendingPath(target string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if path.IsAbs(target) {
		allErrs = append(allErrs, field.Invalid(fldPath, target, "must be a relative path"))
	}
	return append(allErrs, validatePathNoBacksteps(target, fldPath)...)
}

// validateLocalNonReservedPath additionally reserves names starting with
// "..", which the kubelet uses for its atomic-writer bookkeeping.
func validateLocalNonReservedPath(target string, fldPath *field.Path) field.ErrorList {
	allErrs := validateLocalDescendingPath(target, fldPath)
	if strings.HasPrefix(target, "..") && !strings.HasPrefix(target, "../") {
		allErrs = append(allErrs, field.Invalid(fldPath, target, "must not start with '..'"))
	}
	return allErrs
}

// Resource names. The rules mirror upstream's resource helpers: names without
// a domain (or in kubernetes.io) are native, everything else is an extended
// resource that can only be counted in whole units and never overcommitted.

var standardContainerResources = sets.New(
	corev1.ResourceCPU,
	corev1.ResourceMemory,
	corev1.ResourceEphemeralStorage,
)

var integerResources = sets.New(
	corev1.ResourcePods,
	corev1.ResourceQuotas,
	corev1.ResourceServices,
	corev1.ResourceReplicationControllers,
	corev1.ResourceSecrets,
	corev1.ResourceConfigMaps,
	corev1.ResourcePersistentVolumeClaims,
	corev1.ResourceServicesNodePorts,
	corev1.ResourceServicesLoadBalancers,
)

var standardResources = sets.New(
	corev1.ResourceCPU,
	corev1.ResourceMemory,
	corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU,
	corev1.ResourceRequestsMemory,
	corev1.ResourceRequestsEphemeralStorage,
	corev1.ResourceLimitsCPU,
	corev1.ResourceLimitsMemory,
	corev1.ResourceLimitsEphemeralStorage,
	corev1.ResourcePods,
	corev1.ResourceQuotas,
	corev1.ResourceServices,
	corev1.ResourceReplicationControllers,
	corev1.ResourceSecrets,
	corev1.ResourcePersistentVolumeClaims,
	corev1.ResourceConfigMaps,
	corev1.ResourceStorage,
	corev1.ResourceRequestsStorage,
	corev1.ResourceServicesNodePorts,
	corev1.ResourceServicesLoadBalancers,
)

func isHugePageResourceName(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

func isNativeResource(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

func isExtendedResourceName(name corev1.ResourceName) bool {
	if isNativeResource(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(utilvalidation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

func isOvercommitAllowed(name corev1.ResourceName) bool {
	return isNativeResource(name) && !isHugePageResourceName(name)
}

func isIntegerResourceName(name corev1.ResourceName) bool {
	return integerResources.Has(name) || isExtendedResourceName(name)
}

func isStandardResourceName(name corev1.ResourceName) bool {
	return standardResources.Has(name) || isHugePageResourceName(name) ||
		strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix+corev1.ResourceHugePagesPrefix)
}

func validateResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	allErrs := validateQualifiedName(string(name), fldPath)
	if len(allErrs) != 0 {
		return allErrs
	}
	if !strings.Contains(string(name), "/") && !isStandardResourceName(name) {
		return field.ErrorList{field.Invalid(fldPath, name, "must be a standard resource type or fully qualified")}
	}
	return nil
}

func validateContainerResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	allErrs := validateResourceName(name, fldPath)
	if !strings.Contains(string(name), "/") {
		if !standardContainerResources.Has(name) && !isHugePageResourceName(name) {
			allErrs = append(allErrs, field.Invalid(fldPath, name, "must be a standard resource for containers"))
		}
	} else if !isNativeResource(name) && !isExtendedResourceName(name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, "doesn't follow extended resource name standard"))
	}
	return allErrs
}

// validateResourceQuantityValue checks a quantity for a named resource:
// never negative, and whole units for resources that cannot be split.
func validateResourceQuantityValue(name corev1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	allErrs := validateNonnegativeQuantity(q, fldPath)
	if isIntegerResourceName(name) && q.MilliValue()%1000 != 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, q.String(), isNotIntegerErrorMsg))
	}
	return allErrs
}

// validateHugePageValue requires hugepage amounts to be whole pages of the
// size named by the resource (hugepages-2Mi: multiples of 2Mi).
func validateHugePageValue(name corev1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	pageSize, err := resource.ParseQuantity(strings.TrimPrefix(string(name), corev1.ResourceHugePagesPrefix))
	if err == nil && pageSize.Value() > 0 && q.Value()%pageSize.Value() == 0 {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, q.String(), fmt.Sprintf("%s is not positive integer multiple of %s", q.String(), name))}
}

// Node selectors are shared by pod affinity and persistent volume affinity.

func validateNodeSelector(ns *corev1.NodeSelector, fldPath *field.Path) field.ErrorList {
	termsPath := fldPath.Child("nodeSelectorTerms")
	if len(ns.NodeSelectorTerms) == 0 {
		return field.ErrorList{field.Required(termsPath, "must have at least one node selector term")}
	}
	var allErrs field.ErrorList
	for i, term := range ns.NodeSelectorTerms {
		allErrs = append(allErrs, validateNodeSelectorTerm(term, true, termsPath.Index(i))...)
	}
	return allErrs
}

// validateNodeSelectorTerm checks a term; checkValues is false for preferred
// terms, whose values upstream tolerates even when they are not label values.
func validateNodeSelectorTerm(term corev1.NodeSelectorTerm, checkValues bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, req := range term.MatchExpressions {
		allErrs = append(allErrs, validateNodeSelectorRequirement(req, checkValues, fldPath.Child("matchExpressions").Index(i))...)
	}
	for i, req := range term.MatchFields {
		allErrs = append(allErrs, validateNodeFieldSelectorRequirement(req, fldPath.Child("matchFields").Index(i))...)
	}
	return allErrs
}

func validateNodeSelectorRequirement(rq corev1.NodeSelectorRequirement, checkValues bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch rq.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(rq.Values) == 0 {
			allErrs = append(allErrs, field.Required(fldPath.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(rq.Values) > 0 {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(rq.Values) != 1 {
			allErrs = append(allErrs, field.Required(fldPath.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
		}
	default:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("operator"), rq.Operator, "not a valid selector operator"))
	}
	allErrs = append(allErrs, metav1validation.ValidateLabelName(rq.Key, fldPath.Child("key"))...)
	if checkValues {
		for i, v := range rq.Values {
			allErrs = append(allErrs, validateLabelValue(v, fldPath.Child("values").Index(i))...)
		}
	}
	return allErrs
}

func validateNodeFieldSelectorRequirement(req corev1.NodeSelectorRequirement, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch req.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(req.Values) != 1 {
			allErrs = append(allErrs, field.Required(fldPath.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
		}
	default:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("operator"), req.Operator, "not a valid selector operator"))
	}
	if req.Key != metav1.ObjectNameField {
		return append(allErrs, field.Invalid(fldPath.Child("key"), req.Key, "not a valid field selector key"))
	}
	for i, v := range req.Values {
		allErrs = append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, v, fldPath.Child("values").Index(i))...)
	}
	return allErrs
}

func validateLabelSelector(sel *metav1.LabelSelector, fldPath *field.Path) field.ErrorList {
	return metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, fldPath)
}

func validateLabels(labels map[string]string, fldPath *field.Path) field.ErrorList {
	return metav1validation.ValidateLabels(labels, fldPath)
}

// forbidSetFields reports every field of the struct value that is not in
// allowed and differs from its zero value. Listing what is allowed, rather
// than what is not, keeps fields added to the API later forbidden until
// someone decides otherwise.
func forbidSetFields(value any, allowed map[string]bool, detail string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	v := reflect.ValueOf(value)
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if allowed[f.Name] || v.Field(i).IsZero() {
			continue
		}
		allErrs = append(allErrs, field.Forbidden(fldPath.Child(jsonName(f)), detail))
	}
	return allErrs
}

// jsonName is the serialized name of a struct field, which is what field
// paths are made of.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

// exactlyOneSource inspects a union struct whose members are pointers (a
// volume source) and requires exactly one member to be set. It returns the
// serialized name and value of the first member set, or a nil value when
// none is. Counting by reflection keeps members added upstream covered.
func exactlyOneSource(v reflect.Value, fldPath *field.Path) (string, any, field.ErrorList) {
	var allErrs field.ErrorList
	var name string
	var value any
	t := v.Type()
	for i := range t.NumField() {
		fv := v.Field(i)
		if fv.Kind() != reflect.Pointer || fv.IsNil() {
			continue
		}
		if value != nil {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child(jsonName(t.Field(i))), "may not specify more than 1 volume type"))
			continue
		}
		name, value = jsonName(t.Field(i)), fv.Interface()
	}
	if value == nil {
		allErrs = append(allErrs, field.Required(fldPath, "must specify a volume type"))
	}
	return name, value, allErrs
}
