package validation

import (
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/idplane/idplane/internal/podwalk"
)

// updatablePodSpecFields is quoted in the error for forbidden pod updates;
// the wording is upstream's, which users and tools recognise.
var updatablePodSpecFields = []string{
	"`spec.containers[*].image`",
	"`spec.initContainers[*].image`",
	"`spec.activeDeadlineSeconds`",
	"`spec.tolerations` (only additions to existing tolerations)",
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
}

var supportedPodPhases = sets.New(
	corev1.PodPending,
	corev1.PodRunning,
	corev1.PodSucceeded,
	corev1.PodFailed,
	corev1.PodUnknown,
)

// systemPodConditions are set by Kubernetes itself and exempt from the
// qualified-name rule that custom readiness conditions follow.
var systemPodConditions = sets.New(
	corev1.PodScheduled,
	corev1.PodReady,
	corev1.PodInitialized,
)

// forbiddenOnCreate are what a new pod may not have.
var forbiddenOnCreate = []struct {
	field  string
	has    func(*corev1.PodSpec) bool
	detail string
}{
	// Debug containers join running pods through their own subresource.
	{"ephemeralContainers", func(s *corev1.PodSpec) bool { return len(s.EphemeralContainers) > 0 }, "cannot be set on create"},
	// A gated pod is not ready to be scheduled, let alone bound.
	{"nodeName", func(s *corev1.PodSpec) bool { return s.NodeName != "" && len(s.SchedulingGates) != 0 }, "cannot be set until all schedulingGates have been cleared"},
}

// ValidatePod validates a pod on create.
func ValidatePod(p *corev1.Pod) field.ErrorList {
	errs := validatePodMetadataAndSpec(p)
	specPath := field.NewPath("spec")
	for _, f := range forbiddenOnCreate {
		if f.has(&p.Spec) {
			errs = append(errs, field.Forbidden(specPath.Child(f.field), f.detail))
		}
	}
	return errs
}

// specAllowance is a change of a pod's spec that an update may make: check
// reports what is wrong with the change (stop ends the update's checks there)
// and undo takes the change back on rest, a copy of the new spec, so that what
// remains can be compared with the old spec.
type specAllowance struct {
	check func(cur, old *corev1.PodSpec, specPath *field.Path) (errs field.ErrorList, stop bool)
	undo  func(rest, old *corev1.PodSpec)
}

// podSpecAllowances are the changes upstream allows, in the order they are
// checked: container images, a shorter active deadline, added tolerations
// (existing ones may only change tolerationSeconds), removed scheduling gates
// and, while the pod is still gated, added node selector entries.
var podSpecAllowances = []specAllowance{
	{
		check: func(cur, old *corev1.PodSpec, specPath *field.Path) (field.ErrorList, bool) {
			return validateContainerUpdates(cur.Containers, old.Containers, specPath.Child("containers"))
		},
		undo: func(rest, old *corev1.PodSpec) {
			for i := range rest.Containers {
				rest.Containers[i].Image = old.Containers[i].Image
			}
		},
	},
	{
		check: func(cur, old *corev1.PodSpec, specPath *field.Path) (field.ErrorList, bool) {
			return validateContainerUpdates(cur.InitContainers, old.InitContainers, specPath.Child("initContainers"))
		},
		undo: func(rest, old *corev1.PodSpec) {
			for i := range rest.InitContainers {
				rest.InitContainers[i].Image = old.InitContainers[i].Image
			}
		},
	},
	{
		check: func(cur, old *corev1.PodSpec, specPath *field.Path) (field.ErrorList, bool) {
			return validateDeadlineUpdate(cur.ActiveDeadlineSeconds, old.ActiveDeadlineSeconds, specPath.Child("activeDeadlineSeconds"))
		},
		undo: func(rest, old *corev1.PodSpec) { rest.ActiveDeadlineSeconds = old.ActiveDeadlineSeconds },
	},
	{
		check: func(cur, old *corev1.PodSpec, specPath *field.Path) (field.ErrorList, bool) {
			return validateOnlyAddedTolerations(cur.Tolerations, old.Tolerations, specPath.Child("tolerations")), false
		},
		undo: func(rest, old *corev1.PodSpec) { rest.Tolerations = old.Tolerations },
	},
	{
		check: func(cur, old *corev1.PodSpec, specPath *field.Path) (field.ErrorList, bool) {
			return validateOnlyDeletedSchedulingGates(cur.SchedulingGates, old.SchedulingGates, specPath.Child("schedulingGates")), false
		},
		undo: func(rest, old *corev1.PodSpec) { rest.SchedulingGates = old.SchedulingGates },
	},
	{
		// A gated pod has not been scheduled yet, so constraining it
		// further is harmless.
		check: func(cur, old *corev1.PodSpec, specPath *field.Path) (field.ErrorList, bool) {
			if len(old.SchedulingGates) == 0 || apiequality.Semantic.DeepEqual(cur.NodeSelector, old.NodeSelector) {
				return nil, false
			}
			return validateNodeSelectorAdditions(cur.NodeSelector, old.NodeSelector, specPath.Child("nodeSelector")), false
		},
		undo: func(rest, old *corev1.PodSpec) {
			if len(old.SchedulingGates) > 0 {
				rest.NodeSelector = old.NodeSelector
			}
		},
	},
}

