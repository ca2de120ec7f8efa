package validation

import (
	"fmt"
	"math"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/node/util/sysctl"

	"github.com/idplane/idplane/internal/podwalk"
)

// DNS limits come from libc's resolver.
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

const sysctlMaxLength = 253

var sysctlRegexp = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

var supportedRestartPolicies = []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}

var supportedDNSPolicies = []corev1.DNSPolicy{corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone}

var supportedPreemptionPolicies = []corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever}

var supportedTolerationOperators = []corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}

var supportedFSGroupChangePolicies = sets.New(corev1.FSGroupChangeOnRootMismatch, corev1.FSGroupChangeAlways)

var supportedSupplementalGroupsPolicies = sets.New(corev1.SupplementalGroupsPolicyMerge, corev1.SupplementalGroupsPolicyStrict)

var supportedSELinuxChangePolicies = sets.New(corev1.SELinuxChangePolicyRecursive, corev1.SELinuxChangePolicyMountOption)

var supportedOSNames = sets.New(corev1.Linux, corev1.Windows)

var supportedWhenUnsatisfiable = sets.New(corev1.DoNotSchedule, corev1.ScheduleAnyway)

var supportedNodeInclusionPolicies = sets.New(corev1.NodeInclusionPolicyIgnore, corev1.NodeInclusionPolicyHonor)

var podLevelResources = sets.New(corev1.ResourceCPU, corev1.ResourceMemory)

var linuxStopSignals = sets.New(
	corev1.SIGABRT, corev1.SIGALRM, corev1.SIGBUS, corev1.SIGCHLD, corev1.SIGCLD, corev1.SIGCONT,
	corev1.SIGFPE, corev1.SIGHUP, corev1.SIGILL, corev1.SIGINT, corev1.SIGIO, corev1.SIGIOT,
	corev1.SIGKILL, corev1.SIGPIPE, corev1.SIGPOLL, corev1.SIGPROF, corev1.SIGPWR, corev1.SIGQUIT,
	corev1.SIGSEGV, corev1.SIGSTKFLT, corev1.SIGSTOP, corev1.SIGSYS, corev1.SIGTERM, corev1.SIGTRAP,
	corev1.SIGTSTP, corev1.SIGTTIN, corev1.SIGTTOU, corev1.SIGURG, corev1.SIGUSR1, corev1.SIGUSR2,
	corev1.SIGVTALRM, corev1.SIGWINCH, corev1.SIGXCPU, corev1.SIGXFSZ, corev1.SIGRTMIN,
	corev1.SIGRTMINPLUS1, corev1.SIGRTMINPLUS2, corev1.SIGRTMINPLUS3, corev1.SIGRTMINPLUS4,
	corev1.SIGRTMINPLUS5, corev1.SIGRTMINPLUS6, corev1.SIGRTMINPLUS7, corev1.SIGRTMINPLUS8,
	corev1.SIGRTMINPLUS9, corev1.SIGRTMINPLUS10, corev1.SIGRTMINPLUS11, corev1.SIGRTMINPLUS12,
	corev1.SIGRTMINPLUS13, corev1.SIGRTMINPLUS14, corev1.SIGRTMINPLUS15, corev1.SIGRTMAXMINUS14,
	corev1.SIGRTMAXMINUS13, corev1.SIGRTMAXMINUS12, corev1.SIGRTMAXMINUS11, corev1.SIGRTMAXMINUS10,
	corev1.SIGRTMAXMINUS9, corev1.SIGRTMAXMINUS8, corev1.SIGRTMAXMINUS7, corev1.SIGRTMAXMINUS6,
	corev1.SIGRTMAXMINUS5, corev1.SIGRTMAXMINUS4, corev1.SIGRTMAXMINUS3, corev1.SIGRTMAXMINUS2,
	corev1.SIGRTMAXMINUS1, corev1.SIGRTMAX,
)

var windowsStopSignals = sets.New(corev1.SIGKILL, corev1.SIGTERM)

