package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// podContext carries what container validation needs from the pod.
type podContext struct {
	volumes       map[string]corev1.VolumeSource
	claimNames    sets.Set[string]
	gracePeriod   *int64
	restartPolicy corev1.RestartPolicy
	hostUsers     bool
	os            *corev1.PodOS
}

// containerCheck is one container under validation, in its list.
type containerCheck struct {
	ctr  *corev1.Container
	pc   *podContext
	path *field.Path
	// names holds the names taken by the containers checked before this one.
	names sets.Set[string]
	// target and targets are a debug container's target and the containers
	// it may attach to; both are unset for other kinds.
	target  string
	targets sets.Set[string]
}

// containerRule checks one thing a container of some kind must meet.
type containerRule func(c containerCheck) field.ErrorList

func (c containerCheck) run(rules []containerRule) field.ErrorList {
	var errs field.ErrorList
	for _, rule := range rules {
		errs = append(errs, rule(c)...)
	}
	return errs
}

// Each kind of container follows the common rules and then its own, in the
// order their errors are reported.
var (
	regularContainerRules = []containerRule{
		validateContainerCommon,
		uniqueContainerName,
		lifecycleAndProbesRule,
		forbidContainerRestartPolicy,
	}
	initContainerRules = []containerRule{
		validateContainerCommon,
		initRestartPolicyRule,
		uniqueInitContainerName,
		// Init containers run one at a time, so host ports only clash
		// within one.
		func(c containerCheck) field.ErrorList {
			return hostPortClashes([]corev1.Container{*c.ctr}, func(int) *field.Path { return c.path })
		},
		sidecarOnlyFieldsRule,
	}
	ephemeralContainerRules = []containerRule{
		validateContainerCommon,
		func(c containerCheck) field.ErrorList {
			return validateImageWhitespace(c.ctr.Image, c.path.Child("image"))
		},
		uniqueContainerName,
		debugTargetRule,
		debugFieldsRule,
		debugSubPathsRule,
	}
)

