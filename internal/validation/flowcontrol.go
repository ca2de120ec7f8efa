package validation

import (
	"fmt"
	"slices"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/apiserver/pkg/util/shufflesharding"
)

// The allowed values of flowcontrol.apiserver.k8s.io's enumerations, as upstream lists them.
var (
	flowDistinguishers = []flowcontrolv1.FlowDistinguisherMethodType{
		flowcontrolv1.FlowDistinguisherMethodByNamespaceType, flowcontrolv1.FlowDistinguisherMethodByUserType,
	}
	flowSchemaVerbs    = sets.New("get", "list", "create", "update", "delete", "deletecollection", "patch", "watch", "proxy")
	flowSubjectKinds   = []flowcontrolv1.SubjectKind{flowcontrolv1.SubjectKindGroup, flowcontrolv1.SubjectKindServiceAccount, flowcontrolv1.SubjectKindUser}
	priorityLevelTypes = []flowcontrolv1.PriorityLevelEnablement{flowcontrolv1.PriorityLevelEnablementExempt, flowcontrolv1.PriorityLevelEnablementLimited}
	limitResponseTypes = []flowcontrolv1.LimitResponseType{flowcontrolv1.LimitResponseTypeQueue, flowcontrolv1.LimitResponseTypeReject}
)

// maxQueues bounds a priority level's queues (10^7), as upstream.
const maxQueues int32 = 10 * 1000 * 1000

// nsErrIntro prefixes the namespace messages of a resource rule, as upstream.
const nsErrIntro = "each member of this list must be '*' or a DNS-1123 label; "

// The objects whose spec is fixed: every server puts them back, so no one may change them.
var (
	mandatoryFlowSchemas    = byName(bootstrap.MandatoryFlowSchemas)
	mandatoryPriorityLevels = byName(bootstrap.MandatoryPriorityLevelConfigurations)
)

func byName[T interface{ GetName() string }](objs []T) map[string]T {
	out := map[string]T{}
	for _, o := range objs {
		out[o.GetName()] = o
	}
	return out
}

// flowSchemaSpecRules are the checks of a flow schema, each about one part of it.
var flowSchemaSpecRules = []func(name string, spec *flowcontrolv1.FlowSchemaSpec, fldPath *field.Path) field.ErrorList{
	matchingPrecedenceInRange,
	distinguisherKnown,
	priorityLevelReferenced,
	flowSchemaRulesValid,
	mandatoryFlowSchemaFixed,
}

// ValidateFlowSchema validates a flow schema on create and, as upstream, on every update.
func ValidateFlowSchema(fs *flowcontrolv1.FlowSchema) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&fs.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	for _, rule := range flowSchemaSpecRules {
		allErrs = append(allErrs, rule(fs.Name, &fs.Spec, field.NewPath("spec"))...)
	}
	return append(allErrs, validateConditionTypes(fs.Status.Conditions, func(c flowcontrolv1.FlowSchemaCondition) string { return string(c.Type) })...)
}

// ValidateFlowSchemaUpdate validates an update of a flow schema: the whole object again (the
// library checks what metadata may not change).
func ValidateFlowSchemaUpdate(fs, _ *flowcontrolv1.FlowSchema) field.ErrorList {
	return ValidateFlowSchema(fs)
}

// ValidateFlowSchemaStatusUpdate validates a write of a flow schema's status.
func ValidateFlowSchemaStatusUpdate(fs, _ *flowcontrolv1.FlowSchema) field.ErrorList {
	return validateConditionTypes(fs.Status.Conditions, func(c flowcontrolv1.FlowSchemaCondition) string { return string(c.Type) })
}