// validatePodSpec checks a pod's spec. podName is empty for specs that are
// not (yet) a real pod; it is needed for the names of ephemeral claims.
func validatePodSpec(spec *corev1.PodSpec, podName string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	gracePath := fldPath.Child("terminationGracePeriodSeconds")
	if spec.TerminationGracePeriodSeconds == nil {
		allErrs = append(allErrs, field.Required(gracePath, ""))
	} else {
		allErrs = append(allErrs, validateNonnegative(*spec.TerminationGracePeriodSeconds, gracePath)...)
	}

	vols, errs := validateVolumes(spec.Volumes, podName, fldPath.Child("volumes"))
	allErrs = append(allErrs, errs...)
	claimNames, errs := validatePodResourceClaims(spec.ResourceClaims, fldPath.Child("resourceClaims"))
	allErrs = append(allErrs, errs...)
	pc := &podContext{
		volumes:       vols,
		claimNames:    claimNames,
		gracePeriod:   spec.TerminationGracePeriodSeconds,
		restartPolicy: spec.RestartPolicy,
		hostUsers:     spec.HostUsers == nil || *spec.HostUsers,
		os:            spec.OS,
	}
	allErrs = append(allErrs, validateContainers(spec.Containers, pc, fldPath.Child("containers"))...)
	allErrs = append(allErrs, validateInitContainers(spec.InitContainers, spec.Containers, pc, fldPath.Child("initContainers"))...)
	allErrs = append(allErrs, validateEphemeralContainers(spec.EphemeralContainers, spec.Containers, spec.InitContainers, pc, fldPath.Child("ephemeralContainers"))...)
	if spec.Resources != nil {
		allErrs = append(allErrs, validatePodLevelResources(spec.Resources, claimNames, fldPath.Child("resources"))...)
	}

	allErrs = append(allErrs, validateHostNetworkPorts(spec, fldPath)...)
	allErrs = append(allErrs, validateEnum(spec.RestartPolicy, supportedRestartPolicies, fldPath.Child("restartPolicy"))...)
	allErrs = append(allErrs, validateEnum(spec.DNSPolicy, supportedDNSPolicies, fldPath.Child("dnsPolicy"))...)
	allErrs = append(allErrs, validateLabels(spec.NodeSelector, fldPath.Child("nodeSelector"))...)
	allErrs = append(allErrs, validatePodSecurityContext(spec, fldPath)...)
	allErrs = append(allErrs, validateAffinity(spec.Affinity, fldPath.Child("affinity"))...)
	allErrs = append(allErrs, validatePodDNSConfig(spec.DNSConfig, spec.DNSPolicy, fldPath.Child("dnsConfig"))...)
	for i, gate := range spec.ReadinessGates {
		allErrs = append(allErrs, validateQualifiedName(string(gate.ConditionType), fldPath.Child("readinessGates").Index(i).Child("conditionType"))...)
	}
	allErrs = append(allErrs, validateSchedulingGates(spec.SchedulingGates, fldPath.Child("schedulingGates"))...)
	allErrs = append(allErrs, validateTopologySpreadConstraints(spec.TopologySpreadConstraints, fldPath.Child("topologySpreadConstraints"))...)
	allErrs = append(allErrs, validateHostUsers(spec, fldPath)...)
	allErrs = append(allErrs, validatePodWindowsOptions(spec, fldPath)...)

	if sa, saPath := effectiveServiceAccountName(spec, fldPath); sa != "" {
		allErrs = append(allErrs, nameErrors(apivalidation.ValidateServiceAccountName, sa, saPath)...)
	}
	if spec.NodeName != "" {
		allErrs = append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, spec.NodeName, fldPath.Child("nodeName"))...)
	}
	if spec.ActiveDeadlineSeconds != nil {
		if v := *spec.ActiveDeadlineSeconds; v < 1 || v > math.MaxInt32 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), v, utilvalidation.InclusiveRangeError(1, math.MaxInt32)))
		}
	}
	if spec.Hostname != "" {
		allErrs = append(allErrs, validateDNS1123Label(spec.Hostname, fldPath.Child("hostname"))...)
	}
	if spec.Subdomain != "" {
		allErrs = append(allErrs, validateDNS1123Label(spec.Subdomain, fldPath.Child("subdomain"))...)
	}
	allErrs = append(allErrs, validateTolerations(spec.Tolerations, fldPath.Child("tolerations"))...)
	for i, alias := range spec.HostAliases {
		aliasPath := fldPath.Child("hostAliases").Index(i)
		allErrs = append(allErrs, utilvalidation.IsValidIP(aliasPath.Child("ip"), alias.IP)...)
		for j, hostname := range alias.Hostnames {
			allErrs = append(allErrs, validateDNS1123Subdomain(hostname, aliasPath.Child("hostnames").Index(j))...)
		}
	}
	if spec.PriorityClassName != "" {
		allErrs = append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, spec.PriorityClassName, fldPath.Child("priorityClassName"))...)
	}
	if spec.RuntimeClassName != nil {
		allErrs = append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, *spec.RuntimeClassName, fldPath.Child("runtimeClassName"))...)
	}
	if spec.PreemptionPolicy != nil {
		allErrs = append(allErrs, validateEnum(*spec.PreemptionPolicy, supportedPreemptionPolicies, fldPath.Child("preemptionPolicy"))...)
	}
	if spec.Overhead != nil {
		allErrs = append(allErrs, validateResourceRequirements(&corev1.ResourceRequirements{Limits: spec.Overhead}, validateContainerResourceName, claimNames, fldPath.Child("overhead"))...)
	}
	return append(allErrs, validatePodOS(spec, fldPath)...)
}