// ValidatePodUpdate validates an update of a pod. A pod's spec is fixed once
// created, apart from the changes in podSpecAllowances.
func ValidatePodUpdate(newP, oldP *corev1.Pod) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&newP.ObjectMeta, &oldP.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validatePodMetadataAndSpec(newP)...)
	allErrs = append(allErrs, validatePodAnnotationUpdates(newP, oldP)...)
	specPath := field.NewPath("spec")
	for _, a := range podSpecAllowances {
		errs, stop := a.check(&newP.Spec, &oldP.Spec, specPath)
		allErrs = append(allErrs, errs...)
		if stop {
			return allErrs
		}
	}
	if apiequality.Semantic.DeepEqual(newP.Spec, oldP.Spec) {
		return allErrs
	}
	rest := newP.Spec.DeepCopy()
	for _, a := range podSpecAllowances {
		a.undo(rest, &oldP.Spec)
	}
	if !apiequality.Semantic.DeepEqual(*rest, oldP.Spec) {
		diff := cmp.Diff(oldP.Spec, *rest)
		allErrs = append(allErrs, field.Forbidden(specPath,
			fmt.Sprintf("pod updates may not change fields other than %s\n%v", strings.Join(updatablePodSpecFields, ","), diff)))
	}
	return allErrs
}

// validateDeadlineUpdate: activeDeadlineSeconds may be set, or lowered, but
// never raised or cleared: it is a promise to the cluster about how long the
// pod runs. stop says the rest of the update goes unchecked, as upstream has
// it after a refused deadline.
func validateDeadlineUpdate(cur, old *int64, fldPath *field.Path) (errs field.ErrorList, stop bool) {
	switch {
	case cur == nil && old != nil:
		return field.ErrorList{field.Invalid(fldPath, cur, "must not update from a positive integer to nil value")}, false
	case cur == nil:
		return nil, false
	case *cur < 0 || *cur > math.MaxInt32:
		return field.ErrorList{field.Invalid(fldPath, *cur, utilvalidation.InclusiveRangeError(0, math.MaxInt32))}, true
	case old != nil && *cur > *old:
		return field.ErrorList{field.Invalid(fldPath, *cur, "must be less than or equal to previous value")}, true
	}
	return nil, false
}

