package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedPortProtocols = sets.New(corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP)

var supportedPullPolicies = sets.New(corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever)

var supportedHTTPSchemes = sets.New(corev1.URISchemeHTTP, corev1.URISchemeHTTPS)

var supportedMountPropagations = sets.New(
	corev1.MountPropagationBidirectional,
	corev1.MountPropagationHostToContainer,
	corev1.MountPropagationNone,
)

var supportedRecursiveReadOnly = sets.New(
	corev1.RecursiveReadOnlyDisabled,
	corev1.RecursiveReadOnlyIfPossible,
	corev1.RecursiveReadOnlyEnabled,
)

var supportedResizeResources = sets.New(corev1.ResourceCPU, corev1.ResourceMemory)

var supportedResizePolicies = sets.New(corev1.NotRequired, corev1.RestartContainer)

var supportedProcMountTypes = []corev1.ProcMountType{corev1.DefaultProcMount, corev1.UnmaskedProcMount}

var supportedSeccompProfileTypes = []corev1.SeccompProfileType{
	corev1.SeccompProfileTypeLocalhost,
	corev1.SeccompProfileTypeRuntimeDefault,
	corev1.SeccompProfileTypeUnconfined,
}

var supportedAppArmorProfileTypes = []corev1.AppArmorProfileType{
	corev1.AppArmorProfileTypeLocalhost,
	corev1.AppArmorProfileTypeRuntimeDefault,
	corev1.AppArmorProfileTypeUnconfined,
}

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

// validateEnv checks environment variables. Since 1.34 names may be any
// printable ASCII except '=', which is what shells and execve accept.
func validateEnv(vars []corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, ev := range vars {
		idxPath := fldPath.Index(i)
		if ev.Name == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("name"), ""))
		} else {
			for _, msg := range utilvalidation.IsRelaxedEnvVarName(ev.Name) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), ev.Name, msg))
			}
		}
		allErrs = append(allErrs, validateEnvVarValueFrom(ev, idxPath.Child("valueFrom"))...)
	}
	return allErrs
}

func validateEnvVarValueFrom(ev corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	from := ev.ValueFrom
	if from == nil {
		return nil
	}
	var allErrs field.ErrorList
	numSources := 0
	if from.FieldRef != nil {
		numSources++
		allErrs = append(allErrs, validateObjectFieldSelector(from.FieldRef, validEnvDownwardAPIFieldPaths, fldPath.Child("fieldRef"))...)
	}
	if from.ResourceFieldRef != nil {
		numSources++
		allErrs = append(allErrs, validateResourceFieldSelector(from.ResourceFieldRef, false, fldPath.Child("resourceFieldRef"))...)
	}
	if from.ConfigMapKeyRef != nil {
		numSources++
		allErrs = append(allErrs, validateKeySelector(from.ConfigMapKeyRef.Name, from.ConfigMapKeyRef.Key, fldPath.Child("configMapKeyRef"))...)
	}
	if from.SecretKeyRef != nil {
		numSources++
		allErrs = append(allErrs, validateKeySelector(from.SecretKeyRef.Name, from.SecretKeyRef.Key, fldPath.Child("secretKeyRef"))...)
	}
	if from.FileKeyRef != nil {
		numSources++
		allErrs = append(allErrs, validateFileKeySelector(from.FileKeyRef, fldPath.Child("fileKeyRef"))...)
	}
	switch {
	case numSources == 0:
		allErrs = append(allErrs, field.Invalid(fldPath, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
	case ev.Value != "":
		allErrs = append(allErrs, field.Invalid(fldPath, "", "may not be specified when `value` is not empty"))
	case numSources > 1:
		allErrs = append(allErrs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
	}
	return allErrs
}

func validateKeySelector(name, key string, fldPath *field.Path) field.ErrorList {
	allErrs := nameErrors(apivalidation.NameIsDNSSubdomain, name, fldPath.Child("name"))
	if key == "" {
		return append(allErrs, field.Required(fldPath.Child("key"), ""))
	}
	return append(allErrs, validateConfigKey(key, fldPath.Child("key"))...)
}

// validateFileKeySelector checks an env var read from a file that an init
// container wrote into an emptyDir volume.
func validateFileKeySelector(s *corev1.FileKeySelector, fldPath *field.Path) field.ErrorList {
	allErrs := requireString(s.VolumeName, fldPath.Child("volumeName"))
	if s.Path == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("path"), ""))
	} else {
		allErrs = append(allErrs, validateLocalNonReservedPath(s.Path, fldPath.Child("path"))...)
	}
	if s.Key == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("key"), ""))
	} else {
		for _, msg := range utilvalidation.IsRelaxedEnvVarName(s.Key) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("key"), s.Key, msg))
		}
	}
	return allErrs
}