// effectiveServiceAccountName returns the service account the pod runs as:
// serviceAccount is the deprecated spelling, used only when the new field
// is empty.
func effectiveServiceAccountName(spec *corev1.PodSpec, fldPath *field.Path) (string, *field.Path) {
	if spec.ServiceAccountName != "" {
		return spec.ServiceAccountName, fldPath.Child("serviceAccountName")
	}
	return spec.DeprecatedServiceAccount, fldPath.Child("serviceAccount")
}

// validateEnum checks a required enumerated value.
func validateEnum[T ~string](value T, supported []T, fldPath *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return oneOf(fldPath, value, supported...)
}

// validateHostNetworkPorts: with the host's network the container port is
// the host port, so a different hostPort could never be honoured.
func validateHostNetworkPorts(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	if !spec.HostNetwork {
		return nil
	}
	var allErrs field.ErrorList
	for i, ctr := range spec.Containers {
		for j, port := range ctr.Ports {
			if port.HostPort != port.ContainerPort {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("containers").Index(i).Child("ports").Index(j).Child("hostPort"),
					port.HostPort, "must match `containerPort` when `hostNetwork` is true"))
			}
		}
	}
	return allErrs
}

// validateHostUsers: a pod in its own user namespace may not share the
// host's other namespaces, where its remapped IDs would be meaningless.
func validateHostUsers(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	if spec.HostUsers == nil || *spec.HostUsers {
		return nil
	}
	var allErrs field.ErrorList
	const detail = "when `pod.Spec.HostUsers` is false"
	if spec.HostNetwork {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("hostNetwork"), detail))
	}
	if spec.HostPID {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("hostPID"), detail))
	}
	if spec.HostIPC {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("hostIPC"), detail))
	}
	return allErrs
}

func validatePodResourceClaims(claims []corev1.PodResourceClaim, fldPath *field.Path) (sets.Set[string], field.ErrorList) {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i, claim := range claims {
		idxPath := fldPath.Index(i)
		switch {
		case claim.Name == "":
			allErrs = append(allErrs, field.Required(idxPath.Child("name"), ""))
		case names.Has(claim.Name):
			allErrs = append(allErrs, field.Duplicate(idxPath.Child("name"), claim.Name))
		default:
			allErrs = append(allErrs, validateDNS1123Label(claim.Name, idxPath.Child("name"))...)
			names.Insert(claim.Name)
		}
		switch {
		case claim.ResourceClaimName != nil && claim.ResourceClaimTemplateName != nil:
			allErrs = append(allErrs, field.Invalid(idxPath, claim, "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"))
		case claim.ResourceClaimName == nil && claim.ResourceClaimTemplateName == nil:
			allErrs = append(allErrs, field.Invalid(idxPath, claim, "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"))
		}
		if claim.ResourceClaimName != nil {
			allErrs = append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, *claim.ResourceClaimName, idxPath.Child("resourceClaimName"))...)
		}
		if claim.ResourceClaimTemplateName != nil {
			allErrs = append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, *claim.ResourceClaimTemplateName, idxPath.Child("resourceClaimTemplateName"))...)
		}
	}
	return names, allErrs
}