// ValidatePodStatusUpdate validates a write to the status subresource. The
// strategy keeps the spec, so this checks the status and the metadata.
func ValidatePodStatusUpdate(newP, oldP *corev1.Pod) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&newP.ObjectMeta, &oldP.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validatePodAnnotationUpdates(newP, oldP)...)
	allErrs = append(allErrs, validatePodAnnotations(newP.Annotations, &newP.Spec, field.NewPath("metadata", "annotations"))...)
	statusPath := field.NewPath("status")

	if newP.Spec.NodeName != oldP.Spec.NodeName {
		allErrs = append(allErrs, field.Forbidden(statusPath.Child("nodeName"), "may not be changed directly"))
	}
	if newP.Status.Phase != "" && !supportedPodPhases.Has(newP.Status.Phase) {
		allErrs = append(allErrs, field.NotSupported(statusPath.Child("phase"), newP.Status.Phase, sets.List(supportedPodPhases)))
	}
	for i, cond := range newP.Status.Conditions {
		if !systemPodConditions.Has(cond.Type) {
			allErrs = append(allErrs, validateQualifiedName(string(cond.Type), statusPath.Child("conditions").Index(i).Child("type"))...)
		}
	}
	if n := newP.Status.NominatedNodeName; n != "" && n != oldP.Status.NominatedNodeName {
		allErrs = append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, n, statusPath.Child("nominatedNodeName"))...)
	}
	// The QoS class is derived from the spec at creation; it may be filled
	// in once but never changed.
	if oldP.Status.QOSClass != "" {
		allErrs = append(allErrs, apivalidation.ValidateImmutableField(newP.Status.QOSClass, oldP.Status.QOSClass, statusPath.Child("qosClass"))...)
	}

	allErrs = append(allErrs, validateContainerStatusNames(newP.Status.ContainerStatuses, containerNames(newP.Spec.Containers), statusPath.Child("containerStatuses"))...)
	allErrs = append(allErrs, validateContainerStatusNames(newP.Status.InitContainerStatuses, containerNames(newP.Spec.InitContainers), statusPath.Child("initContainerStatuses"))...)
	allErrs = append(allErrs, validateContainerStatusNames(newP.Status.EphemeralContainerStatuses, ephemeralContainerNames(newP.Spec.EphemeralContainers), statusPath.Child("ephemeralContainerStatuses"))...)

	// A terminated container of a pod that does not restart it stays
	// terminated; the kubelet never reports otherwise.
	allErrs = append(allErrs, validateContainerStateTransition(newP.Status.ContainerStatuses, oldP.Status.ContainerStatuses, oldP.Spec.RestartPolicy, nil, statusPath.Child("containerStatuses"))...)
	allErrs = append(allErrs, validateContainerStateTransition(newP.Status.InitContainerStatuses, oldP.Status.InitContainerStatuses, oldP.Spec.RestartPolicy, oldP.Spec.InitContainers, statusPath.Child("initContainerStatuses"))...)
	allErrs = append(allErrs, validateContainerStateTransition(newP.Status.EphemeralContainerStatuses, oldP.Status.EphemeralContainerStatuses, corev1.RestartPolicyNever, nil, statusPath.Child("ephemeralContainerStatuses"))...)

	allErrs = append(allErrs, validateResourceClaimStatuses(newP.Status.ResourceClaimStatuses, newP.Spec.ResourceClaims, statusPath.Child("resourceClaimStatuses"))...)
	allErrs = append(allErrs, validatePodIPs(newP.Status.PodIPs, statusPath.Child("podIPs"))...)
	return append(allErrs, validateHostIPs(&newP.Status, statusPath.Child("hostIPs"))...)
}

// ValidatePodEphemeralContainersUpdate validates a write to the
// ephemeralcontainers subresource: debug containers may be added, never
// changed or removed, and nothing else in the spec may change.
func ValidatePodEphemeralContainersUpdate(newP, oldP *corev1.Pod) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&newP.ObjectMeta, &oldP.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validatePodMetadataAndSpec(newP)...)
	allErrs = append(allErrs, validatePodAnnotationUpdates(newP, oldP)...)

	// The kubelet runs static pods from files; their API mirrors cannot
	// grow containers.
	if _, ok := oldP.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods do not support ephemeral containers")}
	}

	specPath := field.NewPath("spec", "ephemeralContainers")
	byName := map[string]*corev1.EphemeralContainer{}
	for i := range newP.Spec.EphemeralContainers {
		byName[newP.Spec.EphemeralContainers[i].Name] = &newP.Spec.EphemeralContainers[i]
	}
	for _, old := range oldP.Spec.EphemeralContainers {
		cur, ok := byName[old.Name]
		switch {
		case !ok:
			allErrs = append(allErrs, field.Forbidden(specPath, fmt.Sprintf("existing ephemeral containers %q may not be removed\n", old.Name)))
		case !apiequality.Semantic.DeepEqual(old, *cur):
			allErrs = append(allErrs, field.Forbidden(specPath, fmt.Sprintf("existing ephemeral containers %q may not be changed\n%v", old.Name, cmp.Diff(old, *cur))))
		}
	}

	rest := newP.Spec.DeepCopy()
	rest.EphemeralContainers = oldP.Spec.EphemeralContainers
	if !apiequality.Semantic.DeepEqual(*rest, oldP.Spec) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec"), "only ephemeralContainers may be changed through the ephemeralcontainers subresource\n"+cmp.Diff(oldP.Spec, *rest)))
	}
	return allErrs
}

