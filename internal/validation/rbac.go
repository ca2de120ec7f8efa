package validation

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateRBACName accepts any name that can be a URL path segment. Roles and bindings have
// always been this lax (user and group names end up in them), so tightening it would make
// existing objects unreadable by clients that round-trip them.
func validateRBACName(name string, _ bool) []string {
	return content.IsPathSegmentName(name)
}

// ValidateRole validates a role on create.
func ValidateRole(role *rbacv1.Role) field.ErrorList {
	allErrs := validateObjectMeta(&role.ObjectMeta, true, validateRBACName, field.NewPath("metadata"))
	return append(allErrs, validatePolicyRules(role.Rules, true)...)
}

// ValidateRoleUpdate validates an update of a role.
func ValidateRoleUpdate(role, oldRole *rbacv1.Role) field.ErrorList {
	allErrs := ValidateRole(role)
	return append(allErrs, validateObjectMetaUpdate(&role.ObjectMeta, &oldRole.ObjectMeta, field.NewPath("metadata"))...)
}

// ValidateClusterRole validates a cluster role on create.
func ValidateClusterRole(role *rbacv1.ClusterRole) field.ErrorList {
	return validateClusterRole(role, false)
}

// ValidateClusterRoleUpdate validates an update of a cluster role. Selector label values that
// were invalid in the stored object stay tolerated: they were accepted by older servers, and
// refusing them would make the role impossible to update at all.
func ValidateClusterRoleUpdate(role, oldRole *rbacv1.ClusterRole) field.ErrorList {
	allErrs := validateClusterRole(role, hasInvalidSelectorLabelValue(oldRole))
	return append(allErrs, validateObjectMetaUpdate(&role.ObjectMeta, &oldRole.ObjectMeta, field.NewPath("metadata"))...)
}

func validateClusterRole(role *rbacv1.ClusterRole, allowInvalidLabelValue bool) field.ErrorList {
	allErrs := validateObjectMeta(&role.ObjectMeta, false, validateRBACName, field.NewPath("metadata"))
	allErrs = append(allErrs, validatePolicyRules(role.Rules, false)...)
	if role.AggregationRule == nil {
		return allErrs
	}
	selectorsPath := field.NewPath("aggregationRule", "clusterRoleSelectors")
	if len(role.AggregationRule.ClusterRoleSelectors) == 0 {
		allErrs = append(allErrs, field.Required(selectorsPath, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
	}
	opts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: allowInvalidLabelValue}
	for i := range role.AggregationRule.ClusterRoleSelectors {
		selector := &role.AggregationRule.ClusterRoleSelectors[i]
		fldPath := selectorsPath.Index(i)
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(selector, opts, fldPath)...)
		// The aggregation controller has to turn the selector into a labels.Selector; one it
		// cannot convert would silently aggregate nothing.
		if _, err := metav1.LabelSelectorAsSelector(selector); err != nil {
			allErrs = append(allErrs, field.Invalid(fldPath, selector, "invalid label selector."))
		}
	}
	return allErrs
}

func hasInvalidSelectorLabelValue(role *rbacv1.ClusterRole) bool {
	if role.AggregationRule == nil {
		return false
	}
	for i := range role.AggregationRule.ClusterRoleSelectors {
		if len(metav1validation.ValidateLabelSelector(&role.AggregationRule.ClusterRoleSelectors[i], metav1validation.LabelSelectorValidationOptions{}, nil)) > 0 {
			return true
		}
	}
	return false
}

func validatePolicyRules(rules []rbacv1.PolicyRule, namespaced bool) field.ErrorList {
	var allErrs field.ErrorList
	for i, rule := range rules {
		allErrs = append(allErrs, validatePolicyRule(rule, namespaced, field.NewPath("rules").Index(i))...)
	}
	return allErrs
}

