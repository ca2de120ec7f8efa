package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedPortProtocols = sets.New(corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP)

var supportedPullPolicies = sets.New(corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever)

// allowedEphemeralContainerFields lists what a debug container may set.
// Ephemeral containers must not become part of the workload, so anything
// that would make them one (ports, probes, resources, lifecycle) is out.
var allowedEphemeralContainerFields = map[string]bool{
	"Name":                     true,
	"Image":                    true,
	"Command":                  true,
	"Args":                     true,
	"WorkingDir":               true,
	"EnvFrom":                  true,
	"Env":                      true,
	"VolumeMounts":             true,
	"VolumeDevices":            true,
	"TerminationMessagePath":   true,
	"TerminationMessagePolicy": true,
	"ImagePullPolicy":          true,
	"SecurityContext":          true,
	"Stdin":                    true,
	"StdinOnce":                true,
	"TTY":                      true,
}

// podContext carries what container validation needs from the pod.
type podContext struct {
	volumes       map[string]corev1.VolumeSource
	claimNames    sets.Set[string]
	gracePeriod   *int64
	restartPolicy corev1.RestartPolicy
	hostUsers     bool
	os            *corev1.PodOS
}

func validateContainers(containers []corev1.Container, pc *podContext, fldPath *field.Path) field.ErrorList {
	if len(containers) == 0 {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i := range containers {
		ctr := &containers[i]
		idxPath := fldPath.Index(i)
		allErrs = append(allErrs, validateContainerCommon(ctr, pc, idxPath)...)
		if names.Has(ctr.Name) {
			allErrs = append(allErrs, field.Duplicate(idxPath.Child("name"), ctr.Name))
		} else {
			names.Insert(ctr.Name)
		}
		allErrs = append(allErrs, validateLifecycleAndProbes(ctr, pc, idxPath)...)
		if ctr.RestartPolicy != nil {
			allErrs = append(allErrs, field.Forbidden(idxPath.Child("restartPolicy"), "may not be set for non-init containers"))
		}
	}
	// Regular containers run side by side, so they share the host ports.
	return append(allErrs, checkHostPortConflicts(containers, 0, fldPath)...)
}

// validateInitContainers checks init containers. Only restartable ones
// (sidecars, restartPolicy Always) run alongside the app and may have
// lifecycle hooks and probes.
func validateInitContainers(initContainers, containers []corev1.Container, pc *podContext, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for _, c := range containers {
		names.Insert(c.Name)
	}
	for i := range initContainers {
		ctr := &initContainers[i]
		idxPath := fldPath.Index(i)
		allErrs = append(allErrs, validateContainerCommon(ctr, pc, idxPath)...)

		restartable := false
		if ctr.RestartPolicy != nil {
			if *ctr.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				restartable = true
			} else {
				allErrs = append(allErrs, field.NotSupported(idxPath.Child("restartPolicy"), *ctr.RestartPolicy,
					[]corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways}))
			}
		}
		if names.Has(ctr.Name) {
			allErrs = append(allErrs, field.Duplicate(idxPath.Child("name"), ctr.Name))
		} else if ctr.Name != "" {
			names.Insert(ctr.Name)
		}
		// Init containers run one at a time, so ports only clash within one.
		allErrs = append(allErrs, checkHostPortConflicts(initContainers[i:i+1], i, fldPath)...)

		if restartable {
			allErrs = append(allErrs, validateLifecycleAndProbes(ctr, pc, idxPath)...)
			continue
		}
		const detail = "may not be set for init containers without restartPolicy=Always"
		if ctr.Lifecycle != nil {
			allErrs = append(allErrs, field.Forbidden(idxPath.Child("lifecycle"), detail))
		}
		if ctr.LivenessProbe != nil {
			allErrs = append(allErrs, field.Forbidden(idxPath.Child("livenessProbe"), detail))
		}
		if ctr.ReadinessProbe != nil {
			allErrs = append(allErrs, field.Forbidden(idxPath.Child("readinessProbe"), detail))
		}
		if ctr.StartupProbe != nil {
			allErrs = append(allErrs, field.Forbidden(idxPath.Child("startupProbe"), detail))
		}
	}
	return allErrs
}

// validateEphemeralContainers checks debug containers: common container
// rules, names unique across all containers, an existing target, and only
// the fields a debug container may use.
func validateEphemeralContainers(ephemeral []corev1.EphemeralContainer, containers, initContainers []corev1.Container, pc *podContext, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	others := sets.New[string]()
	for _, c := range containers {
		others.Insert(c.Name)
	}
	for _, c := range initContainers {
		others.Insert(c.Name)
	}
	names := others.Clone()
	for i := range ephemeral {
		ec := &ephemeral[i]
		idxPath := fldPath.Index(i)
		ctr := corev1.Container(ec.EphemeralContainerCommon)
		allErrs = append(allErrs, validateContainerCommon(&ctr, pc, idxPath)...)
		allErrs = append(allErrs, validateImageWhitespace(ctr.Image, idxPath.Child("image"))...)
		if names.Has(ec.Name) {
			allErrs = append(allErrs, field.Duplicate(idxPath.Child("name"), ec.Name))
		} else {
			names.Insert(ec.Name)
		}
		if ec.TargetContainerName != "" && !others.Has(ec.TargetContainerName) {
			allErrs = append(allErrs, field.NotFound(idxPath.Child("targetContainerName"), ec.TargetContainerName))
		}
		allErrs = append(allErrs, forbidSetFields(ec.EphemeralContainerCommon, allowedEphemeralContainerFields, "cannot be set for an Ephemeral Container", idxPath)...)
		// Subpaths are bind mounts that outlive the container until the
		// pod exits, and imply the container is part of the workload.
		for j, vm := range ec.VolumeMounts {
			mountPath := idxPath.Child("volumeMounts").Index(j)
			if vm.SubPath != "" {
				allErrs = append(allErrs, field.Forbidden(mountPath.Child("subPath"), "cannot be set for an Ephemeral Container"))
			}
			if vm.SubPathExpr != "" {
				allErrs = append(allErrs, field.Forbidden(mountPath.Child("subPathExpr"), "cannot be set for an Ephemeral Container"))
			}
		}
	}
	return allErrs
}