// ValidatePodBinding validates a binding of a pod to a node.
func ValidatePodBinding(b *corev1.Binding) field.ErrorList {
	var allErrs field.ErrorList
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		allErrs = append(allErrs, field.NotSupported(field.NewPath("target", "kind"), b.Target.Kind, []string{"Node", "<empty>"}))
	}
	if b.Target.Name == "" {
		allErrs = append(allErrs, field.Required(field.NewPath("target", "name"), ""))
	}
	return allErrs
}

// validatePodMetadataAndSpec holds the checks shared by create and update.
func validatePodMetadataAndSpec(p *corev1.Pod) field.ErrorList {
	metaPath := field.NewPath("metadata")
	specPath := field.NewPath("spec")
	allErrs := validateObjectMeta(&p.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, metaPath)
	allErrs = append(allErrs, validatePodAnnotations(p.Annotations, &p.Spec, metaPath.Child("annotations"))...)
	allErrs = append(allErrs, validatePodSpec(&p.Spec, p.Name, specPath)...)

	// A projected token is minted for the pod's service account; without
	// one there is nothing to mint it for.
	if sa, _ := effectiveServiceAccountName(&p.Spec, specPath); sa == "" {
		for vi, vol := range p.Spec.Volumes {
			if vol.Projected == nil {
				continue
			}
			for si, src := range vol.Projected.Sources {
				if src.ServiceAccountToken != nil {
					allErrs = append(allErrs, field.Forbidden(specPath.Child("volumes").Index(vi).Child("projected", "sources").Index(si).Child("serviceAccountToken"),
						"must not be specified when serviceAccountName is not set"))
				}
			}
		}
	}
	for i, c := range p.Spec.Containers {
		allErrs = append(allErrs, validateImageWhitespace(c.Image, specPath.Child("containers").Index(i).Child("image"))...)
	}
	for i, c := range p.Spec.InitContainers {
		allErrs = append(allErrs, validateImageWhitespace(c.Image, specPath.Child("initContainers").Index(i).Child("image"))...)
	}
	return allErrs
}

// validatePodAnnotations checks the annotations that carry pod semantics.
func validatePodAnnotations(annotations map[string]string, spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	// Mirror pods stand for static pods of one kubelet: they must say which.
	if v, ok := annotations[corev1.MirrorPodAnnotationKey]; ok && spec.NodeName == "" {
		allErrs = append(allErrs, field.Invalid(fldPath.Key(corev1.MirrorPodAnnotationKey), v, "must set spec.nodeName if mirror pod annotation is set"))
	}
	if v, ok := annotations[corev1.PodDeletionCost]; ok {
		if _, err := strconv.ParseInt(v, 10, 32); err != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Key(corev1.PodDeletionCost), v, "must be a 32bit integer"))
		}
	}
	for k, v := range annotations {
		switch {
		case k == corev1.SeccompPodAnnotationKey || strings.HasPrefix(k, corev1.SeccompContainerAnnotationKeyPrefix):
			allErrs = append(allErrs, validateSeccompAnnotationValue(v, fldPath.Key(k))...)
		case strings.HasPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix):
			name := strings.TrimPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix)
			if !specHasContainer(spec, name) {
				allErrs = append(allErrs, field.Invalid(fldPath.Key(k), name, "container not found"))
			}
			if v != "" && v != corev1.DeprecatedAppArmorBetaProfileRuntimeDefault && v != corev1.DeprecatedAppArmorBetaProfileNameUnconfined &&
				!strings.HasPrefix(v, corev1.DeprecatedAppArmorBetaProfileNamePrefix) {
				allErrs = append(allErrs, field.Invalid(fldPath.Key(k), v, fmt.Sprintf("invalid AppArmor profile name: %q", v)))
			}
		}
	}
	return allErrs
}

func validateSeccompAnnotationValue(p string, fldPath *field.Path) field.ErrorList {
	switch {
	case p == corev1.SeccompProfileRuntimeDefault, p == corev1.DeprecatedSeccompProfileDockerDefault, p == corev1.SeccompProfileNameUnconfined:
		return nil
	case strings.HasPrefix(p, corev1.SeccompLocalhostProfileNamePrefix):
		return validateLocalDescendingPath(strings.TrimPrefix(p, corev1.SeccompLocalhostProfileNamePrefix), fldPath)
	}
	return field.ErrorList{field.Invalid(fldPath, p, "must be a valid seccomp profile")}
}

