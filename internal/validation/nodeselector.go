package validation

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Node selectors are shared by pod affinity and persistent volume affinity.
// A requirement is judged by a table of its operators, each with the number
// of values it takes, and by what its key and values must be. Expressions on
// node labels and on node fields differ only in those tables.

// valueCount is how many values an operator takes, and what a user is told
// when a requirement has some other number.
type valueCount struct {
	min, max int // max < 0: no upper bound
	report   func(*field.Path, string) *field.Error
	detail   string
}

func (c valueCount) check(values []string, valuesPath *field.Path) field.ErrorList {
	if n := len(values); n >= c.min && (c.max < 0 || n <= c.max) {
		return nil
	}
	return field.ErrorList{c.report(valuesPath, c.detail)}
}

var (
	someValues = valueCount{min: 1, max: -1, report: field.Required,
		detail: "must be specified when `operator` is 'In' or 'NotIn'"}
	noValues = valueCount{min: 0, max: 0, report: field.Forbidden,
		detail: "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"}
	oneBound = valueCount{min: 1, max: 1, report: field.Required,
		detail: "must be specified single value when `operator` is 'Lt' or 'Gt'"}
	oneField = valueCount{min: 1, max: 1, report: field.Required,
		detail: "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"}
)

// labelOperators are the operators of an expression on node labels.
var labelOperators = map[corev1.NodeSelectorOperator]valueCount{
	corev1.NodeSelectorOpIn:           someValues,
	corev1.NodeSelectorOpNotIn:        someValues,
	corev1.NodeSelectorOpExists:       noValues,
	corev1.NodeSelectorOpDoesNotExist: noValues,
	corev1.NodeSelectorOpGt:           oneBound,
	corev1.NodeSelectorOpLt:           oneBound,
}

// fieldOperators are the operators of an expression on node fields: a field
// selector can only test equality, so each takes exactly one value.
var fieldOperators = map[corev1.NodeSelectorOperator]valueCount{
	corev1.NodeSelectorOpIn:    oneField,
	corev1.NodeSelectorOpNotIn: oneField,
}

// nodeSelectorFields are the node fields an expression may test, each with
// the rule its values follow.
var nodeSelectorFields = map[string]func(string, *field.Path) field.ErrorList{
	metav1.ObjectNameField: validateDNS1123Subdomain, // node names
}

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

func validateNodeSelectorRequirement(req corev1.NodeSelectorRequirement, checkValues bool, fldPath *field.Path) field.ErrorList {
	allErrs := validateOperatorValues(labelOperators, req, fldPath)
	allErrs = append(allErrs, metav1validation.ValidateLabelName(req.Key, fldPath.Child("key"))...)
	if checkValues {
		allErrs = append(allErrs, eachValue(req.Values, validateLabelValue, fldPath.Child("values"))...)
	}
	return allErrs
}

func validateNodeFieldSelectorRequirement(req corev1.NodeSelectorRequirement, fldPath *field.Path) field.ErrorList {
	allErrs := validateOperatorValues(fieldOperators, req, fldPath)
	valueRule, known := nodeSelectorFields[req.Key]
	if !known {
		// Without a known field there is no rule for the values either.
		return append(allErrs, field.Invalid(fldPath.Child("key"), req.Key, "not a valid field selector key"))
	}
	return append(allErrs, eachValue(req.Values, valueRule, fldPath.Child("values"))...)
}

// validateOperatorValues looks the requirement's operator up in operators
// and checks that it comes with as many values as the operator takes.
func validateOperatorValues(operators map[corev1.NodeSelectorOperator]valueCount, req corev1.NodeSelectorRequirement, fldPath *field.Path) field.ErrorList {
	count, known := operators[req.Operator]
	if !known {
		return field.ErrorList{field.Invalid(fldPath.Child("operator"), req.Operator, "not a valid selector operator")}
	}
	return count.check(req.Values, fldPath.Child("values"))
}