func matchingPrecedenceInRange(name string, spec *flowcontrolv1.FlowSchemaSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	p, path := spec.MatchingPrecedence, fldPath.Child("matchingPrecedence")
	if p <= 0 {
		allErrs = append(allErrs, field.Invalid(path, p, "must be a positive value"))
	}
	if p > flowcontrolv1.FlowSchemaMaxMatchingPrecedence {
		allErrs = append(allErrs, field.Invalid(path, p, fmt.Sprintf("must not be greater than %v", flowcontrolv1.FlowSchemaMaxMatchingPrecedence)))
	}
	// Precedence 1 is the exempt schema's, so that nothing can match ahead of system:masters.
	if p == 1 && name != flowcontrolv1.FlowSchemaNameExempt {
		allErrs = append(allErrs, field.Invalid(path, p, "only the schema named 'exempt' may have matchingPrecedence 1"))
	}
	return allErrs
}

func distinguisherKnown(_ string, spec *flowcontrolv1.FlowSchemaSpec, fldPath *field.Path) field.ErrorList {
	if spec.DistinguisherMethod == nil {
		return nil
	}
	if slices.Contains(flowDistinguishers, spec.DistinguisherMethod.Type) {
		return nil
	}
	// Upstream reports the whole method as the value.
	return field.ErrorList{field.NotSupported(fldPath.Child("distinguisherMethod", "type"), spec.DistinguisherMethod, flowDistinguishers)}
}

func priorityLevelReferenced(_ string, spec *flowcontrolv1.FlowSchemaSpec, fldPath *field.Path) field.ErrorList {
	path := fldPath.Child("priorityLevelConfiguration", "name")
	if spec.PriorityLevelConfiguration.Name == "" {
		return field.ErrorList{field.Required(path, "must reference a priority level")}
	}
	return invalidEach(path, spec.PriorityLevelConfiguration.Name, apivalidation.NameIsDNSSubdomain(spec.PriorityLevelConfiguration.Name, false))
}

func flowSchemaRulesValid(_ string, spec *flowcontrolv1.FlowSchemaSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i := range spec.Rules {
		allErrs = append(allErrs, validatePolicyRulesWithSubjects(&spec.Rules[i], fldPath.Child("rules").Index(i))...)
	}
	return allErrs
}

// mandatoryFlowSchemaFixed: the mandatory schemas (exempt, catch-all) keep the spec every
// server ensures.
func mandatoryFlowSchemaFixed(name string, spec *flowcontrolv1.FlowSchemaSpec, fldPath *field.Path) field.ErrorList {
	mand, ok := mandatoryFlowSchemas[name]
	if !ok || apiequality.Semantic.DeepEqual(*spec, mand.Spec) {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, *spec, fmt.Sprintf("spec of '%s' must equal the fixed value", name))}
}

func validatePolicyRulesWithSubjects(rule *flowcontrolv1.PolicyRulesWithSubjects, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(rule.Subjects) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("subjects"), "subjects must contain at least one value"))
	}
	for i := range rule.Subjects {
		allErrs = append(allErrs, validateFlowSubject(&rule.Subjects[i], fldPath.Child("subjects").Index(i))...)
	}
	if len(rule.ResourceRules) == 0 && len(rule.NonResourceRules) == 0 {
		allErrs = append(allErrs, field.Required(fldPath, "at least one of resourceRules and nonResourceRules has to be non-empty"))
	}
	for i := range rule.ResourceRules {
		allErrs = append(allErrs, validateResourcePolicyRule(&rule.ResourceRules[i], fldPath.Child("resourceRules").Index(i))...)
	}
	for i := range rule.NonResourceRules {
		allErrs = append(allErrs, validateNonResourcePolicyRule(&rule.NonResourceRules[i], fldPath.Child("nonResourceRules").Index(i))...)
	}
	return allErrs
}

// subjectShape is, for one subject kind, the member it needs and the members it forbids.
type subjectShape struct {
	member    string
	validate  func(*flowcontrolv1.Subject, *field.Path) field.ErrorList
	forbidden []string
}