// validatePolicyRule checks that a rule grants something: verbs on either resources or
// non-resource URLs, never both. A namespaced role cannot grant URLs, which have no namespace.
func validatePolicyRule(rule rbacv1.PolicyRule, namespaced bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(rule.Verbs) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("verbs"), "verbs must contain at least one value"))
	}
	if len(rule.NonResourceURLs) > 0 {
		if namespaced {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return allErrs
	}
	if len(rule.APIGroups) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(rule.Resources) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("resources"), "resource rules must supply at least one resource"))
	}
	return allErrs
}

// ValidateRoleBinding validates a role binding on create. It may refer to a Role of its own
// namespace or to a ClusterRole, whose rules then apply within the binding's namespace.
func ValidateRoleBinding(binding *rbacv1.RoleBinding) field.ErrorList {
	allErrs := validateObjectMeta(&binding.ObjectMeta, true, validateRBACName, field.NewPath("metadata"))
	allErrs = append(allErrs, validateRoleRef(binding.RoleRef, []string{"Role", "ClusterRole"})...)
	return append(allErrs, validateSubjects(binding.Subjects, true)...)
}

// ValidateRoleBindingUpdate validates an update of a role binding. The role reference is
// immutable: changing what a binding grants means deleting it and creating another, which
// makes the escalation check of the new role explicit.
func ValidateRoleBindingUpdate(binding, oldBinding *rbacv1.RoleBinding) field.ErrorList {
	allErrs := ValidateRoleBinding(binding)
	allErrs = append(allErrs, validateObjectMetaUpdate(&binding.ObjectMeta, &oldBinding.ObjectMeta, field.NewPath("metadata"))...)
	return append(allErrs, validateRoleRefUpdate(binding.RoleRef, oldBinding.RoleRef)...)
}

// ValidateClusterRoleBinding validates a cluster role binding on create.
func ValidateClusterRoleBinding(binding *rbacv1.ClusterRoleBinding) field.ErrorList {
	allErrs := validateObjectMeta(&binding.ObjectMeta, false, validateRBACName, field.NewPath("metadata"))
	allErrs = append(allErrs, validateRoleRef(binding.RoleRef, []string{"ClusterRole"})...)
	return append(allErrs, validateSubjects(binding.Subjects, false)...)
}

// ValidateClusterRoleBindingUpdate validates an update of a cluster role binding; as for role
// bindings, the role reference is immutable.
func ValidateClusterRoleBindingUpdate(binding, oldBinding *rbacv1.ClusterRoleBinding) field.ErrorList {
	allErrs := ValidateClusterRoleBinding(binding)
	allErrs = append(allErrs, validateObjectMetaUpdate(&binding.ObjectMeta, &oldBinding.ObjectMeta, field.NewPath("metadata"))...)
	return append(allErrs, validateRoleRefUpdate(binding.RoleRef, oldBinding.RoleRef)...)
}

func validateRoleRef(ref rbacv1.RoleRef, kinds []string) field.ErrorList {
	var allErrs field.ErrorList
	fldPath := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	supported := false
	for _, k := range kinds {
		supported = supported || ref.Kind == k
	}
	if !supported {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		return append(allErrs, field.Required(fldPath.Child("name"), ""))
	}
	return append(allErrs, nameErrors(validateRBACName, ref.Name, fldPath.Child("name"))...)
}

func validateRoleRefUpdate(ref, oldRef rbacv1.RoleRef) field.ErrorList {
	if ref != oldRef {
		return field.ErrorList{field.Invalid(field.NewPath("roleRef"), ref, "cannot change roleRef")}
	}
	return nil
}

func validateSubjects(subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	var allErrs field.ErrorList
	for i, s := range subjects {
		allErrs = append(allErrs, validateSubject(s, namespaced, field.NewPath("subjects").Index(i))...)
	}
	return allErrs
}

// validateSubject checks one subject. A service account in a role binding may omit its
// namespace (the binding's is meant); a cluster role binding has none to lend.
func validateSubject(s rbacv1.Subject, namespaced bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if s.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			allErrs = append(allErrs, nameErrors(apivalidation.ValidateServiceAccountName, s.Name, fldPath.Child("name"))...)
		}
		if s.APIGroup != "" {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != rbacv1.GroupName {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return allErrs
}