func validateEnvFrom(sources []corev1.EnvFromSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, src := range sources {
		idxPath := fldPath.Index(i)
		if src.Prefix != "" {
			for _, msg := range utilvalidation.IsRelaxedEnvVarName(src.Prefix) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("prefix"), src.Prefix, msg))
			}
		}
		numSources := 0
		if src.ConfigMapRef != nil {
			numSources++
			allErrs = append(allErrs, validateEnvSourceName(src.ConfigMapRef.Name, idxPath.Child("configMapRef", "name"))...)
		}
		if src.SecretRef != nil {
			numSources++
			allErrs = append(allErrs, validateEnvSourceName(src.SecretRef.Name, idxPath.Child("secretRef", "name"))...)
		}
		switch {
		case numSources == 0:
			allErrs = append(allErrs, field.Invalid(fldPath, "", "must specify one of: `configMapRef` or `secretRef`"))
		case numSources > 1:
			allErrs = append(allErrs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
		}
	}
	return allErrs
}

func validateEnvSourceName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var allErrs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSSubdomain(name, true) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	return allErrs
}

func validateVolumeMounts(ctr *corev1.Container, volumes map[string]corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	devices := map[string]string{}
	for _, d := range ctr.VolumeDevices {
		devices[d.Name] = d.DevicePath
	}
	mountPoints := sets.New[string]()
	for i, mnt := range ctr.VolumeMounts {
		idxPath := fldPath.Index(i)
		if mnt.Name == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("name"), ""))
		}
		vol, found := volumes[mnt.Name]
		if !found {
			allErrs = append(allErrs, field.NotFound(idxPath.Child("name"), mnt.Name))
		}
		if mnt.MountPath == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("mountPath"), ""))
		}
		if mountPoints.Has(mnt.MountPath) {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("mountPath"), mnt.MountPath, "must be unique"))
		}
		mountPoints.Insert(mnt.MountPath)
		if _, ok := devices[mnt.Name]; ok {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), mnt.Name, "must not already exist in volumeDevices"))
		}
		for _, devicePath := range devices {
			if devicePath == mnt.MountPath {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("mountPath"), mnt.MountPath, "must not already exist as a path in volumeDevices"))
			}
		}
		if found && vol.Image != nil {
			if mnt.SubPath != "" {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("subPath"), mnt.SubPath, "not allowed in image volume sources"))
			}
			if mnt.SubPathExpr != "" {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("subPathExpr"), mnt.SubPathExpr, "not allowed in image volume sources"))
			}
		}
		if mnt.SubPath != "" {
			allErrs = append(allErrs, validateLocalDescendingPath(mnt.SubPath, idxPath.Child("subPath"))...)
		}
		if mnt.SubPathExpr != "" {
			if mnt.SubPath != "" {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("subPathExpr"), mnt.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			allErrs = append(allErrs, validateLocalDescendingPath(mnt.SubPathExpr, idxPath.Child("subPathExpr"))...)
		}
		allErrs = append(allErrs, validateMountPropagation(mnt.MountPropagation, ctr, idxPath.Child("mountPropagation"))...)
		allErrs = append(allErrs, validateRecursiveReadOnly(mnt, idxPath.Child("recursiveReadOnly"))...)
	}
	return allErrs
}