// subjectShapes: a subject names exactly the member of its kind.
var subjectShapes = map[flowcontrolv1.SubjectKind]subjectShape{
	flowcontrolv1.SubjectKindServiceAccount: {"serviceAccount", validateServiceAccountSubject, []string{"user", "group"}},
	flowcontrolv1.SubjectKindUser:           {"user", validateUserSubject, []string{"serviceAccount", "group"}},
	flowcontrolv1.SubjectKindGroup:          {"group", validateGroupSubject, []string{"serviceAccount", "user"}},
}

// forbiddenMember are the messages of a member set under another kind, as upstream words them.
var forbiddenMember = map[string]string{
	"serviceAccount": "serviceAccount is forbidden when subject kind is not 'ServiceAccount'",
	"user":           "user is forbidden when subject kind is not 'User'",
	"group":          "group is forbidden when subject kind is not 'Group'",
}

func validateFlowSubject(s *flowcontrolv1.Subject, fldPath *field.Path) field.ErrorList {
	shape, ok := subjectShapes[s.Kind]
	if !ok {
		return oneOf(fldPath.Child("kind"), s.Kind, flowSubjectKinds...)
	}
	allErrs := shape.validate(s, fldPath.Child(shape.member))
	set := map[string]bool{"serviceAccount": s.ServiceAccount != nil, "user": s.User != nil, "group": s.Group != nil}
	for _, member := range shape.forbidden {
		if set[member] {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child(member), forbiddenMember[member]))
		}
	}
	return allErrs
}

func validateServiceAccountSubject(s *flowcontrolv1.Subject, fldPath *field.Path) field.ErrorList {
	sa := s.ServiceAccount
	if sa == nil {
		return field.ErrorList{field.Required(fldPath, "serviceAccount is required when subject kind is 'ServiceAccount'")}
	}
	var allErrs field.ErrorList
	switch {
	case sa.Name == "":
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	case sa.Name != flowcontrolv1.NameAll:
		allErrs = append(allErrs, invalidEach(fldPath.Child("name"), sa.Name, apivalidation.ValidateServiceAccountName(sa.Name, false))...)
	}
	if sa.Namespace == "" {
		return append(allErrs, field.Required(fldPath.Child("namespace"), "must specify namespace for service account"))
	}
	return append(allErrs, invalidEach(fldPath.Child("namespace"), sa.Namespace, apivalidation.ValidateNamespaceName(sa.Namespace, false))...)
}

func validateUserSubject(s *flowcontrolv1.Subject, fldPath *field.Path) field.ErrorList {
	if s.User == nil {
		return field.ErrorList{field.Required(fldPath, "user is required when subject kind is 'User'")}
	}
	if s.User.Name == "" {
		return field.ErrorList{field.Required(fldPath.Child("name"), "")}
	}
	return nil
}

func validateGroupSubject(s *flowcontrolv1.Subject, fldPath *field.Path) field.ErrorList {
	if s.Group == nil {
		return field.ErrorList{field.Required(fldPath, "group is required when subject kind is 'Group'")}
	}
	if s.Group.Name == "" {
		return field.ErrorList{field.Required(fldPath.Child("name"), "")}
	}
	return nil
}

// validateVerbs: at least one verb, '*' alone, or only the verbs upstream knows.
func validateVerbs(verbs []string, fldPath *field.Path) field.ErrorList {
	switch {
	case len(verbs) == 0:
		return field.ErrorList{field.Required(fldPath, "verbs must contain at least one value")}
	case hasWildcard(verbs):
		if len(verbs) > 1 {
			return field.ErrorList{field.Invalid(fldPath, verbs, "if '*' is present, must not specify other verbs")}
		}
	case !flowSchemaVerbs.HasAll(verbs...):
		return field.ErrorList{field.NotSupported(fldPath, verbs, sets.List(flowSchemaVerbs))}
	}
	return nil
}

