package validation

import (
	"slices"

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

// A policy rule grants verbs on either resources or non-resource URLs, never
// both. Every rule lists verbs; what else it must list depends on its shape.

// ruleList is a list a policy rule must not leave empty.
type ruleList struct {
	field  string
	of     func(rbacv1.PolicyRule) []string
	detail string
}

var (
	verbsList     = ruleList{"verbs", func(r rbacv1.PolicyRule) []string { return r.Verbs }, "verbs must contain at least one value"}
	apiGroupsList = ruleList{"apiGroups", func(r rbacv1.PolicyRule) []string { return r.APIGroups }, "resource rules must supply at least one api group"}
	resourcesList = ruleList{"resources", func(r rbacv1.PolicyRule) []string { return r.Resources }, "resource rules must supply at least one resource"}
)

// resourceRuleLists are what a rule on resources must name; a rule on URLs
// needs only its verbs and URLs.
var resourceRuleLists = []ruleList{apiGroupsList, resourcesList}

func (l ruleList) check(rule rbacv1.PolicyRule, fldPath *field.Path) field.ErrorList {
	if len(l.of(rule)) == 0 {
		return field.ErrorList{field.Required(fldPath.Child(l.field), l.detail)}
	}
	return nil
}

func validatePolicyRule(rule rbacv1.PolicyRule, namespaced bool, fldPath *field.Path) field.ErrorList {
	allErrs := verbsList.check(rule, fldPath)
	if len(rule.NonResourceURLs) > 0 {
		return append(allErrs, validateURLRule(rule, namespaced, fldPath.Child("nonResourceURLs"))...)
	}
	for _, l := range resourceRuleLists {
		allErrs = append(allErrs, l.check(rule, fldPath)...)
	}
	return allErrs
}

// validateURLRule: a namespaced role cannot grant URLs, which have no
// namespace, and a rule naming URLs cannot also name resources.
func validateURLRule(rule rbacv1.PolicyRule, namespaced bool, urlsPath *field.Path) field.ErrorList {
	var problems []string
	if namespaced {
		problems = append(problems, "namespaced rules cannot apply to non-resource URLs")
	}
	if len(rule.APIGroups)+len(rule.Resources)+len(rule.ResourceNames) > 0 {
		problems = append(problems, "rules cannot apply to both regular resources and non-resource URLs")
	}
	return invalidEach(urlsPath, rule.NonResourceURLs, problems)
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
	fldPath := field.NewPath("roleRef")
	allErrs := oneOf(fldPath.Child("apiGroup"), ref.APIGroup, rbacv1.GroupName)
	allErrs = append(allErrs, oneOf(fldPath.Child("kind"), ref.Kind, kinds...)...)
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

// subjectKind is what a binding may say about one kind of subject.
type subjectKind struct {
	kind     string
	apiGroup string                         // the one group the subject must name
	name     apivalidation.ValidateNameFunc // nil: any non-empty name
	// namespaced subjects need a namespace, which a role binding lends them
	// (its own) and a cluster role binding cannot.
	namespaced bool
}

// subjectKinds are the kinds a binding may name, in the order users are told.
var subjectKinds = []subjectKind{
	{kind: rbacv1.ServiceAccountKind, apiGroup: "", name: apivalidation.ValidateServiceAccountName, namespaced: true},
	{kind: rbacv1.UserKind, apiGroup: rbacv1.GroupName},
	{kind: rbacv1.GroupKind, apiGroup: rbacv1.GroupName},
}

var subjectKindNames = func() []string {
	names := make([]string, 0, len(subjectKinds))
	for _, k := range subjectKinds {
		names = append(names, k.kind)
	}
	return names
}()

// validateSubject checks one subject against the rules of its kind.
func validateSubject(s rbacv1.Subject, inNamespace bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if s.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	}
	i := slices.IndexFunc(subjectKinds, func(k subjectKind) bool { return k.kind == s.Kind })
	if i < 0 {
		return append(allErrs, field.NotSupported(fldPath.Child("kind"), s.Kind, subjectKindNames))
	}
	kind := subjectKinds[i]
	if kind.name != nil && s.Name != "" {
		allErrs = append(allErrs, nameErrors(kind.name, s.Name, fldPath.Child("name"))...)
	}
	allErrs = append(allErrs, oneOf(fldPath.Child("apiGroup"), s.APIGroup, kind.apiGroup)...)
	if kind.namespaced && !inNamespace && s.Namespace == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("namespace"), ""))
	}
	return allErrs
}