// validateContainerCommon holds the rules shared by every kind of container.
func validateContainerCommon(ctr *corev1.Container, pc *podContext, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	namePath := fldPath.Child("name")
	if ctr.Name == "" {
		allErrs = append(allErrs, field.Required(namePath, ""))
	} else {
		allErrs = append(allErrs, validateDNS1123Label(ctr.Name, namePath)...)
	}
	if ctr.Image == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("image"), ""))
	}
	switch ctr.TerminationMessagePolicy {
	case corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError:
	case "":
		allErrs = append(allErrs, field.Required(fldPath.Child("terminationMessagePolicy"), ""))
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("terminationMessagePolicy"), ctr.TerminationMessagePolicy,
			[]corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError}))
	}
	allErrs = append(allErrs, validateContainerPorts(ctr.Ports, fldPath.Child("ports"))...)
	allErrs = append(allErrs, validateEnv(ctr.Env, fldPath.Child("env"))...)
	allErrs = append(allErrs, validateEnvFrom(ctr.EnvFrom, fldPath.Child("envFrom"))...)
	allErrs = append(allErrs, validateVolumeMounts(ctr, pc.volumes, fldPath.Child("volumeMounts"))...)
	allErrs = append(allErrs, validateVolumeDevices(ctr, pc.volumes, fldPath.Child("volumeDevices"))...)
	allErrs = append(allErrs, validatePullPolicy(ctr.ImagePullPolicy, fldPath.Child("imagePullPolicy"))...)
	allErrs = append(allErrs, validateResourceRequirements(&ctr.Resources, validateContainerResourceName, pc.claimNames, fldPath.Child("resources"))...)
	allErrs = append(allErrs, validateResizePolicy(ctr.ResizePolicy, pc.restartPolicy, fldPath.Child("resizePolicy"))...)
	return append(allErrs, validateSecurityContext(ctr.SecurityContext, pc.hostUsers, fldPath.Child("securityContext"))...)
}

// validateImageWhitespace applies to pods only: templates historically used
// " " as a placeholder image, so the check cannot live in the common rules.
func validateImageWhitespace(image string, fldPath *field.Path) field.ErrorList {
	if len(image) != len(strings.TrimSpace(image)) {
		return field.ErrorList{field.Invalid(fldPath, image, "must not have leading or trailing whitespace")}
	}
	return nil
}

func validatePullPolicy(policy corev1.PullPolicy, fldPath *field.Path) field.ErrorList {
	switch {
	case policy == "":
		return field.ErrorList{field.Required(fldPath, "")}
	case !supportedPullPolicies.Has(policy):
		return field.ErrorList{field.NotSupported(fldPath, policy, sets.List(supportedPullPolicies))}
	}
	return nil
}

func validateContainerPorts(ports []corev1.ContainerPort, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		idxPath := fldPath.Index(i)
		if port.Name != "" {
			if msgs := utilvalidation.IsValidPortName(port.Name); len(msgs) != 0 {
				for _, msg := range msgs {
					allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), port.Name, msg))
				}
			} else if names.Has(port.Name) {
				allErrs = append(allErrs, field.Duplicate(idxPath.Child("name"), port.Name))
			} else {
				names.Insert(port.Name)
			}
		}
		if port.ContainerPort == 0 {
			allErrs = append(allErrs, field.Required(idxPath.Child("containerPort"), ""))
		} else {
			for _, msg := range utilvalidation.IsValidPortNum(int(port.ContainerPort)) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range utilvalidation.IsValidPortNum(int(port.HostPort)) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("hostPort"), port.HostPort, msg))
			}
		}
		switch {
		case port.Protocol == "":
			allErrs = append(allErrs, field.Required(idxPath.Child("protocol"), ""))
		case !supportedPortProtocols.Has(port.Protocol):
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("protocol"), port.Protocol, sets.List(supportedPortProtocols)))
		}
	}
	return allErrs
}

// checkHostPortConflicts rejects two ports claiming the same host port,
// protocol and host IP among containers that run at the same time;
// containers[0] sits at index first of the list at fldPath.
func checkHostPortConflicts(containers []corev1.Container, first int, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for ci, ctr := range containers {
		for pi, port := range ctr.Ports {
			if port.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
			if seen.Has(key) {
				allErrs = append(allErrs, field.Duplicate(fldPath.Index(first+ci).Child("ports").Index(pi).Child("hostPort"), key))
			}
			seen.Insert(key)
		}
	}
	return allErrs
}
