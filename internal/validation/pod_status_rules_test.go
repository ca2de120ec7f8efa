package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidatePodAnnotationUpdates(t *testing.T) {
	const appArmor = corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "app"
	pod := func(annotations map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}}
	}
	tests := []struct {
		name     string
		old, cur map[string]string
		want     []string
	}{
		{name: "unchanged", old: map[string]string{appArmor: "runtime/default", corev1.MirrorPodAnnotationKey: "h"}, cur: map[string]string{appArmor: "runtime/default", corev1.MirrorPodAnnotationKey: "h"}},
		{name: "other annotations change freely", old: map[string]string{"a": "1", "b": "2"}, cur: map[string]string{"a": "2", "c": "3"}},
		{name: "apparmor changed", old: map[string]string{appArmor: "runtime/default"}, cur: map[string]string{appArmor: "unconfined"}, want: []string{
			"metadata.annotations[container.apparmor.security.beta.kubernetes.io/app]: Forbidden: may not remove or update AppArmor annotations",
		}},
		{name: "apparmor removed", old: map[string]string{appArmor: "runtime/default"}, want: []string{
			"metadata.annotations[container.apparmor.security.beta.kubernetes.io/app]: Forbidden: may not remove or update AppArmor annotations",
		}},
		{name: "apparmor added", cur: map[string]string{appArmor: "runtime/default"}, want: []string{
			"metadata.annotations[container.apparmor.security.beta.kubernetes.io/app]: Forbidden: may not add AppArmor annotations",
		}},
		{name: "mirror changed", old: map[string]string{corev1.MirrorPodAnnotationKey: "h"}, cur: map[string]string{corev1.MirrorPodAnnotationKey: "g"}, want: []string{
			"metadata.annotations[kubernetes.io/config.mirror]: Forbidden: may not remove or update mirror pod annotation",
		}},
		{name: "mirror removed", old: map[string]string{corev1.MirrorPodAnnotationKey: "h"}, want: []string{
			"metadata.annotations[kubernetes.io/config.mirror]: Forbidden: may not remove or update mirror pod annotation",
		}},
		{name: "mirror added", cur: map[string]string{corev1.MirrorPodAnnotationKey: "h"}, want: []string{
			"metadata.annotations[kubernetes.io/config.mirror]: Forbidden: may not add mirror pod annotation",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectExactErrors(t, validatePodAnnotationUpdates(pod(tc.cur), pod(tc.old)), tc.want)
		})
	}
}

func TestValidateContainerStateTransition(t *testing.T) {
	running := func(name string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	}
	exited := func(name string, code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
	}
	sidecar := validContainer("side")
	sidecar.RestartPolicy = ptrTo(corev1.ContainerRestartPolicyAlways)
	old := []corev1.ContainerStatus{exited("ok", 0), exited("failed", 1), running("up"), exited("side", 0)}
	cur := []corev1.ContainerStatus{running("ok"), running("failed"), running("up"), running("side"), running("ok")}
	tests := []struct {
		name   string
		policy corev1.RestartPolicy
		init   []corev1.Container
		want   []string
	}{
		{name: "always restarts", policy: corev1.RestartPolicyAlways},
		{name: "restarts on failure", policy: corev1.RestartPolicyOnFailure, want: []string{
			"statuses[0].state: Forbidden: may not be transitioned to non-terminated state",
			"statuses[0].state: Forbidden: may not be transitioned to non-terminated state",
			"statuses[3].state: Forbidden: may not be transitioned to non-terminated state",
		}},
		{name: "never restarts", policy: corev1.RestartPolicyNever, want: []string{
			"statuses[0].state: Forbidden: may not be transitioned to non-terminated state",
			"statuses[0].state: Forbidden: may not be transitioned to non-terminated state",
			"statuses[1].state: Forbidden: may not be transitioned to non-terminated state",
			"statuses[3].state: Forbidden: may not be transitioned to non-terminated state",
		}},
		{name: "sidecars always restart", policy: corev1.RestartPolicyNever, init: []corev1.Container{validContainer("ok"), sidecar}, want: []string{
			"statuses[0].state: Forbidden: may not be transitioned to non-terminated state",
			"statuses[0].state: Forbidden: may not be transitioned to non-terminated state",
			"statuses[1].state: Forbidden: may not be transitioned to non-terminated state",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectExactErrors(t, validateContainerStateTransition(cur, old, tc.policy, tc.init, field.NewPath("statuses")), tc.want)
		})
	}
}