// validateMountPropagation only lets privileged containers propagate mounts
// back to the host.
func validateMountPropagation(mode *corev1.MountPropagationMode, ctr *corev1.Container, fldPath *field.Path) field.ErrorList {
	if mode == nil {
		return nil
	}
	if !supportedMountPropagations.Has(*mode) {
		return field.ErrorList{field.NotSupported(fldPath, *mode, sets.List(supportedMountPropagations))}
	}
	privileged := ctr.SecurityContext != nil && ctr.SecurityContext.Privileged != nil && *ctr.SecurityContext.Privileged
	if *mode == corev1.MountPropagationBidirectional && !privileged {
		return field.ErrorList{field.Forbidden(fldPath, "Bidirectional mount propagation is available only to privileged containers")}
	}
	return nil
}

func validateRecursiveReadOnly(mnt corev1.VolumeMount, fldPath *field.Path) field.ErrorList {
	if mnt.RecursiveReadOnly == nil {
		return nil
	}
	var allErrs field.ErrorList
	switch *mnt.RecursiveReadOnly {
	case corev1.RecursiveReadOnlyDisabled:
	case corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible:
		if !mnt.ReadOnly {
			allErrs = append(allErrs, field.Forbidden(fldPath, "may only be specified when readOnly is true"))
		}
		if mnt.MountPropagation != nil && *mnt.MountPropagation != corev1.MountPropagationNone {
			allErrs = append(allErrs, field.Forbidden(fldPath, "may only be specified when mountPropagation is None or not specified"))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath, *mnt.RecursiveReadOnly, sets.List(supportedRecursiveReadOnly)))
	}
	return allErrs
}

// validateVolumeDevices checks raw block devices, which only claims can
// provide.
func validateVolumeDevices(ctr *corev1.Container, volumes map[string]corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	mounts := map[string]string{}
	for _, m := range ctr.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	names, paths := sets.New[string](), sets.New[string]()
	for i, dev := range ctr.VolumeDevices {
		idxPath := fldPath.Index(i)
		if dev.Name == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("name"), ""))
		}
		if names.Has(dev.Name) {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), dev.Name, "must be unique"))
		}
		if src, ok := volumes[dev.Name]; !ok {
			allErrs = append(allErrs, field.NotFound(idxPath.Child("name"), dev.Name))
		} else if src.PersistentVolumeClaim == nil && src.Ephemeral == nil {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), dev.Name, "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"))
		}
		if dev.DevicePath == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("devicePath"), ""))
		}
		if paths.Has(dev.DevicePath) {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("devicePath"), dev.DevicePath, "must be unique"))
		}
		if dev.DevicePath != "" && len(validatePathNoBacksteps(dev.DevicePath, idxPath)) > 0 {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("devicePath"), dev.DevicePath, "can not contain backsteps ('..')"))
		} else {
			paths.Insert(dev.DevicePath)
		}
		if _, ok := mounts[dev.Name]; ok {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), dev.Name, "must not already exist in volumeMounts"))
		}
		for _, mountPath := range mounts {
			if mountPath == dev.DevicePath {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("devicePath"), dev.DevicePath, "must not already exist as a path in volumeMounts"))
			}
		}
		if dev.Name != "" {
			names.Insert(dev.Name)
		}
	}
	return allErrs
}