func validateResourcePolicyRule(rule *flowcontrolv1.ResourcePolicyRule, fldPath *field.Path) field.ErrorList {
	allErrs := validateVerbs(rule.Verbs, fldPath.Child("verbs"))
	allErrs = append(allErrs, nonEmptyOrLoneWildcard(rule.APIGroups, fldPath.Child("apiGroups"),
		"resource rules must supply at least one api group", "if '*' is present, must not specify other api groups")...)
	allErrs = append(allErrs, nonEmptyOrLoneWildcard(rule.Resources, fldPath.Child("resources"),
		"resource rules must supply at least one resource", "if '*' is present, must not specify other resources")...)
	nsPath := fldPath.Child("namespaces")
	switch {
	case len(rule.Namespaces) == 0 && !rule.ClusterScope:
		allErrs = append(allErrs, field.Required(nsPath, "resource rules that are not cluster scoped must supply at least one namespace"))
	case hasWildcard(rule.Namespaces):
		if len(rule.Namespaces) > 1 {
			allErrs = append(allErrs, field.Invalid(nsPath, rule.Namespaces, "if '*' is present, must not specify other namespaces"))
		}
	default:
		for i, ns := range rule.Namespaces {
			for _, msg := range apivalidation.ValidateNamespaceName(ns, false) {
				allErrs = append(allErrs, field.Invalid(nsPath.Index(i), ns, nsErrIntro+msg))
			}
		}
	}
	return allErrs
}

// nonEmptyOrLoneWildcard: a list with at least one member, where '*' stands alone.
func nonEmptyOrLoneWildcard(values []string, fldPath *field.Path, emptyMsg, wildcardMsg string) field.ErrorList {
	switch {
	case len(values) == 0:
		return field.ErrorList{field.Required(fldPath, emptyMsg)}
	case len(values) > 1 && hasWildcard(values):
		return field.ErrorList{field.Invalid(fldPath, values, wildcardMsg)}
	}
	return nil
}

func validateNonResourcePolicyRule(rule *flowcontrolv1.NonResourcePolicyRule, fldPath *field.Path) field.ErrorList {
	allErrs := validateVerbs(rule.Verbs, fldPath.Child("verbs"))
	urlsPath := fldPath.Child("nonResourceURLs")
	switch {
	case len(rule.NonResourceURLs) == 0:
		allErrs = append(allErrs, field.Required(urlsPath, "nonResourceURLs must contain at least one value"))
	case hasWildcard(rule.NonResourceURLs):
		if len(rule.NonResourceURLs) > 1 {
			allErrs = append(allErrs, field.Invalid(urlsPath, rule.NonResourceURLs, "if '*' is present, must not specify other non-resource URLs"))
		}
	default:
		for i, u := range rule.NonResourceURLs {
			if msg := nonResourceURLProblem(u); msg != "" {
				allErrs = append(allErrs, field.Invalid(urlsPath.Index(i), u, msg))
			}
		}
	}
	return allErrs
}

// nonResourceURLRules are the checks of one non-resource URL, in upstream's order: the first
// that fails is reported.
var nonResourceURLRules = []struct {
	bad func(string) bool
	msg string
}{
	{func(p string) bool { return p == "" }, "must not be empty"},
	{func(p string) bool { return !strings.HasPrefix(p, "/") }, "must start with slash"},
	{func(p string) bool { return strings.Contains(p, " ") }, "must not contain white-space"},
	{func(p string) bool { return strings.Contains(p, "//") }, "must not contain double slash"},
	// A wildcard only matches a suffix: one, as the last path segment.
	{func(p string) bool {
		n := strings.Count(p, "*")
		return n > 1 || (n == 1 && !strings.HasSuffix(p, "/*"))
	}, "wildcard can only do suffix matching"},
}

func nonResourceURLProblem(p string) string {
	if p == "/" {
		return ""
	}
	for _, r := range nonResourceURLRules {
		if r.bad(p) {
			return r.msg
		}
	}
	return ""
}