func validateContainers(containers []corev1.Container, pc *podContext, fldPath *field.Path) field.ErrorList {
	if len(containers) == 0 {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	errs := checkContainerList(containers, sets.New[string](), regularContainerRules, pc, fldPath)
	// Regular containers run side by side, so they share the host's ports.
	return append(errs, hostPortClashes(containers, fldPath.Index)...)
}

// validateInitContainers checks init containers, whose names must differ
// from the regular containers' too.
func validateInitContainers(initContainers, containers []corev1.Container, pc *podContext, fldPath *field.Path) field.ErrorList {
	return checkContainerList(initContainers, containerNames(containers), initContainerRules, pc, fldPath)
}

// validateEphemeralContainers checks debug containers, whose names must
// differ from every other container's and whose target must be a regular or
// init container.
func validateEphemeralContainers(ephemeral []corev1.EphemeralContainer, containers, initContainers []corev1.Container, pc *podContext, fldPath *field.Path) field.ErrorList {
	targets := containerNames(containers).Union(containerNames(initContainers))
	names := targets.Clone()
	var errs field.ErrorList
	for i := range ephemeral {
		ctr := corev1.Container(ephemeral[i].EphemeralContainerCommon)
		c := containerCheck{ctr: &ctr, pc: pc, path: fldPath.Index(i), names: names, target: ephemeral[i].TargetContainerName, targets: targets}
		errs = append(errs, c.run(ephemeralContainerRules)...)
	}
	return errs
}

func checkContainerList(containers []corev1.Container, names sets.Set[string], rules []containerRule, pc *podContext, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range containers {
		c := containerCheck{ctr: &containers[i], pc: pc, path: fldPath.Index(i), names: names}
		errs = append(errs, c.run(rules)...)
	}
	return errs
}

// containerFieldRule is a rule every container follows for one field,
// reported at that field.
type containerFieldRule struct {
	field string
	check func(ctr *corev1.Container, pc *podContext, fldPath *field.Path) field.ErrorList
}

var supportedTerminationMessagePolicies = []corev1.TerminationMessagePolicy{
	corev1.TerminationMessageReadFile,
	corev1.TerminationMessageFallbackToLogsOnError,
}

// commonContainerRules hold for every kind of container, in report order.
var commonContainerRules = []containerFieldRule{
	{"name", func(ctr *corev1.Container, _ *podContext, p *field.Path) field.ErrorList {
		return requiredThen(ctr.Name, p, validateDNS1123Label)
	}},
	{"image", func(ctr *corev1.Container, _ *podContext, p *field.Path) field.ErrorList {
		if ctr.Image == "" {
			return field.ErrorList{field.Required(p, "")}
		}
		return nil
	}},
	{"terminationMessagePolicy", func(ctr *corev1.Container, _ *podContext, p *field.Path) field.ErrorList {
		return validateEnum(ctr.TerminationMessagePolicy, supportedTerminationMessagePolicies, p)
	}},
	{"ports", func(ctr *corev1.Container, _ *podContext, p *field.Path) field.ErrorList {
		return validateContainerPorts(ctr.Ports, p)
	}},
	{"env", func(ctr *corev1.Container, _ *podContext, p *field.Path) field.ErrorList {
		return validateEnv(ctr.Env, p)
	}},
	{"envFrom", func(ctr *corev1.Container, _ *podContext, p *field.Path) field.ErrorList {
		return validateEnvFrom(ctr.EnvFrom, p)
	}},
	{"volumeMounts", func(ctr *corev1.Container, pc *podContext, p *field.Path) field.ErrorList {
		return validateVolumeMounts(ctr, pc.volumes, p)
	}},
	{"volumeDevices", func(ctr *corev1.Container, pc *podContext, p *field.Path) field.ErrorList {
		return validateVolumeDevices(ctr, pc.volumes, p)
	}},
	{"imagePullPolicy", func(ctr *corev1.Container, _ *podContext, p *field.Path) field.ErrorList {
		return validatePullPolicy(ctr.ImagePullPolicy, p)
	}},
	{"resources", func(ctr *corev1.Container, pc *podContext, p *field.Path) field.ErrorList {
		return validateResourceRequirements(&ctr.Resources, validateContainerResourceName, pc.claimNames, p)
	}},
	{"resizePolicy", func(ctr *corev1.Container, pc *podContext, p *field.Path) field.ErrorList {
		return validateResizePolicy(ctr.ResizePolicy, pc.restartPolicy, p)
	}},
	{"securityContext", func(ctr *corev1.Container, pc *podContext, p *field.Path) field.ErrorList {
		return validateSecurityContext(ctr.SecurityContext, pc.hostUsers, p)
	}},
}

func validateContainerCommon(c containerCheck) field.ErrorList {
	var errs field.ErrorList
	for _, rule := range commonContainerRules {
		errs = append(errs, rule.check(c.ctr, c.pc, c.path.Child(rule.field))...)
	}
	return errs
}

func uniqueContainerName(c containerCheck) field.ErrorList {
	return claimUnique(c.names, c.ctr.Name, c.path.Child("name"))
}

// uniqueInitContainerName: a nameless init container takes no name, so a
// second nameless one is reported as nameless only.
func uniqueInitContainerName(c containerCheck) field.ErrorList {
	if c.ctr.Name == "" && !c.names.Has("") {
		return nil
	}
	return uniqueContainerName(c)
}

func lifecycleAndProbesRule(c containerCheck) field.ErrorList {
	return validateLifecycleAndProbes(c.ctr, c.pc, c.path)
}

// forbidContainerRestartPolicy: a regular container restarts as the pod says.
func forbidContainerRestartPolicy(c containerCheck) field.ErrorList {
	if c.ctr.RestartPolicy != nil {
		return field.ErrorList{field.Forbidden(c.path.Child("restartPolicy"), "may not be set for non-init containers")}
	}
	return nil
}

// initRestartPolicyRule: the one restart policy an init container may set
// is Always, which makes it a sidecar.
func initRestartPolicyRule(c containerCheck) field.ErrorList {
	if p := c.ctr.RestartPolicy; p != nil && *p != corev1.ContainerRestartPolicyAlways {
		return field.ErrorList{field.NotSupported(c.path.Child("restartPolicy"), *p, []corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways})}
	}
	return nil
}