// frozenPodAnnotations may be neither added nor changed nor removed once a
// pod exists: the kubelet alone creates mirror pods, and reads the legacy
// AppArmor annotations only when a container starts.
var frozenPodAnnotations = []struct {
	key, prefix string // the annotation, or the prefix of a family of them
	what        string
}{
	{prefix: corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix, what: "AppArmor annotations"},
	{key: corev1.MirrorPodAnnotationKey, what: "mirror pod annotation"},
}

func validatePodAnnotationUpdates(newP, oldP *corev1.Pod) field.ErrorList {
	fldPath := field.NewPath("metadata", "annotations")
	var errs field.ErrorList
	for k, oldV := range oldP.Annotations {
		if newV, kept := newP.Annotations[k]; !kept || newV != oldV {
			errs = append(errs, frozenAnnotationErrors(k, "may not remove or update", fldPath)...)
		}
	}
	for k := range newP.Annotations {
		if _, existed := oldP.Annotations[k]; !existed {
			errs = append(errs, frozenAnnotationErrors(k, "may not add", fldPath)...)
		}
	}
	return errs
}

func frozenAnnotationErrors(key, refusal string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, a := range frozenPodAnnotations {
		if key == a.key || (a.prefix != "" && strings.HasPrefix(key, a.prefix)) {
			errs = append(errs, field.Forbidden(fldPath.Key(key), refusal+" "+a.what))
		}
	}
	return errs
}

func specHasContainer(spec *corev1.PodSpec, name string) bool {
	for c := range podwalk.Containers(spec) {
		if c.Name == name {
			return true
		}
	}
	return false
}

func validateContainerUpdates(newCs, oldCs []corev1.Container, fldPath *field.Path) (field.ErrorList, bool) {
	if len(newCs) != len(oldCs) {
		return field.ErrorList{field.Forbidden(fldPath, "pod updates may not add or remove containers")}, true
	}
	var allErrs field.ErrorList
	for i, c := range newCs {
		if c.Image == "" {
			allErrs = append(allErrs, field.Required(fldPath.Index(i).Child("image"), ""))
		}
		allErrs = append(allErrs, validateImageWhitespace(c.Image, fldPath.Index(i).Child("image"))...)
	}
	return allErrs, false
}

// validateOnlyAddedTolerations lets existing tolerations stay (possibly with
// a different tolerationSeconds, which the taint manager re-reads) and new
// ones be added.
func validateOnlyAddedTolerations(newTs, oldTs []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	for _, old := range oldTs {
		found := false
		for _, cur := range newTs {
			candidate := old
			candidate.TolerationSeconds = cur.TolerationSeconds
			if apiequality.Semantic.DeepEqual(candidate, cur) {
				found = true
				break
			}
		}
		if !found {
			return field.ErrorList{field.Forbidden(fldPath, "existing toleration can not be modified except its tolerationSeconds")}
		}
	}
	return validateTolerations(newTs, fldPath)
}

func validateOnlyDeletedSchedulingGates(newGates, oldGates []corev1.PodSchedulingGate, fldPath *field.Path) field.ErrorList {
	old := sets.New[string]()
	for _, g := range oldGates {
		old.Insert(g.Name)
	}
	var allErrs field.ErrorList
	for i, g := range newGates {
		if !old.Has(g.Name) {
			allErrs = append(allErrs, field.Forbidden(fldPath.Index(i).Child("name"), fmt.Sprintf("only deletion is allowed, but found new scheduling gate '%s'", g.Name)))
		}
	}
	return allErrs
}

func validateNodeSelectorAdditions(newSel, oldSel map[string]string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for k, v := range oldSel {
		if nv, ok := newSel[k]; !ok || nv != v {
			allErrs = append(allErrs, field.Forbidden(fldPath.Key(k), "only additions to spec.nodeSelector are allowed (no mutations or deletions)"))
		}
	}
	return allErrs
}

func containerNames(cs []corev1.Container) sets.Set[string] {
	names := sets.New[string]()
	for _, c := range cs {
		names.Insert(c.Name)
	}
	return names
}

func ephemeralContainerNames(cs []corev1.EphemeralContainer) sets.Set[string] {
	names := sets.New[string]()
	for _, c := range cs {
		names.Insert(c.Name)
	}
	return names
}

// validateContainerStatusNames requires every status to describe a
// container of the spec, once.
func validateContainerStatusNames(statuses []corev1.ContainerStatus, names sets.Set[string], fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, s := range statuses {
		namePath := fldPath.Index(i).Child("name")
		if !names.Has(s.Name) {
			allErrs = append(allErrs, field.NotFound(namePath, s.Name))
		}
		if seen.Has(s.Name) {
			allErrs = append(allErrs, field.Duplicate(namePath, s.Name))
		}
		seen.Insert(s.Name)
	}
	return allErrs
}