// validateResourceRequirements checks requests and limits: valid names and
// quantities, requests never above limits, and resources that cannot be
// overcommitted (hugepages, extended resources) requested exactly at their
// limit.
func validateResourceRequirements(req *corev1.ResourceRequirements, nameFn func(corev1.ResourceName, *field.Path) field.ErrorList, claimNames sets.Set[string], fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	limPath, reqPath := fldPath.Child("limits"), fldPath.Child("requests")
	hasCPUOrMemory, hasHugePages := false, false
	for name, q := range req.Limits {
		p := limPath.Key(string(name))
		allErrs = append(allErrs, nameFn(name, p)...)
		allErrs = append(allErrs, validateResourceQuantityValue(name, q, p)...)
		if isHugePageResourceName(name) {
			hasHugePages = true
			allErrs = append(allErrs, validateHugePageValue(name, q, p)...)
		}
		if supportedResizeResources.Has(name) {
			hasCPUOrMemory = true
		}
	}
	for name, q := range req.Requests {
		p := reqPath.Key(string(name))
		allErrs = append(allErrs, nameFn(name, p)...)
		allErrs = append(allErrs, validateResourceQuantityValue(name, q, p)...)
		if limit, ok := req.Limits[name]; ok {
			if q.Cmp(limit) != 0 && !isOvercommitAllowed(name) {
				allErrs = append(allErrs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
			} else if q.Cmp(limit) > 0 {
				allErrs = append(allErrs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
			}
		} else if !isOvercommitAllowed(name) {
			allErrs = append(allErrs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		}
		if isHugePageResourceName(name) {
			hasHugePages = true
			allErrs = append(allErrs, validateHugePageValue(name, q, p)...)
		}
		if supportedResizeResources.Has(name) {
			hasCPUOrMemory = true
		}
	}
	if hasHugePages && !hasCPUOrMemory {
		allErrs = append(allErrs, field.Forbidden(fldPath, "HugePages require cpu or memory"))
	}
	return append(allErrs, validateResourceClaimRefs(req.Claims, claimNames, fldPath.Child("claims"))...)
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

func validateLifecycleAndProbes(ctr *corev1.Container, pc *podContext, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if lc := ctr.Lifecycle; lc != nil {
		if lc.PostStart != nil {
			allErrs = append(allErrs, validateHandler(lifecycleHandler(lc.PostStart), pc.gracePeriod, fldPath.Child("lifecycle", "postStart"))...)
		}
		if lc.PreStop != nil {
			allErrs = append(allErrs, validateHandler(lifecycleHandler(lc.PreStop), pc.gracePeriod, fldPath.Child("lifecycle", "preStop"))...)
		}
		if lc.StopSignal != nil {
			allErrs = append(allErrs, validateStopSignal(*lc.StopSignal, pc.os, fldPath.Child("lifecycle", "stopSignal"))...)
		}
	}
	if p := ctr.LivenessProbe; p != nil {
		probePath := fldPath.Child("livenessProbe")
		allErrs = append(allErrs, validateProbe(p, pc.gracePeriod, probePath)...)
		if p.SuccessThreshold != 1 {
			allErrs = append(allErrs, field.Invalid(probePath.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
		}
	}
	if p := ctr.ReadinessProbe; p != nil {
		probePath := fldPath.Child("readinessProbe")
		allErrs = append(allErrs, validateProbe(p, pc.gracePeriod, probePath)...)
		if p.TerminationGracePeriodSeconds != nil {
			allErrs = append(allErrs, field.Invalid(probePath.Child("terminationGracePeriodSeconds"), *p.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
		}
	}
	if p := ctr.StartupProbe; p != nil {
		probePath := fldPath.Child("startupProbe")
		allErrs = append(allErrs, validateProbe(p, pc.gracePeriod, probePath)...)
		if p.SuccessThreshold != 1 {
			allErrs = append(allErrs, field.Invalid(probePath.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
		}
	}
	return allErrs
}

// handler is the union of probe and lifecycle actions.
type handler struct {
	exec      *corev1.ExecAction
	httpGet   *corev1.HTTPGetAction
	tcpSocket *corev1.TCPSocketAction
	grpc      *corev1.GRPCAction
	sleep     *corev1.SleepAction
}

func lifecycleHandler(h *corev1.LifecycleHandler) handler {
	return handler{exec: h.Exec, httpGet: h.HTTPGet, tcpSocket: h.TCPSocket, sleep: h.Sleep}
}

func validateProbe(p *corev1.Probe, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	h := handler{exec: p.Exec, httpGet: p.HTTPGet, tcpSocket: p.TCPSocket, grpc: p.GRPC}
	allErrs := validateHandler(h, gracePeriod, fldPath)
	allErrs = append(allErrs, validateNonnegative(int64(p.InitialDelaySeconds), fldPath.Child("initialDelaySeconds"))...)
	allErrs = append(allErrs, validateNonnegative(int64(p.TimeoutSeconds), fldPath.Child("timeoutSeconds"))...)
	allErrs = append(allErrs, validateNonnegative(int64(p.PeriodSeconds), fldPath.Child("periodSeconds"))...)
	allErrs = append(allErrs, validateNonnegative(int64(p.SuccessThreshold), fldPath.Child("successThreshold"))...)
	allErrs = append(allErrs, validateNonnegative(int64(p.FailureThreshold), fldPath.Child("failureThreshold"))...)
	if p.TerminationGracePeriodSeconds != nil && *p.TerminationGracePeriodSeconds <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *p.TerminationGracePeriodSeconds, "must be greater than 0"))
	}
	return allErrs
}

func validateHandler(h handler, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	numHandlers := 0
	use := func(name string) bool {
		if numHandlers > 0 {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child(name), "may not specify more than 1 handler type"))
			return false
		}
		numHandlers++
		return true
	}
	if h.exec != nil && use("exec") && len(h.exec.Command) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("exec", "command"), ""))
	}
	if h.httpGet != nil && use("httpGet") {
		allErrs = append(allErrs, validateHTTPGetAction(h.httpGet, fldPath.Child("httpGet"))...)
	}
	if h.tcpSocket != nil && use("tcpSocket") {
		allErrs = append(allErrs, validatePortNumOrName(h.tcpSocket.Port, fldPath.Child("tcpSocket", "port"))...)
	}
	if h.grpc != nil && use("grpc") {
		allErrs = append(allErrs, validatePortNumOrName(intstr.FromInt32(h.grpc.Port), fldPath.Child("grpc", "port"))...)
	}
	// A sleep longer than the grace period would be cut short by the kill.
	if h.sleep != nil && use("sleep") && gracePeriod != nil && (h.sleep.Seconds < 0 || h.sleep.Seconds > *gracePeriod) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("sleep"), h.sleep.Seconds,
			fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *gracePeriod)))
	}
	if numHandlers == 0 {
		allErrs = append(allErrs, field.Required(fldPath, "must specify a handler type"))
	}
	return allErrs
}

