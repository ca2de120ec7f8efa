package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits that apply to events written in the events.k8s.io style (with
// eventTime set); legacy core events keep their historical leniency.
const (
	reportingInstanceLengthLimit = 128
	actionLengthLimit            = 128
	reasonLengthLimit            = 128
	noteLengthLimit              = 1024
)

// ValidateEvent validates a core/v1 event on create. Event names are chosen
// by recorders (object name plus a timestamp suffix) and upstream never
// held them to DNS rules, so they only have to be usable in a URL path.
func ValidateEvent(e *corev1.Event) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&e.ObjectMeta, true, eventName, field.NewPath("metadata"))
	return append(allErrs, validateEventFields(e)...)
}

// ValidateEventUpdate validates an update of a core/v1 event. Recorders
// update events in place to bump count and lastTimestamp, so the content is
// validated as on create, not frozen.
func ValidateEventUpdate(newE, oldE *corev1.Event) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&newE.ObjectMeta, &oldE.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, validateEventFields(newE)...)
}

// eventName accepts any name that can be a single path segment.
func eventName(name string, _ bool) []string {
	switch {
	case name == "." || name == "..":
		return []string{fmt.Sprintf("may not be '%s'", name)}
	case strings.ContainsAny(name, "/%"):
		return []string{"may not contain '/' or '%'"}
	}
	return nil
}

func validateEventFields(e *corev1.Event) field.ErrorList {
	var allErrs field.ErrorList
	involvedNs := field.NewPath("involvedObject", "namespace")
	if e.EventTime.IsZero() {
		// Legacy events about cluster-scoped objects were historically
		// written to "default" as well as to no namespace at all.
		if e.InvolvedObject.Namespace == "" {
			if e.Namespace != metav1.NamespaceNone && e.Namespace != metav1.NamespaceDefault {
				allErrs = append(allErrs, field.Invalid(involvedNs, e.InvolvedObject.Namespace, "does not match event.namespace"))
			}
		} else if e.Namespace != e.InvolvedObject.Namespace {
			allErrs = append(allErrs, field.Invalid(involvedNs, e.InvolvedObject.Namespace, "does not match event.namespace"))
		}
	} else {
		if e.InvolvedObject.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
			allErrs = append(allErrs, field.Invalid(involvedNs, e.InvolvedObject.Namespace, "does not match event.namespace"))
		}
		allErrs = append(allErrs, validateEventReporting(e)...)
	}
	if e.Type != "" && e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
		allErrs = append(allErrs, field.NotSupported(field.NewPath("type"), e.Type, []string{corev1.EventTypeNormal, corev1.EventTypeWarning}))
	}
	return append(allErrs, validateNonnegative(int64(e.Count), field.NewPath("count"))...)
}

// validateEventReporting applies the events.k8s.io rules to events that
// carry an eventTime: they name their reporter and their action and keep
// their texts short.
func validateEventReporting(e *corev1.Event) field.ErrorList {
	var allErrs field.ErrorList
	if e.ReportingController == "" {
		allErrs = append(allErrs, field.Required(field.NewPath("reportingController"), ""))
	} else {
		allErrs = append(allErrs, validateQualifiedName(e.ReportingController, field.NewPath("reportingController"))...)
	}
	allErrs = append(allErrs, validateEventText(e.ReportingInstance, true, reportingInstanceLengthLimit, field.NewPath("reportingInstance"))...)
	allErrs = append(allErrs, validateEventText(e.Action, true, actionLengthLimit, field.NewPath("action"))...)
	allErrs = append(allErrs, validateEventText(e.Reason, true, reasonLengthLimit, field.NewPath("reason"))...)
	return append(allErrs, validateEventText(e.Message, false, noteLengthLimit, field.NewPath("message"))...)
}

func validateEventText(value string, required bool, limit int, fldPath *field.Path) field.ErrorList {
	switch {
	case required && value == "":
		return field.ErrorList{field.Required(fldPath, "")}
	case len(value) > limit:
		return field.ErrorList{field.Invalid(fldPath, "", fmt.Sprintf("can have at most %v characters", limit))}
	}
	return nil
}