// validateContainerStateTransition forbids reviving terminated containers
// that the pod's restart policy says stay dead; restartable init containers
// (sidecars) always restart. Each status reporting such a container running
// again is an error of its old status.
func validateContainerStateTransition(newSs, oldSs []corev1.ContainerStatus, policy corev1.RestartPolicy, initContainers []corev1.Container, fldPath *field.Path) field.ErrorList {
	if policy == corev1.RestartPolicyAlways {
		return nil
	}
	mayRestart := sets.New[string]()
	for i := range initContainers {
		if isSidecar(&initContainers[i]) {
			mayRestart.Insert(initContainers[i].Name)
		}
	}
	revived := map[string]int{}
	for _, s := range newSs {
		if s.State.Terminated == nil {
			revived[s.Name]++
		}
	}
	var errs field.ErrorList
	for i, old := range oldSs {
		ended := old.State.Terminated
		if ended == nil || mayRestart.Has(old.Name) || (ended.ExitCode != 0 && policy == corev1.RestartPolicyOnFailure) {
			continue
		}
		for range revived[old.Name] {
			errs = append(errs, field.Forbidden(fldPath.Index(i).Child("state"), "may not be transitioned to non-terminated state"))
		}
	}
	return errs
}

func validateResourceClaimStatuses(statuses []corev1.PodResourceClaimStatus, claims []corev1.PodResourceClaim, fldPath *field.Path) field.ErrorList {
	declared := sets.New[string]()
	for _, c := range claims {
		declared.Insert(c.Name)
	}
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, s := range statuses {
		namePath := fldPath.Index(i).Child("name")
		if !declared.Has(s.Name) {
			allErrs = append(allErrs, field.Invalid(namePath, s.Name, "must match the name of an entry in `spec.resourceClaims`"))
		}
		if seen.Has(s.Name) {
			allErrs = append(allErrs, field.Duplicate(namePath, s.Name))
		}
		seen.Insert(s.Name)
		if s.ResourceClaimName != nil {
			allErrs = append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, *s.ResourceClaimName, fldPath.Index(i).Child("resourceClaimName"))...)
		}
	}
	return allErrs
}

func validatePodIPs(ips []corev1.PodIP, fldPath *field.Path) field.ErrorList {
	list := make([]string, len(ips))
	for i, ip := range ips {
		list[i] = ip.IP
	}
	return validateDualStackIPs(list, fldPath, "ip")
}

// validateHostIPs: hostIP is the legacy single-value field and must equal
// the first of hostIPs.
func validateHostIPs(status *corev1.PodStatus, fldPath *field.Path) field.ErrorList {
	if len(status.HostIPs) == 0 {
		return nil
	}
	var allErrs field.ErrorList
	if status.HostIP != status.HostIPs[0].IP {
		allErrs = append(allErrs, field.Invalid(fldPath.Index(0).Child("ip"), status.HostIPs[0].IP, "must be equal to `hostIP`"))
	}
	list := make([]string, len(status.HostIPs))
	for i, ip := range status.HostIPs {
		list[i] = ip.IP
	}
	return append(allErrs, validateDualStackIPs(list, fldPath, "ip")...)
}

// validateDualStackIPs checks a list of IPs holding at most one address per
// family and no duplicates.
func validateDualStackIPs(ips []string, fldPath *field.Path, child string) field.ErrorList {
	var allErrs field.ErrorList
	v4, v6 := 0, 0
	seen := sets.New[string]()
	for i, ip := range ips {
		idxPath := fldPath.Index(i).Child(child)
		errs := utilvalidation.IsValidIP(idxPath, ip)
		allErrs = append(allErrs, errs...)
		if len(errs) == 0 {
			if addr, err := netip.ParseAddr(ip); err == nil && addr.Is4() {
				v4++
			} else {
				v6++
			}
		}
		if seen.Has(ip) {
			allErrs = append(allErrs, field.Duplicate(fldPath.Index(i), ip))
		}
		seen.Insert(ip)
	}
	if len(ips) > 2 || v4 > 1 || v6 > 1 {
		allErrs = append(allErrs, field.Invalid(fldPath, ips, "may specify no more than one IP for each IP family"))
	}
	return allErrs
}
