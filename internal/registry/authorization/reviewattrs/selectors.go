package reviewattrs

import (
	"errors"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// fieldRequirements parses a review's field selector. Structured requirements
// win over rawSelector (validation forbids sending both). Requirements that
// cannot be understood are dropped and reported while the rest are kept:
// requirements are ANDed, so dropping one only ever broadens the question,
// which is the safe direction for an authorization check.
func fieldRequirements(in authorizationv1.FieldSelectorAttributes) (fields.Requirements, error) {
	if len(in.Requirements) > 0 {
		return fieldRequirementsFromAPI(in.Requirements)
	}
	if in.RawSelector == "" {
		return nil, nil
	}
	sel, err := fields.ParseSelector(in.RawSelector)
	if err != nil {
		return nil, fmt.Errorf("parsing field selector %q: %w", in.RawSelector, err)
	}
	return sel.Requirements(), nil
}

func fieldRequirementsFromAPI(in []metav1.FieldSelectorRequirement) (fields.Requirements, error) {
	var reqs fields.Requirements
	var errs []error
	for _, r := range in {
		// Field selectors on the wire only know = and !=, so In and NotIn are
		// accepted with a single value and mapped onto those.
		var op selection.Operator
		switch r.Operator {
		case metav1.FieldSelectorOpIn:
			op = selection.Equals
		case metav1.FieldSelectorOpNotIn:
			op = selection.NotEquals
		case metav1.FieldSelectorOpExists, metav1.FieldSelectorOpDoesNotExist:
			errs = append(errs, fmt.Errorf("field selector requirement on %q: operator %s is not supported yet", r.Key, r.Operator))
			continue
		default:
			errs = append(errs, fmt.Errorf("field selector requirement on %q: %q is not a valid operator", r.Key, r.Operator))
			continue
		}
		if len(r.Values) != 1 {
			errs = append(errs, fmt.Errorf("field selector requirement on %q: operator %s needs exactly one value, got %d", r.Key, r.Operator, len(r.Values)))
			continue
		}
		reqs = append(reqs, fields.Requirement{Field: r.Key, Operator: op, Value: r.Values[0]})
	}
	return reqs, errors.Join(errs...)
}

// labelRequirements is fieldRequirements for label selectors.
func labelRequirements(in authorizationv1.LabelSelectorAttributes) (labels.Requirements, error) {
	if len(in.Requirements) > 0 {
		return labelRequirementsFromAPI(in.Requirements)
	}
	if in.RawSelector == "" {
		return nil, nil
	}
	sel, err := labels.Parse(in.RawSelector)
	if err != nil {
		return nil, fmt.Errorf("parsing label selector %q: %w", in.RawSelector, err)
	}
	reqs, _ := sel.Requirements()
	return reqs, nil
}

var labelOperators = map[metav1.LabelSelectorOperator]selection.Operator{
	metav1.LabelSelectorOpIn:           selection.In,
	metav1.LabelSelectorOpNotIn:        selection.NotIn,
	metav1.LabelSelectorOpExists:       selection.Exists,
	metav1.LabelSelectorOpDoesNotExist: selection.DoesNotExist,
}

func labelRequirementsFromAPI(in []metav1.LabelSelectorRequirement) (labels.Requirements, error) {
	var reqs labels.Requirements
	var errs []error
	for _, r := range in {
		op, ok := labelOperators[r.Operator]
		if !ok {
			errs = append(errs, fmt.Errorf("label selector requirement on %q: %q is not a valid operator", r.Key, r.Operator))
			continue
		}
		values := r.Values
		if len(values) == 0 {
			values = nil
		}
		req, err := labels.NewRequirement(r.Key, op, values)
		if err != nil {
			errs = append(errs, fmt.Errorf("label selector requirement on %q: %w", r.Key, err))
			continue
		}
		reqs = append(reqs, *req)
	}
	return reqs, errors.Join(errs...)
}
