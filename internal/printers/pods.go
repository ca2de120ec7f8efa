package printers

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
)

// nodeLostReason is the status reason the node lifecycle controller gives pods on an
// unreachable node; such pods print as Unknown while they are being deleted.
const nodeLostReason = "NodeLost"

// pods prints pods as NAME READY STATUS RESTARTS AGE, wide IP NODE NOMINATED NODE READINESS
// GATES; rows of finished pods carry a Completed condition.
var pods rest.TableConvertor = newViewTable(func(pod *corev1.Pod) podRow { return podRow{pod, summarizePod(pod)} },
	nameColumn[podRow](),
	stringColumn("Ready", "The aggregate readiness state of this pod for accepting traffic.", func(r podRow) any {
		return fmt.Sprintf("%d/%d", r.summary.ready, r.summary.total)
	}),
	stringColumn("Status", "The aggregate status of the containers in this pod.", func(r podRow) any { return r.summary.status }),
	timedColumn("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.", func(r podRow, now time.Time) any {
		if r.summary.restarts == 0 || r.summary.lastRestart.IsZero() {
			return strconv.Itoa(r.summary.restarts)
		}
		return fmt.Sprintf("%d (%s ago)", r.summary.restarts, age(r.summary.lastRestart, now))
	}),
	ageColumn[podRow](),
	stringColumn("IP", doc(corev1.PodStatus{}, "podIP"), func(r podRow) any {
		if len(r.Status.PodIPs) == 0 {
			return "<none>"
		}
		return orNone(r.Status.PodIPs[0].IP)
	}).wide(),
	stringColumn("Node", doc(corev1.PodSpec{}, "nodeName"), func(r podRow) any { return orNone(r.Spec.NodeName) }).wide(),
	stringColumn("Nominated Node", doc(corev1.PodStatus{}, "nominatedNodeName"), func(r podRow) any { return orNone(r.Status.NominatedNodeName) }).wide(),
	stringColumn("Readiness Gates", doc(corev1.PodSpec{}, "readinessGates"), func(r podRow) any { return readinessGates(r.Pod) }).wide(),
).withConditions(finishedPodConditions)

// podRow is a pod with the summary its READY, STATUS and RESTARTS cells share.
type podRow struct {
	*corev1.Pod
	summary podSummary
}

// finishedPodMessages flags finished pods, by phase, so clients can tell them apart without
// re-deriving the status.
var finishedPodMessages = map[corev1.PodPhase]string{
	corev1.PodSucceeded: "The pod has completed successfully.",
	corev1.PodFailed:    "The pod failed.",
}

func finishedPodConditions(pod *corev1.Pod) []metav1.TableRowCondition {
	message, finished := finishedPodMessages[pod.Status.Phase]
	if !finished {
		return nil
	}
	return []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(pod.Status.Phase), Message: message}}
}

type podSummary struct {
	status       string
	ready, total int
	restarts     int
	lastRestart  time.Time
}

// summarizePod derives kubectl's STATUS, READY and RESTARTS. STATUS is the most telling
// reason available: the pod's own reason, then the first init container that has not
// finished, then the last app container that is waiting or terminated, and finally
// Terminating for a pod being deleted. Sidecars (restartable init containers) count as
// containers for READY and RESTARTS.
func summarizePod(pod *corev1.Pod) podSummary {
	s := podSummary{status: string(pod.Status.Phase), total: len(pod.Spec.Containers)}
	if pod.Status.Reason != "" {
		s.status = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			s.status = corev1.PodReasonSchedulingGated
		}
	}

	sidecars := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
			s.total++
		}
	}

	var sidecarRestarts int
	var lastSidecarRestart time.Time
	initializing := false
	for i, st := range pod.Status.InitContainerStatuses {
		s.restarts += int(st.RestartCount)
		s.lastRestart = later(s.lastRestart, st)
		if sidecars[st.Name] {
			sidecarRestarts += int(st.RestartCount)
			lastSidecarRestart = later(lastSidecarRestart, st)
		}
		if st.State.Terminated != nil && st.State.Terminated.ExitCode == 0 {
			continue
		}
		if sidecars[st.Name] && st.Started != nil && *st.Started {
			if st.Ready {
				s.ready++
			}
			continue
		}
		initializing = true
		switch {
		case st.State.Terminated != nil:
			s.status = "Init:" + terminatedReason(st.State.Terminated)
		case st.State.Waiting != nil && st.State.Waiting.Reason != "" && st.State.Waiting.Reason != "PodInitializing":
			s.status = "Init:" + st.State.Waiting.Reason
		default:
			s.status = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		break
	}

	if !initializing || podCondition(pod, corev1.PodInitialized) {
		// Once app containers run, only sidecar restarts still matter among init containers.
		s.restarts, s.lastRestart = sidecarRestarts, lastSidecarRestart
		running := false
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			st := pod.Status.ContainerStatuses[i]
			s.restarts += int(st.RestartCount)
			s.lastRestart = later(s.lastRestart, st)
			switch {
			case st.State.Waiting != nil && st.State.Waiting.Reason != "":
				s.status = st.State.Waiting.Reason
			case st.State.Terminated != nil:
				s.status = terminatedReason(st.State.Terminated)
			case st.Ready && st.State.Running != nil:
				running = true
				s.ready++
			}
		}
		// A finished container does not make a pod with live containers Completed.
		if s.status == "Completed" && running {
			if podCondition(pod, corev1.PodReady) {
				s.status = "Running"
			} else {
				s.status = "NotReady"
			}
		}
	}

	if pod.DeletionTimestamp != nil {
		switch {
		case pod.Status.Reason == nodeLostReason:
			s.status = "Unknown"
		case pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed:
			s.status = "Terminating"
		}
	}
	return s
}

// terminatedReason is the container's termination reason, or the signal or exit code when
// the runtime gave none.
func terminatedReason(t *corev1.ContainerStateTerminated) string {
	switch {
	case t.Reason != "":
		return t.Reason
	case t.Signal != 0:
		return fmt.Sprintf("Signal:%d", t.Signal)
	default:
		return fmt.Sprintf("ExitCode:%d", t.ExitCode)
	}
}

// later returns the later of last and the time the container last terminated.
func later(last time.Time, st corev1.ContainerStatus) time.Time {
	if t := st.LastTerminationState.Terminated; t != nil && last.Before(t.FinishedAt.Time) {
		return t.FinishedAt.Time
	}
	return last
}

func podCondition(pod *corev1.Pod, condition corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == condition {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// readinessGates shows how many of the pod's readiness gates are met, as "met/total".
func readinessGates(pod *corev1.Pod) string {
	if len(pod.Spec.ReadinessGates) == 0 {
		return "<none>"
	}
	met := 0
	for _, gate := range pod.Spec.ReadinessGates {
		if podCondition(pod, gate.ConditionType) {
			met++
		}
	}
	return fmt.Sprintf("%d/%d", met, len(pod.Spec.ReadinessGates))
}