func validatePodLevelResources(req *corev1.ResourceRequirements, claimNames sets.Set[string], fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if req.Claims != nil {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("claims"), "claims cannot be set for Resources at pod-level"))
	}
	nameFn := func(name corev1.ResourceName, p *field.Path) field.ErrorList {
		if errs := validateResourceName(name, p); len(errs) > 0 {
			return errs
		}
		if !podLevelResources.Has(name) && !isHugePageResourceName(name) {
			return field.ErrorList{field.NotSupported(p, name, append(sets.List(podLevelResources), corev1.ResourceHugePagesPrefix+"*"))}
		}
		return nil
	}
	return append(allErrs, validateResourceRequirements(req, nameFn, claimNames, fldPath)...)
}

func validatePodSecurityContext(spec *corev1.PodSpec, specPath *field.Path) field.ErrorList {
	sc := spec.SecurityContext
	if sc == nil {
		return nil
	}
	fldPath := specPath.Child("securityContext")
	var allErrs field.ErrorList
	if sc.FSGroup != nil {
		allErrs = append(allErrs, validateGroupID(*sc.FSGroup, fldPath.Child("fsGroup"))...)
	}
	if sc.RunAsUser != nil {
		allErrs = append(allErrs, validateUserID(*sc.RunAsUser, fldPath.Child("runAsUser"))...)
	}
	if sc.RunAsGroup != nil {
		allErrs = append(allErrs, validateGroupID(*sc.RunAsGroup, fldPath.Child("runAsGroup"))...)
	}
	for i, gid := range sc.SupplementalGroups {
		allErrs = append(allErrs, validateGroupID(gid, fldPath.Child("supplementalGroups").Index(i))...)
	}
	if spec.ShareProcessNamespace != nil && *spec.ShareProcessNamespace && spec.HostPID {
		allErrs = append(allErrs, field.Invalid(specPath.Child("shareProcessNamespace"), *spec.ShareProcessNamespace, "ShareProcessNamespace and HostPID cannot both be enabled"))
	}
	allErrs = append(allErrs, validateSysctls(spec, fldPath.Child("sysctls"))...)
	if sc.FSGroupChangePolicy != nil && !supportedFSGroupChangePolicies.Has(*sc.FSGroupChangePolicy) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("fsGroupChangePolicy"), *sc.FSGroupChangePolicy, sets.List(supportedFSGroupChangePolicies)))
	}
	allErrs = append(allErrs, validateSeccompProfile(sc.SeccompProfile, fldPath.Child("seccompProfile"))...)
	allErrs = append(allErrs, validateAppArmorProfile(sc.AppArmorProfile, fldPath.Child("appArmorProfile"))...)
	if sc.SupplementalGroupsPolicy != nil && !supportedSupplementalGroupsPolicies.Has(*sc.SupplementalGroupsPolicy) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("supplementalGroupsPolicy"), *sc.SupplementalGroupsPolicy, sets.List(supportedSupplementalGroupsPolicies)))
	}
	if sc.SELinuxChangePolicy != nil && !supportedSELinuxChangePolicies.Has(*sc.SELinuxChangePolicy) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("seLinuxChangePolicy"), *sc.SELinuxChangePolicy, sets.List(supportedSELinuxChangePolicies)))
	}
	return allErrs
}

// validateSysctls checks sysctl names and refuses namespaced sysctls in
// namespaces the pod shares with the host, where they would change the node.
func validateSysctls(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, s := range spec.SecurityContext.Sysctls {
		namePath := fldPath.Index(i).Child("name")
		switch {
		case s.Name == "":
			allErrs = append(allErrs, field.Required(namePath, ""))
		case len(s.Name) > sysctlMaxLength || !sysctlRegexp.MatchString(s.Name):
			allErrs = append(allErrs, field.Invalid(namePath, s.Name, fmt.Sprintf("must have at most %d characters and match regex %s", sysctlMaxLength, sysctlRegexp)))
		case seen.Has(s.Name):
			allErrs = append(allErrs, field.Duplicate(namePath, s.Name))
		}
		seen.Insert(s.Name)
		// The kernel reads a name whose first separator is '/' with '.' and '/' swapped; the
		// library knows that, and which names each namespace holds.
		switch ns, _, _ := sysctl.GetNamespace(s.Name); {
		case ns == sysctl.NetNamespace && spec.HostNetwork:
			allErrs = append(allErrs, field.Invalid(namePath, s.Name, "may not be specified when 'hostNetwork' is true"))
		case ns == sysctl.IPCNamespace && spec.HostIPC:
			allErrs = append(allErrs, field.Invalid(namePath, s.Name, "may not be specified when 'hostIPC' is true"))
		}
	}
	return allErrs
}