func isSidecar(ctr *corev1.Container) bool {
	return ctr.RestartPolicy != nil && *ctr.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// sidecarOnlyFields serve a container that runs beside the app. A plain init
// container has finished before the app starts and has no use for them.
var sidecarOnlyFields = []struct {
	name string
	set  func(*corev1.Container) bool
}{
	{"lifecycle", func(c *corev1.Container) bool { return c.Lifecycle != nil }},
	{"livenessProbe", func(c *corev1.Container) bool { return c.LivenessProbe != nil }},
	{"readinessProbe", func(c *corev1.Container) bool { return c.ReadinessProbe != nil }},
	{"startupProbe", func(c *corev1.Container) bool { return c.StartupProbe != nil }},
}

func sidecarOnlyFieldsRule(c containerCheck) field.ErrorList {
	if isSidecar(c.ctr) {
		return validateLifecycleAndProbes(c.ctr, c.pc, c.path)
	}
	var errs field.ErrorList
	for _, f := range sidecarOnlyFields {
		if f.set(c.ctr) {
			errs = append(errs, field.Forbidden(c.path.Child(f.name), "may not be set for init containers without restartPolicy=Always"))
		}
	}
	return errs
}

func debugTargetRule(c containerCheck) field.ErrorList {
	if c.target != "" && !c.targets.Has(c.target) {
		return field.ErrorList{field.NotFound(c.path.Child("targetContainerName"), c.target)}
	}
	return nil
}

const notForDebugContainers = "cannot be set for an Ephemeral Container"

// debugContainerFields lists what a debug container may set. Debug
// containers must not become part of the workload, so anything that would
// make them one (ports, probes, resources, lifecycle) is out; listing what
// is allowed keeps fields added to the API later out until decided.
var debugContainerFields = map[string]bool{
	// What to run.
	"Name": true, "Image": true, "ImagePullPolicy": true, "Command": true, "Args": true, "WorkingDir": true,
	// What it sees of the pod.
	"Env": true, "EnvFrom": true, "VolumeMounts": true, "VolumeDevices": true, "SecurityContext": true,
	// How it talks to whoever debugs.
	"Stdin": true, "StdinOnce": true, "TTY": true, "TerminationMessagePath": true, "TerminationMessagePolicy": true,
}

func debugFieldsRule(c containerCheck) field.ErrorList {
	return forbidSetFields(corev1.EphemeralContainerCommon(*c.ctr), debugContainerFields, notForDebugContainers, c.path)
}

// debugSubPathsRule: subpaths are bind mounts that outlive the container
// until the pod exits, and would make a debug container part of the
// workload.
func debugSubPathsRule(c containerCheck) field.ErrorList {
	var errs field.ErrorList
	for i, m := range c.ctr.VolumeMounts {
		for _, f := range mountSubPathFields {
			if f.value(m) != "" {
				errs = append(errs, field.Forbidden(c.path.Child("volumeMounts").Index(i).Child(f.name), notForDebugContainers))
			}
		}
	}
	return errs
}

// validateImageWhitespace applies to pods only: templates historically used
// " " as a placeholder image, so the check cannot live in the common rules.
func validateImageWhitespace(image string, fldPath *field.Path) field.ErrorList {
	if len(image) != len(strings.TrimSpace(image)) {
		return field.ErrorList{field.Invalid(fldPath, image, "must not have leading or trailing whitespace")}
	}
	return nil
}

// supportedPullPolicies, as listed to users.
var supportedPullPolicies = []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}

func validatePullPolicy(policy corev1.PullPolicy, fldPath *field.Path) field.ErrorList {
	return validateEnum(policy, supportedPullPolicies, fldPath)
}

// supportedPortProtocols, as listed to users.
var supportedPortProtocols = []corev1.Protocol{corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP}

func validateContainerPorts(ports []corev1.ContainerPort, fldPath *field.Path) field.ErrorList {
	names := sets.New[string]()
	var errs field.ErrorList
	for i := range ports {
		errs = append(errs, validateContainerPort(&ports[i], names, fldPath.Index(i))...)
	}
	return errs
}

// validateContainerPort checks one port; names holds the valid names of the
// container's earlier ports, which probes refer to and so must be unique.
func validateContainerPort(port *corev1.ContainerPort, names sets.Set[string], fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if port.Name != "" {
		nameErrs := invalidEach(fldPath.Child("name"), port.Name, utilvalidation.IsValidPortName(port.Name))
		if len(nameErrs) == 0 {
			nameErrs = claimUnique(names, port.Name, fldPath.Child("name"))
		}
		errs = append(errs, nameErrs...)
	}
	// The container port is required; a host port of 0 asks for none.
	if port.ContainerPort == 0 {
		errs = append(errs, field.Required(fldPath.Child("containerPort"), ""))
	} else {
		errs = append(errs, portNumberErrors(port.ContainerPort, fldPath.Child("containerPort"))...)
	}
	if port.HostPort != 0 {
		errs = append(errs, portNumberErrors(port.HostPort, fldPath.Child("hostPort"))...)
	}
	return append(errs, validateEnum(port.Protocol, supportedPortProtocols, fldPath.Child("protocol"))...)
}

func portNumberErrors(n int32, fldPath *field.Path) field.ErrorList {
	return invalidEach(fldPath, n, utilvalidation.IsValidPortNum(int(n)))
}

// hostPortClashes reports each port that claims a host port, protocol and
// host IP an earlier port of containers claimed; pathOf gives the path of
// the container at an index of containers.
func hostPortClashes(containers []corev1.Container, pathOf func(int) *field.Path) field.ErrorList {
	claimed := sets.New[string]()
	var errs field.ErrorList
	for ci := range containers {
		for pi, port := range containers[ci].Ports {
			if port.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
			if claimed.Has(key) {
				errs = append(errs, field.Duplicate(pathOf(ci).Child("ports").Index(pi).Child("hostPort"), key))
			}
			claimed.Insert(key)
		}
	}
	return errs
}

// claimUnique reports name as a duplicate when names already holds it, and
// adds it otherwise.
func claimUnique(names sets.Set[string], name string, fldPath *field.Path) field.ErrorList {
	if names.Has(name) {
		return field.ErrorList{field.Duplicate(fldPath, name)}
	}
	names.Insert(name)
	return nil
}