func hasWildcard(values []string) bool {
	for _, v := range values {
		if v == "*" {
			return true
		}
	}
	return false
}

// validateConditionTypes: every condition has a type, and no type appears twice.
func validateConditionTypes[C any](conditions []C, typeOf func(C) string) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	path := field.NewPath("status", "conditions")
	for i, c := range conditions {
		t := typeOf(c)
		if seen.Has(t) {
			allErrs = append(allErrs, field.Duplicate(path.Index(i).Child("type"), t))
		}
		seen.Insert(t)
		if t == "" {
			allErrs = append(allErrs, field.Required(path.Index(i).Child("type"), "must not be empty"))
		}
	}
	return allErrs
}

// ValidatePriorityLevelConfiguration validates a priority level on create and, as upstream, on
// every update.
func ValidatePriorityLevelConfiguration(pl *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&pl.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	// v1beta3 carried an explicit zero share through this annotation; in a stored object it
	// would only mislead an older reader, so upstream refuses it outside v1beta3.
	if _, ok := pl.Annotations[flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey]; ok {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("metadata", "annotations"),
			fmt.Sprintf("annotation '%s' is forbidden", flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey)))
	}
	specPath := field.NewPath("spec")
	allErrs = append(allErrs, validatePriorityLevelSpec(pl.Name, &pl.Spec, specPath)...)
	allErrs = append(allErrs, mandatoryPriorityLevelFixed(pl.Name, &pl.Spec, specPath)...)
	return append(allErrs, validateConditionTypes(pl.Status.Conditions, func(c flowcontrolv1.PriorityLevelConfigurationCondition) string { return string(c.Type) })...)
}

// ValidatePriorityLevelConfigurationUpdate validates an update of a priority level.
func ValidatePriorityLevelConfigurationUpdate(pl, _ *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	return ValidatePriorityLevelConfiguration(pl)
}

// ValidatePriorityLevelConfigurationStatusUpdate validates a write of a priority level's status.
func ValidatePriorityLevelConfigurationStatusUpdate(pl, _ *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	return validateConditionTypes(pl.Status.Conditions, func(c flowcontrolv1.PriorityLevelConfigurationCondition) string { return string(c.Type) })
}

func validatePriorityLevelSpec(name string, spec *flowcontrolv1.PriorityLevelConfigurationSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if (name == flowcontrolv1.PriorityLevelConfigurationNameExempt) != (spec.Type == flowcontrolv1.PriorityLevelEnablementExempt) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("type"), spec.Type, "type must be 'Exempt' if and only if name is 'exempt'"))
	}
	switch spec.Type {
	case flowcontrolv1.PriorityLevelEnablementExempt:
		if spec.Limited != nil {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("limited"), "must be nil if the type is not Limited"))
		}
		if spec.Exempt != nil {
			allErrs = append(allErrs, validateExempt(spec.Exempt, fldPath.Child("exempt"))...)
		}
	case flowcontrolv1.PriorityLevelEnablementLimited:
		if spec.Exempt != nil {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("exempt"), "must be nil if the type is Limited"))
		}
		if spec.Limited == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("limited"), "must not be empty when type is Limited"))
		} else {
			allErrs = append(allErrs, validateLimited(spec.Limited, fldPath.Child("limited"))...)
		}
	default:
		allErrs = append(allErrs, oneOf(fldPath.Child("type"), spec.Type, priorityLevelTypes...)...)
	}
	return allErrs
}

// validateShares checks the bounds of a priority level's concurrency numbers, shared by its Exempt and
// Limited shapes.
func validateShares(nominal, lendable *int32, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if nominal != nil && *nominal < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("nominalConcurrencyShares"), *nominal, "must be a non-negative integer"))
	}
	if lendable != nil && (*lendable < 0 || *lendable > 100) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("lendablePercent"), *lendable, "must be between 0 and 100, inclusive"))
	}
	return allErrs
}