func validateHTTPGetAction(h *corev1.HTTPGetAction, fldPath *field.Path) field.ErrorList {
	allErrs := requireString(h.Path, fldPath.Child("path"))
	allErrs = append(allErrs, validatePortNumOrName(h.Port, fldPath.Child("port"))...)
	if !supportedHTTPSchemes.Has(h.Scheme) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("scheme"), h.Scheme, sets.List(supportedHTTPSchemes)))
	}
	for _, header := range h.HTTPHeaders {
		for _, msg := range utilvalidation.IsHTTPHeaderName(header.Name) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("httpHeaders"), header.Name, msg))
		}
	}
	return allErrs
}

func validatePortNumOrName(port intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if port.Type == intstr.String {
		for _, msg := range utilvalidation.IsValidPortName(port.StrVal) {
			allErrs = append(allErrs, field.Invalid(fldPath, port.StrVal, msg))
		}
		return allErrs
	}
	for _, msg := range utilvalidation.IsValidPortNum(port.IntValue()) {
		allErrs = append(allErrs, field.Invalid(fldPath, port.IntValue(), msg))
	}
	return allErrs
}

// validateSecurityContext checks a container's security context. Whether
// privileged containers are allowed at all is cluster policy, which idplane
// leaves to admission.
func validateSecurityContext(sc *corev1.SecurityContext, hostUsers bool, fldPath *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var allErrs field.ErrorList
	if sc.RunAsUser != nil {
		allErrs = append(allErrs, validateUserID(*sc.RunAsUser, fldPath.Child("runAsUser"))...)
	}
	if sc.RunAsGroup != nil {
		allErrs = append(allErrs, validateGroupID(*sc.RunAsGroup, fldPath.Child("runAsGroup"))...)
	}
	if sc.ProcMount != nil {
		procPath := fldPath.Child("procMount")
		switch *sc.ProcMount {
		case corev1.DefaultProcMount:
		case corev1.UnmaskedProcMount:
			// An unmasked /proc is only safe inside a user namespace.
			if hostUsers {
				allErrs = append(allErrs, field.Invalid(procPath, *sc.ProcMount, "`hostUsers` must be false to use `Unmasked`"))
			}
		default:
			allErrs = append(allErrs, field.NotSupported(procPath, *sc.ProcMount, supportedProcMountTypes))
		}
	}
	allErrs = append(allErrs, validateSeccompProfile(sc.SeccompProfile, fldPath.Child("seccompProfile"))...)
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Privileged != nil && *sc.Privileged {
			allErrs = append(allErrs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				if c == "CAP_SYS_ADMIN" {
					allErrs = append(allErrs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
				}
			}
		}
	}
	return append(allErrs, validateAppArmorProfile(sc.AppArmorProfile, fldPath.Child("appArmorProfile"))...)
}

