package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedResizeResources = sets.New(corev1.ResourceCPU, corev1.ResourceMemory)

var supportedResizePolicies = sets.New(corev1.NotRequired, corev1.RestartContainer)

// resourceListFacts is what the checks of a resource list learn that decide checks across lists.
type resourceListFacts struct {
	hugePages, cpuOrMemory bool
}

// validateResourceRequirements checks a container's requests and limits: each list on its own,
// then requests against limits (never above; exactly at the limit for resources that cannot be
// overcommitted, which then need a limit), then that hugepages come with cpu or memory, and the
// claims the container uses.
func validateResourceRequirements(req *corev1.ResourceRequirements, nameFn func(corev1.ResourceName, *field.Path) field.ErrorList, claimNames sets.Set[string], fldPath *field.Path) field.ErrorList {
	limPath, reqPath := fldPath.Child("limits"), fldPath.Child("requests")
	limErrs, limFacts := validateResourceList(req.Limits, nameFn, limPath)
	reqErrs, reqFacts := validateResourceList(req.Requests, nameFn, reqPath)
	allErrs := append(limErrs, reqErrs...)
	for name, q := range req.Requests {
		allErrs = append(allErrs, validateRequestAgainstLimit(name, q, req.Limits, reqPath, limPath)...)
	}
	if (limFacts.hugePages || reqFacts.hugePages) && !(limFacts.cpuOrMemory || reqFacts.cpuOrMemory) {
		allErrs = append(allErrs, field.Forbidden(fldPath, "HugePages require cpu or memory"))
	}
	return append(allErrs, validateResourceClaimRefs(req.Claims, claimNames, fldPath.Child("claims"))...)
}

// validateResourceList checks the names and quantities of one list of requests or limits.
func validateResourceList(list corev1.ResourceList, nameFn func(corev1.ResourceName, *field.Path) field.ErrorList, fldPath *field.Path) (field.ErrorList, resourceListFacts) {
	var allErrs field.ErrorList
	var facts resourceListFacts
	for name, q := range list {
		p := fldPath.Key(string(name))
		allErrs = append(allErrs, nameFn(name, p)...)
		allErrs = append(allErrs, validateResourceQuantityValue(name, q, p)...)
		if isHugePageResourceName(name) {
			facts.hugePages = true
			allErrs = append(allErrs, validateHugePageValue(name, q, p)...)
		}
		facts.cpuOrMemory = facts.cpuOrMemory || supportedResizeResources.Has(name)
	}
	return allErrs, facts
}

// validateRequestAgainstLimit relates one request to its limit. The errors point at the lists,
// as upstream's do, since the fault may be on either side.
func validateRequestAgainstLimit(name corev1.ResourceName, request resource.Quantity, limits corev1.ResourceList, reqPath, limPath *field.Path) field.ErrorList {
	limit, limited := limits[name]
	overcommit := isOvercommitAllowed(name)
	switch {
	case !limited && !overcommit:
		return field.ErrorList{field.Required(limPath, "Limit must be set for non overcommitable resources")}
	case !limited:
		return nil
	case !overcommit && request.Cmp(limit) != 0:
		return field.ErrorList{field.Invalid(reqPath, request.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String()))}
	case request.Cmp(limit) > 0:
		return field.ErrorList{field.Invalid(reqPath, request.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String()))}
	}
	return nil
}

// validateResourceClaimRefs checks that a container only uses dynamic
// resource claims the pod declares, each at most once.
func validateResourceClaimRefs(claims []corev1.ResourceClaim, podClaims sets.Set[string], fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, claim := range claims {
		idxPath := fldPath.Index(i)
		if claim.Name == "" {
			allErrs = append(allErrs, field.Required(idxPath, ""))
			continue
		}
		key := claim.Name
		if claim.Request != "" {
			allErrs = append(allErrs, validateDNS1123Label(claim.Request, idxPath.Child("request"))...)
			key += "/" + claim.Request
		}
		switch {
		case seen.Has(claim.Name) || seen.Has(key):
			allErrs = append(allErrs, field.Duplicate(idxPath, key))
		case claim.Request == "":
			for k := range seen {
				if strings.HasPrefix(k, claim.Name+"/") {
					allErrs = append(allErrs, field.Duplicate(idxPath, claim.Name))
				}
			}
		}
		seen.Insert(key)
		if !podClaims.Has(claim.Name) {
			notFound := field.NotFound(idxPath, claim.Name)
			notFound.Detail = "must be one of the names in pod.spec.resourceClaims"
			allErrs = append(allErrs, notFound)
		}
	}
	return allErrs
}

func validateResizePolicy(policies []corev1.ContainerResizePolicy, podRestartPolicy corev1.RestartPolicy, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[corev1.ResourceName]()
	for i, p := range policies {
		idxPath := fldPath.Index(i)
		if seen.Has(p.ResourceName) {
			allErrs = append(allErrs, field.Duplicate(idxPath, p.ResourceName))
		}
		seen.Insert(p.ResourceName)
		switch {
		case p.ResourceName == "":
			allErrs = append(allErrs, field.Required(idxPath.Child("resourceName"), ""))
		case !supportedResizeResources.Has(p.ResourceName):
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("resourceName"), p.ResourceName, sets.List(supportedResizeResources)))
		}
		switch {
		case p.RestartPolicy == "":
			allErrs = append(allErrs, field.Required(idxPath.Child("restartPolicy"), ""))
		case !supportedResizePolicies.Has(p.RestartPolicy):
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("restartPolicy"), p.RestartPolicy, sets.List(supportedResizePolicies)))
		}
		// A pod that never restarts cannot restart a container to resize it.
		if podRestartPolicy == corev1.RestartPolicyNever && p.RestartPolicy != corev1.NotRequired {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("restartPolicy"), p.RestartPolicy, "must be 'NotRequired' when `restartPolicy` is 'Never'"))
		}
	}
	return allErrs
}