// tolerationValueRules say, per operator, what a toleration's value may be:
// Equal (also spelled "", its default) compares with a label value; Exists
// matches any value, so one given would be ignored. Each returns why the
// value is refused, or "".
var tolerationValueRules = map[corev1.TolerationOperator]func(value string) string{
	corev1.TolerationOpEqual: labelValueRefusal,
	"":                       labelValueRefusal,
	corev1.TolerationOpExists: func(value string) string {
		if value != "" {
			return "value must be empty when `operator` is 'Exists'"
		}
		return ""
	},
}

func labelValueRefusal(value string) string {
	return strings.Join(utilvalidation.IsValidLabelValue(value), ";")
}

// tolerationRules are the rules of one toleration, in report order.
var tolerationRules = []func(t *corev1.Toleration, fldPath *field.Path) field.ErrorList{
	// An empty key with Exists matches every taint; an empty key with any
	// other operator matches none.
	func(t *corev1.Toleration, fldPath *field.Path) field.ErrorList {
		if t.Key != "" {
			return metav1validation.ValidateLabelName(t.Key, fldPath.Child("key"))
		}
		if t.Operator != corev1.TolerationOpExists {
			return field.ErrorList{field.Invalid(fldPath.Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\"")}
		}
		return nil
	},
	// Only a NoExecute taint evicts, so only it has a time to tolerate.
	func(t *corev1.Toleration, fldPath *field.Path) field.ErrorList {
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			return field.ErrorList{field.Invalid(fldPath.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set")}
		}
		return nil
	},
	func(t *corev1.Toleration, fldPath *field.Path) field.ErrorList {
		refuse, known := tolerationValueRules[t.Operator]
		if !known {
			return field.ErrorList{field.NotSupported(fldPath.Child("operator"), t.Operator, supportedTolerationOperators)}
		}
		if why := refuse(t.Value); why != "" {
			return field.ErrorList{field.Invalid(fldPath.Child("operator"), t.Value, why)}
		}
		return nil
	},
	// An empty effect matches every effect.
	func(t *corev1.Toleration, fldPath *field.Path) field.ErrorList {
		return validateTaintEffect(t.Effect, true, fldPath.Child("effect"))
	},
}

func validateTolerations(tolerations []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range tolerations {
		for _, rule := range tolerationRules {
			errs = append(errs, rule(&tolerations[i], fldPath.Index(i))...)
		}
	}
	return errs
}

func validateAffinity(affinity *corev1.Affinity, fldPath *field.Path) field.ErrorList {
	if affinity == nil {
		return nil
	}
	var allErrs field.ErrorList
	if na := affinity.NodeAffinity; na != nil {
		naPath := fldPath.Child("nodeAffinity")
		if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			allErrs = append(allErrs, validateNodeSelector(na.RequiredDuringSchedulingIgnoredDuringExecution, naPath.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		}
		prefPath := naPath.Child("preferredDuringSchedulingIgnoredDuringExecution")
		for i, term := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			allErrs = append(allErrs, validateWeight(term.Weight, prefPath.Index(i).Child("weight"))...)
			// Preferred terms may name values that are not valid label
			// values: they can still be satisfied on a single-node cluster.
			allErrs = append(allErrs, validateNodeSelectorTerm(term.Preference, false, prefPath.Index(i).Child("preference"))...)
		}
	}
	if pa := affinity.PodAffinity; pa != nil {
		allErrs = append(allErrs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, fldPath.Child("podAffinity"))...)
	}
	if pa := affinity.PodAntiAffinity; pa != nil {
		allErrs = append(allErrs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, fldPath.Child("podAntiAffinity"))...)
	}
	return allErrs
}

func validatePodAffinityTerms(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	reqPath := fldPath.Child("requiredDuringSchedulingIgnoredDuringExecution")
	for i, term := range required {
		allErrs = append(allErrs, validatePodAffinityTerm(term, reqPath.Index(i))...)
	}
	prefPath := fldPath.Child("preferredDuringSchedulingIgnoredDuringExecution")
	for i, term := range preferred {
		allErrs = append(allErrs, validateWeight(term.Weight, prefPath.Index(i).Child("weight"))...)
		allErrs = append(allErrs, validatePodAffinityTerm(term.PodAffinityTerm, prefPath.Index(i).Child("podAffinityTerm"))...)
	}
	return allErrs
}