func validateExempt(e *flowcontrolv1.ExemptPriorityLevelConfiguration, fldPath *field.Path) field.ErrorList {
	return validateShares(e.NominalConcurrencyShares, e.LendablePercent, fldPath)
}

func validateLimited(l *flowcontrolv1.LimitedPriorityLevelConfiguration, fldPath *field.Path) field.ErrorList {
	allErrs := validateShares(l.NominalConcurrencyShares, l.LendablePercent, fldPath)
	if b := l.BorrowingLimitPercent; b != nil && *b < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("borrowingLimitPercent"), *b, "if specified, must be a non-negative integer"))
	}
	return append(allErrs, validateLimitResponse(&l.LimitResponse, fldPath.Child("limitResponse"))...)
}

func validateLimitResponse(lr *flowcontrolv1.LimitResponse, fldPath *field.Path) field.ErrorList {
	switch lr.Type {
	case flowcontrolv1.LimitResponseTypeReject:
		if lr.Queuing != nil {
			return field.ErrorList{field.Forbidden(fldPath.Child("queuing"), "must be nil if limited.limitResponse.type is not Limited")}
		}
	case flowcontrolv1.LimitResponseTypeQueue:
		if lr.Queuing == nil {
			return field.ErrorList{field.Required(fldPath.Child("queuing"), "must not be empty if limited.limitResponse.type is Limited")}
		}
		return validateQueuing(lr.Queuing, fldPath.Child("queuing"))
	default:
		return oneOf(fldPath.Child("type"), lr.Type, limitResponseTypes...)
	}
	return nil
}

// validateQueuing: positive numbers, and a hand that shuffle sharding can deal from the deck
// with at most 60 bits of hash.
func validateQueuing(q *flowcontrolv1.QueuingConfiguration, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if q.QueueLengthLimit <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("queueLengthLimit"), q.QueueLengthLimit, "must be positive"))
	}
	switch {
	case q.Queues <= 0:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("queues"), q.Queues, "must be positive"))
	case q.Queues > maxQueues:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("queues"), q.Queues, fmt.Sprintf("must not be greater than %d", maxQueues)))
	}
	handPath := fldPath.Child("handSize")
	switch {
	case q.HandSize <= 0:
		allErrs = append(allErrs, field.Invalid(handPath, q.HandSize, "must be positive"))
	case q.HandSize > q.Queues:
		allErrs = append(allErrs, field.Invalid(handPath, q.HandSize, fmt.Sprintf("should not be greater than queues (%d)", q.Queues)))
	case shufflesharding.RequiredEntropyBits(int(q.Queues), int(q.HandSize)) > shufflesharding.MaxHashBits:
		allErrs = append(allErrs, field.Invalid(handPath, q.HandSize,
			fmt.Sprintf("required entropy bits of deckSize %d and handSize %d should not be greater than %d", q.Queues, q.HandSize, shufflesharding.MaxHashBits)))
	}
	return allErrs
}

// mandatoryPriorityLevelFixed: the mandatory levels keep the spec every server ensures, except
// that an admin may size the exempt level's nominal shares and lendable percent.
func mandatoryPriorityLevelFixed(name string, spec *flowcontrolv1.PriorityLevelConfigurationSpec, fldPath *field.Path) field.ErrorList {
	mand, ok := mandatoryPriorityLevels[name]
	if !ok {
		return nil
	}
	got, want := *spec, mand.Spec
	msg := fmt.Sprintf("spec of '%s' must equal the fixed value", name)
	if name == flowcontrolv1.PriorityLevelConfigurationNameExempt {
		got.Exempt, want.Exempt = nil, nil
		msg = fmt.Sprintf("spec of '%s' except the 'spec.exempt' field must equal the fixed value", name)
	}
	if apiequality.Semantic.DeepEqual(got, want) {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, *spec, msg)}
}
