package validation

import (
	"reflect"
	"slices"
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
	if unprefixed(name) && !standardFinalizers.Has(name) {
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

// unprefixed is a name without a domain ("cpu", "kubernetes"): such names
// belong to Kubernetes, which keeps lists of the ones it defines.
func unprefixed[T ~string](name T) bool {
	return !strings.Contains(string(name), "/")
}

// invalidEach turns the messages of a name or value check into Invalid
// errors at fldPath, one per message.
func invalidEach(fldPath *field.Path, value any, msgs []string) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range msgs {
		allErrs = append(allErrs, field.Invalid(fldPath, value, msg))
	}
	return allErrs
}

// nameErrors applies a ValidateNameFunc to a full (not generated) name.
func nameErrors(nameFn apivalidation.ValidateNameFunc, value string, fldPath *field.Path) field.ErrorList {
	return invalidEach(fldPath, value, nameFn(value, false))
}

func validateDNS1123Label(value string, fldPath *field.Path) field.ErrorList {
	return invalidEach(fldPath, value, utilvalidation.IsDNS1123Label(value))
}

func validateDNS1123Subdomain(value string, fldPath *field.Path) field.ErrorList {
	return invalidEach(fldPath, value, utilvalidation.IsDNS1123Subdomain(value))
}

func validateQualifiedName(value string, fldPath *field.Path) field.ErrorList {
	return invalidEach(fldPath, value, utilvalidation.IsQualifiedName(value))
}

func validateLabelValue(value string, fldPath *field.Path) field.ErrorList {
	return invalidEach(fldPath, value, utilvalidation.IsValidLabelValue(value))
}

// eachValue applies rule to every element of values, at its index.
func eachValue(values []string, rule func(string, *field.Path) field.ErrorList, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, v := range values {
		allErrs = append(allErrs, rule(v, fldPath.Index(i))...)
	}
	return allErrs
}

// oneOf reports value as unsupported unless it is one of allowed, which the
// error lists in the order given. Unlike validateEnum, an empty value is
// judged like any other: for some fields "" is the one allowed value.
func oneOf[T ~string](fldPath *field.Path, value T, allowed ...T) field.ErrorList {
	if slices.Contains(allowed, value) {
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath, value, allowed)}
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