func validatePodAffinityTerm(term corev1.PodAffinityTerm, fldPath *field.Path) field.ErrorList {
	allErrs := validateLabelSelector(term.LabelSelector, fldPath.Child("labelSelector"))
	allErrs = append(allErrs, validateLabelSelector(term.NamespaceSelector, fldPath.Child("namespaceSelector"))...)
	for i, ns := range term.Namespaces {
		allErrs = append(allErrs, nameErrors(apivalidation.ValidateNamespaceName, ns, fldPath.Child("namespaces").Index(i))...)
	}
	allErrs = append(allErrs, validateLabelKeys(term.MatchLabelKeys, fldPath.Child("matchLabelKeys"))...)
	allErrs = append(allErrs, validateLabelKeys(term.MismatchLabelKeys, fldPath.Child("mismatchLabelKeys"))...)
	return append(allErrs, validateTopologyKey(term.TopologyKey, fldPath.Child("topologyKey"))...)
}

// validateTopologyKey: a term's topology key names the node label whose
// values divide the nodes into domains.
func validateTopologyKey(key string, fldPath *field.Path) field.ErrorList {
	if key == "" {
		return field.ErrorList{field.Required(fldPath, "can not be empty")}
	}
	return metav1validation.ValidateLabelName(key, fldPath)
}

func validateLabelKeys(keys []string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, key := range keys {
		allErrs = append(allErrs, metav1validation.ValidateLabelName(key, fldPath.Index(i))...)
	}
	return allErrs
}

func validateWeight(weight int32, fldPath *field.Path) field.ErrorList {
	if weight <= 0 || weight > 100 {
		return field.ErrorList{field.Invalid(fldPath, weight, "must be in the range 1-100")}
	}
	return nil
}

func validateTopologySpreadConstraints(constraints []corev1.TopologySpreadConstraint, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, c := range constraints {
		idxPath := fldPath.Index(i)
		if c.MaxSkew <= 0 {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("maxSkew"), c.MaxSkew, isNotPositiveErrorMsg))
		}
		if c.TopologyKey == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("topologyKey"), "can not be empty"))
		}
		if !supportedWhenUnsatisfiable.Has(c.WhenUnsatisfiable) {
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("whenUnsatisfiable"), c.WhenUnsatisfiable, sets.List(supportedWhenUnsatisfiable)))
		}
		// {topologyKey, whenUnsatisfiable} identifies a constraint.
		for _, other := range constraints[i+1:] {
			if c.TopologyKey == other.TopologyKey && c.WhenUnsatisfiable == other.WhenUnsatisfiable {
				allErrs = append(allErrs, field.Duplicate(idxPath.Child("{topologyKey, whenUnsatisfiable}"), fmt.Sprintf("{%v, %v}", c.TopologyKey, c.WhenUnsatisfiable)))
				break
			}
		}
		if c.MinDomains != nil {
			if *c.MinDomains <= 0 {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("minDomains"), *c.MinDomains, isNotPositiveErrorMsg))
			}
			if c.WhenUnsatisfiable != corev1.DoNotSchedule {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("minDomains"), *c.MinDomains,
					fmt.Sprintf("can only use minDomains if whenUnsatisfiable=%s, not %s", corev1.DoNotSchedule, c.WhenUnsatisfiable)))
			}
		}
		if c.NodeAffinityPolicy != nil && !supportedNodeInclusionPolicies.Has(*c.NodeAffinityPolicy) {
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("nodeAffinityPolicy"), *c.NodeAffinityPolicy, sets.List(supportedNodeInclusionPolicies)))
		}
		if c.NodeTaintsPolicy != nil && !supportedNodeInclusionPolicies.Has(*c.NodeTaintsPolicy) {
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("nodeTaintsPolicy"), *c.NodeTaintsPolicy, sets.List(supportedNodeInclusionPolicies)))
		}
		if len(c.MatchLabelKeys) > 0 && c.LabelSelector == nil {
			allErrs = append(allErrs, field.Forbidden(idxPath.Child("matchLabelKeys"), "must not be specified when labelSelector is not set"))
		}
		allErrs = append(allErrs, validateLabelKeys(c.MatchLabelKeys, idxPath.Child("matchLabelKeys"))...)
		allErrs = append(allErrs, validateLabelSelector(c.LabelSelector, idxPath.Child("labelSelector"))...)
	}
	return allErrs
}