func validateUserID(uid int64, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsValidUserID(uid) {
		allErrs = append(allErrs, field.Invalid(fldPath, uid, msg))
	}
	return allErrs
}

func validateGroupID(gid int64, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsValidGroupID(gid) {
		allErrs = append(allErrs, field.Invalid(fldPath, gid, msg))
	}
	return allErrs
}

func validateSeccompProfile(sp *corev1.SeccompProfile, fldPath *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	var allErrs field.ErrorList
	switch sp.Type {
	case corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined:
	case "":
		allErrs = append(allErrs, field.Required(fldPath.Child("type"), "type is required when seccompProfile is set"))
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("type"), sp.Type, supportedSeccompProfileTypes))
	}
	if sp.Type == corev1.SeccompProfileTypeLocalhost {
		if sp.LocalhostProfile == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("localhostProfile"), "must be set when seccomp type is Localhost"))
		} else {
			allErrs = append(allErrs, validateLocalDescendingPath(*sp.LocalhostProfile, fldPath.Child("localhostProfile"))...)
		}
	} else if sp.LocalhostProfile != nil {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("localhostProfile"), sp, "can only be set when seccomp type is Localhost"))
	}
	return allErrs
}

func validateAppArmorProfile(p *corev1.AppArmorProfile, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	var allErrs field.ErrorList
	switch p.Type {
	case corev1.AppArmorProfileTypeLocalhost:
		lpPath := fldPath.Child("localhostProfile")
		switch {
		case p.LocalhostProfile == nil:
			allErrs = append(allErrs, field.Required(lpPath, "must be set when AppArmor type is Localhost"))
		case strings.TrimSpace(*p.LocalhostProfile) != *p.LocalhostProfile:
			allErrs = append(allErrs, field.Invalid(lpPath, *p.LocalhostProfile, "must not be padded with whitespace"))
		case *p.LocalhostProfile == "":
			allErrs = append(allErrs, field.Required(lpPath, "must be set when AppArmor type is Localhost"))
		}
		if p.LocalhostProfile != nil && len(*p.LocalhostProfile) > 4095 {
			allErrs = append(allErrs, field.TooLong(lpPath, "", 4095))
		}
	case corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined:
		if p.LocalhostProfile != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("localhostProfile"), p.LocalhostProfile, "can only be set when AppArmor type is Localhost"))
		}
	case "":
		allErrs = append(allErrs, field.Required(fldPath.Child("type"), "type is required when appArmorProfile is set"))
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("type"), p.Type, supportedAppArmorProfileTypes))
	}
	return allErrs
}
