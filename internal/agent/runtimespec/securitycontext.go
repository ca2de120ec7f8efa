package runtimespec

import (
	corev1 "k8s.io/api/core/v1"
)

// EffectiveSecurityContext merges the pod's security context into a container's: every field the
// container leaves unset takes the pod's value, field by field (runAsUser, runAsGroup,
// runAsNonRoot, seLinuxOptions, seccompProfile, appArmorProfile, and windowsOptions field by
// field), as the kubelet does. Fields only a container has (capabilities, privileged,
// readOnlyRootFilesystem, allowPrivilegeEscalation, procMount) are the container's. The result is
// a new object; inputs are not modified.
//
// The two GMSA fields of windowsOptions travel as a pair, as in the kubelet: a container that sets
// either its credential spec name or its contents takes neither from the pod. Admission checks a
// credential spec against the name next to it, so mixing a container's name with the pod's
// contents (or the reverse) would hand the runtime a credential spec nobody authorized for that
// name.
func EffectiveSecurityContext(pod *corev1.Pod, c *corev1.Container) *corev1.SecurityContext {
	eff := fromPod(pod.Spec.SecurityContext)
	csc := c.SecurityContext
	if csc == nil {
		return eff
	}
	csc = csc.DeepCopy()

	if csc.SELinuxOptions != nil {
		eff.SELinuxOptions = csc.SELinuxOptions
	}
	if csc.RunAsUser != nil {
		eff.RunAsUser = csc.RunAsUser
	}
	if csc.RunAsGroup != nil {
		eff.RunAsGroup = csc.RunAsGroup
	}
	if csc.RunAsNonRoot != nil {
		eff.RunAsNonRoot = csc.RunAsNonRoot
	}
	if csc.SeccompProfile != nil {
		eff.SeccompProfile = csc.SeccompProfile
	}
	if csc.AppArmorProfile != nil {
		eff.AppArmorProfile = csc.AppArmorProfile
	}
	if w := csc.WindowsOptions; w != nil {
		if eff.WindowsOptions == nil {
			eff.WindowsOptions = &corev1.WindowsSecurityContextOptions{}
		}
		if w.GMSACredentialSpecName != nil || w.GMSACredentialSpec != nil {
			eff.WindowsOptions.GMSACredentialSpecName = w.GMSACredentialSpecName
			eff.WindowsOptions.GMSACredentialSpec = w.GMSACredentialSpec
		}
		if w.RunAsUserName != nil {
			eff.WindowsOptions.RunAsUserName = w.RunAsUserName
		}
		if w.HostProcess != nil {
			eff.WindowsOptions.HostProcess = w.HostProcess
		}
	}

	eff.Capabilities = csc.Capabilities
	eff.Privileged = csc.Privileged
	eff.ReadOnlyRootFilesystem = csc.ReadOnlyRootFilesystem
	eff.AllowPrivilegeEscalation = csc.AllowPrivilegeEscalation
	eff.ProcMount = csc.ProcMount
	return eff
}

// fromPod is a fresh container security context holding the pod-level fields a container
// inherits.
func fromPod(psc *corev1.PodSecurityContext) *corev1.SecurityContext {
	if psc == nil {
		return &corev1.SecurityContext{}
	}
	psc = psc.DeepCopy()
	return &corev1.SecurityContext{
		SELinuxOptions:  psc.SELinuxOptions,
		WindowsOptions:  psc.WindowsOptions,
		RunAsUser:       psc.RunAsUser,
		RunAsGroup:      psc.RunAsGroup,
		RunAsNonRoot:    psc.RunAsNonRoot,
		SeccompProfile:  psc.SeccompProfile,
		AppArmorProfile: psc.AppArmorProfile,
	}
}