func validateSchedulingGates(gates []corev1.PodSchedulingGate, fldPath *field.Path) field.ErrorList {
	seen := sets.New[string]()
	var errs field.ErrorList
	for i := range gates {
		errs = append(errs, validateQualifiedName(gates[i].Name, fldPath.Index(i))...)
		errs = append(errs, claimUnique(seen, gates[i].Name, fldPath.Index(i))...)
	}
	return errs
}

// dnsList is one of the resolver lists a pod's DNS config may set: the
// limits libc's resolver puts on it, and the rule for each entry.
type dnsList struct {
	field   string
	entries func(*corev1.PodDNSConfig) []string
	limits  []dnsLimit
	entry   func(value string, fldPath *field.Path) field.ErrorList
}

type dnsLimit struct {
	exceeded func(entries []string) bool
	detail   string
}

var dnsLists = []dnsList{
	{
		field:   "nameservers",
		entries: func(c *corev1.PodDNSConfig) []string { return c.Nameservers },
		limits: []dnsLimit{{
			func(e []string) bool { return len(e) > maxDNSNameservers },
			fmt.Sprintf("must not have more than %v nameservers", maxDNSNameservers),
		}},
		entry: func(ip string, fldPath *field.Path) field.ErrorList { return utilvalidation.IsValidIP(fldPath, ip) },
	},
	{
		field:   "searches",
		entries: func(c *corev1.PodDNSConfig) []string { return c.Searches },
		limits: []dnsLimit{
			{
				func(e []string) bool { return len(e) > maxDNSSearchPaths },
				fmt.Sprintf("must not have more than %v search paths", maxDNSSearchPaths),
			},
			// resolv.conf holds the list on one line, spaces between.
			{
				func(e []string) bool { return len(strings.Join(e, " ")) > maxDNSSearchListChars },
				fmt.Sprintf("must not have more than %v characters (including spaces) in the search list", maxDNSSearchListChars),
			},
		},
		entry: validateSearchDomain,
	},
}

// validateSearchDomain: "." stands for the root, and a trailing dot marks a
// name as absolute; underscores occur in real-world domains.
func validateSearchDomain(search string, fldPath *field.Path) field.ErrorList {
	if search == "." {
		return nil
	}
	return invalidEach(fldPath, search, utilvalidation.IsDNS1123SubdomainWithUnderscore(strings.TrimSuffix(search, ".")))
}

// validatePodDNSConfig checks resolver settings; with dnsPolicy None the
// pod gets nothing but this config, so it needs a nameserver.
func validatePodDNSConfig(cfg *corev1.PodDNSConfig, policy corev1.DNSPolicy, fldPath *field.Path) field.ErrorList {
	if policy == corev1.DNSNone {
		if cfg == nil {
			return field.ErrorList{field.Required(fldPath, fmt.Sprintf("must provide `dnsConfig` when `dnsPolicy` is %s", corev1.DNSNone))}
		}
		if len(cfg.Nameservers) == 0 {
			return field.ErrorList{field.Required(fldPath.Child("nameservers"), fmt.Sprintf("must provide at least one DNS nameserver when `dnsPolicy` is %s", corev1.DNSNone))}
		}
	}
	if cfg == nil {
		return nil
	}
	var errs field.ErrorList
	for _, list := range dnsLists {
		entries, listPath := list.entries(cfg), fldPath.Child(list.field)
		for _, l := range list.limits {
			if l.exceeded(entries) {
				errs = append(errs, field.Invalid(listPath, entries, l.detail))
			}
		}
		for i, e := range entries {
			errs = append(errs, list.entry(e, listPath.Index(i))...)
		}
	}
	for i, opt := range cfg.Options {
		if opt.Name == "" {
			errs = append(errs, field.Required(fldPath.Child("options").Index(i), "must not be empty"))
		}
	}
	return errs
}

// validatePodOS enforces that a pod declaring its OS only uses settings that
// OS understands.
func validatePodOS(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	if spec.OS == nil {
		return nil
	}
	osPath := fldPath.Child("os")
	if spec.OS.Name == "" {
		return field.ErrorList{field.Required(osPath.Child("name"), "cannot be empty")}
	}
	if !supportedOSNames.Has(spec.OS.Name) {
		return field.ErrorList{field.NotSupported(osPath, spec.OS.Name, sets.List(supportedOSNames))}
	}
	if spec.OS.Name == corev1.Linux {
		return validateLinuxPod(spec, fldPath)
	}
	return validateWindowsPod(spec, fldPath)
}

