package reviewattrs

import (
	"reflect"

	authorizationv1 "k8s.io/api/authorization/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const exactlyOneAttributesMsg = "exactly one of nonResourceAttributes or resourceAttributes must be specified"

// ValidateSubjectAccessReviewSpec checks a spec that names the user to ask about.
func ValidateSubjectAccessReviewSpec(spec authorizationv1.SubjectAccessReviewSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateAttributesUnion(spec.ResourceAttributes, spec.NonResourceAttributes, fldPath)
	if spec.User == "" && len(spec.Groups) == 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("user"), spec.User, "at least one of user or group must be specified"))
	}
	return append(allErrs, validateResourceAttributes(spec.ResourceAttributes, fldPath.Child("resourceAttributes"))...)
}

// ValidateSelfSubjectAccessReviewSpec checks a spec whose user is the requester.
func ValidateSelfSubjectAccessReviewSpec(spec authorizationv1.SelfSubjectAccessReviewSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateAttributesUnion(spec.ResourceAttributes, spec.NonResourceAttributes, fldPath)
	return append(allErrs, validateResourceAttributes(spec.ResourceAttributes, fldPath.Child("resourceAttributes"))...)
}

// ValidateSubjectAccessReview checks a SubjectAccessReview sent for evaluation.
func ValidateSubjectAccessReview(sar *authorizationv1.SubjectAccessReview) field.ErrorList {
	allErrs := ValidateSubjectAccessReviewSpec(sar.Spec, field.NewPath("spec"))
	return append(allErrs, validateEmptyMeta(sar.ObjectMeta, false)...)
}

// ValidateSelfSubjectAccessReview checks a SelfSubjectAccessReview sent for evaluation.
func ValidateSelfSubjectAccessReview(sar *authorizationv1.SelfSubjectAccessReview) field.ErrorList {
	allErrs := ValidateSelfSubjectAccessReviewSpec(sar.Spec, field.NewPath("spec"))
	return append(allErrs, validateEmptyMeta(sar.ObjectMeta, false)...)
}

// ValidateLocalSubjectAccessReview checks a LocalSubjectAccessReview: it may
// only ask about resources in its own namespace, so a review that can be
// created in a namespace cannot be used to probe another one.
func ValidateLocalSubjectAccessReview(sar *authorizationv1.LocalSubjectAccessReview) field.ErrorList {
	allErrs := ValidateSubjectAccessReviewSpec(sar.Spec, field.NewPath("spec"))
	allErrs = append(allErrs, validateEmptyMeta(sar.ObjectMeta, true)...)
	if ra := sar.Spec.ResourceAttributes; ra != nil && ra.Namespace != sar.Namespace {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec", "resourceAttributes", "namespace"), ra.Namespace, "must match metadata.namespace"))
	}
	if sar.Spec.NonResourceAttributes != nil {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec", "nonResourceAttributes"), sar.Spec.NonResourceAttributes, "disallowed on this kind of request"))
	}
	return allErrs
}

// ValidateSelfSubjectRulesReview checks a SelfSubjectRulesReview: rules are
// always listed for one namespace (plus the cluster-wide ones).
func ValidateSelfSubjectRulesReview(review *authorizationv1.SelfSubjectRulesReview) field.ErrorList {
	if review.Spec.Namespace == "" {
		return field.ErrorList{field.Required(field.NewPath("spec", "namespace"), "")}
	}
	return nil
}

func validateAttributesUnion(res *authorizationv1.ResourceAttributes, nonRes *authorizationv1.NonResourceAttributes, fldPath *field.Path) field.ErrorList {
	if (res == nil) == (nonRes == nil) {
		return field.ErrorList{field.Invalid(fldPath, nonRes, exactlyOneAttributesMsg)}
	}
	return nil
}

// validateEmptyMeta insists on empty metadata: reviews are never stored, so a
// name, labels or the like would be silently lost. The managed fields are the
// exception because the server's field manager adds them on every create.
func validateEmptyMeta(meta metav1.ObjectMeta, namespaced bool) field.ErrorList {
	meta.ManagedFields = nil
	msg := "must be empty"
	if namespaced {
		meta.Namespace = ""
		msg = "must be empty except for namespace"
	}
	// The plain comparison answers the usual empty metadata at a fraction of the semantic one's
	// cost (a review's hot path); only what it finds unequal is compared semantically.
	if reflect.DeepEqual(metav1.ObjectMeta{}, meta) || apiequality.Semantic.DeepEqual(metav1.ObjectMeta{}, meta) {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("metadata"), meta, msg)}
}

func validateResourceAttributes(ra *authorizationv1.ResourceAttributes, fldPath *field.Path) field.ErrorList {
	if ra == nil {
		return nil
	}
	var allErrs field.ErrorList
	if fs := ra.FieldSelector; fs != nil {
		p := fldPath.Child("fieldSelector")
		allErrs = append(allErrs, validateSelectorForm(fs.RawSelector, len(fs.Requirements), p)...)
		// Unknown operators are let through so that newer clients still get an
		// answer; the conversion drops them, which only broadens the question.
		opts := metav1validation.FieldSelectorValidationOptions{AllowUnknownOperatorInRequirement: true}
		for i, r := range fs.Requirements {
			allErrs = append(allErrs, metav1validation.ValidateFieldSelectorRequirement(r, opts, p.Child("requirements").Index(i))...)
		}
	}
	if ls := ra.LabelSelector; ls != nil {
		p := fldPath.Child("labelSelector")
		allErrs = append(allErrs, validateSelectorForm(ls.RawSelector, len(ls.Requirements), p)...)
		opts := metav1validation.LabelSelectorValidationOptions{AllowUnknownOperatorInRequirement: true}
		for i, r := range ls.Requirements {
			allErrs = append(allErrs, metav1validation.ValidateLabelSelectorRequirement(r, opts, p.Child("requirements").Index(i))...)
		}
	}
	return allErrs
}

// validateSelectorForm requires exactly one of rawSelector and requirements,
// so that the server and webhook authorizers can never disagree about which
// of the two a review meant.
func validateSelectorForm(raw string, requirements int, fldPath *field.Path) field.ErrorList {
	switch {
	case raw != "" && requirements > 0:
		return field.ErrorList{field.Invalid(fldPath.Child("rawSelector"), raw, "may not be specified at the same time as requirements")}
	case raw == "" && requirements == 0:
		return field.ErrorList{field.Required(fldPath.Child("requirements"), "when "+fldPath.String()+" is specified, requirements or rawSelector is required")}
	}
	return nil
}