func validateLinuxPod(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	const detail = "windows options cannot be set for a linux pod"
	var allErrs field.ErrorList
	if spec.SecurityContext != nil && spec.SecurityContext.WindowsOptions != nil {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("securityContext", "windowsOptions"), detail))
	}
	for c := range podwalk.Containers(spec) {
		if c.SecurityContext != nil && c.SecurityContext.WindowsOptions != nil {
			allErrs = append(allErrs, field.Forbidden(c.Path(fldPath).Child("securityContext", "windowsOptions"), detail))
		}
	}
	return allErrs
}

func validateWindowsPod(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	const detail = "cannot be set for a windows pod"
	var allErrs field.ErrorList
	forbid := func(set bool, p *field.Path) {
		if set {
			allErrs = append(allErrs, field.Forbidden(p, detail))
		}
	}
	forbid(spec.HostUsers != nil, fldPath.Child("hostUsers"))
	forbid(spec.HostPID, fldPath.Child("hostPID"))
	forbid(spec.HostIPC, fldPath.Child("hostIPC"))
	forbid(spec.ShareProcessNamespace != nil, fldPath.Child("shareProcessNamespace"))
	if sc := spec.SecurityContext; sc != nil {
		scPath := fldPath.Child("securityContext")
		forbid(sc.AppArmorProfile != nil, scPath.Child("appArmorProfile"))
		forbid(sc.SELinuxOptions != nil, scPath.Child("seLinuxOptions"))
		forbid(sc.SeccompProfile != nil, scPath.Child("seccompProfile"))
		forbid(sc.FSGroup != nil, scPath.Child("fsGroup"))
		forbid(sc.FSGroupChangePolicy != nil, scPath.Child("fsGroupChangePolicy"))
		forbid(len(sc.Sysctls) > 0, scPath.Child("sysctls"))
		forbid(sc.RunAsUser != nil, scPath.Child("runAsUser"))
		forbid(sc.RunAsGroup != nil, scPath.Child("runAsGroup"))
		forbid(sc.SupplementalGroups != nil, scPath.Child("supplementalGroups"))
		forbid(sc.SupplementalGroupsPolicy != nil, scPath.Child("supplementalGroupsPolicy"))
		forbid(sc.SELinuxChangePolicy != nil, scPath.Child("seLinuxChangePolicy"))
	}
	for c := range podwalk.Containers(spec) {
		sc := c.SecurityContext
		if sc == nil {
			continue
		}
		scPath := c.Path(fldPath).Child("securityContext")
		forbid(sc.AppArmorProfile != nil, scPath.Child("appArmorProfile"))
		forbid(sc.SELinuxOptions != nil, scPath.Child("seLinuxOptions"))
		forbid(sc.SeccompProfile != nil, scPath.Child("seccompProfile"))
		forbid(sc.Capabilities != nil, scPath.Child("capabilities"))
		forbid(sc.ReadOnlyRootFilesystem != nil, scPath.Child("readOnlyRootFilesystem"))
		forbid(sc.Privileged != nil, scPath.Child("privileged"))
		forbid(sc.AllowPrivilegeEscalation != nil, scPath.Child("allowPrivilegeEscalation"))
		forbid(sc.ProcMount != nil, scPath.Child("procMount"))
		forbid(sc.RunAsUser != nil, scPath.Child("runAsUser"))
		forbid(sc.RunAsGroup != nil, scPath.Child("runAsGroup"))
	}
	return allErrs
}

// validateStopSignal: which signals exist depends on the OS, so a custom
// stop signal needs spec.os.
func validateStopSignal(sig corev1.Signal, os *corev1.PodOS, fldPath *field.Path) field.ErrorList {
	switch {
	case os == nil:
		return field.ErrorList{field.Forbidden(fldPath, "may not be set for containers with empty `spec.os.name`")}
	case os.Name == corev1.Windows && !windowsStopSignals.Has(sig):
		return field.ErrorList{field.NotSupported(fldPath, sig, sets.List(windowsStopSignals))}
	case os.Name == corev1.Linux && !linuxStopSignals.Has(sig):
		return field.ErrorList{field.NotSupported(fldPath, sig, sets.List(linuxStopSignals))}
	}
	return nil
}
