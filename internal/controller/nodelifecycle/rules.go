package nodelifecycle

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reasons and messages of the conditions the controller sets, upstream's, which users and tools
// match on.
const (
	ReasonStatusUnknown  = "NodeStatusUnknown"
	MessageStatusUnknown = "Kubelet stopped posting node status."
	ReasonNeverUpdated   = "NodeStatusNeverUpdated"
	MessageNeverUpdated  = "Kubelet never posted node status."
)

// unknownConditions are the conditions a silent node's agent can no longer vouch for. Ready is
// always there (added when the node never reported it); the others change only when the node
// reports them: the agent does not, and a pressure condition added here would stay Unknown
// beside a Ready node for good, since nothing would ever report it again.
var unknownConditions = []struct {
	kind        corev1.NodeConditionType
	addWhenGone bool
}{
	{corev1.NodeReady, true},
	{corev1.NodeMemoryPressure, false},
	{corev1.NodeDiskPressure, false},
	{corev1.NodePIDPressure, false},
}

// readyTaints are the taints each Ready status calls for; a True (or absent) Ready condition
// calls for none of them. NoExecute taints carry the time they were added, from which pods'
// tolerationSeconds count.
var readyTaints = map[corev1.ConditionStatus]string{
	corev1.ConditionUnknown: corev1.TaintNodeUnreachable,
	corev1.ConditionFalse:   corev1.TaintNodeNotReady,
}

var taintEffects = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute}

// silentConditions returns the node's conditions as they stand once its agent has been silent
// past the grace period, and whether that changes them. Heartbeat times stay as the agent last
// wrote them; a changed condition's transition time is now.
func silentConditions(node *corev1.Node, now time.Time) ([]corev1.NodeCondition, bool) {
	out := slices.Clone(node.Status.Conditions)
	changed := false
	for _, rule := range unknownConditions {
		i := slices.IndexFunc(out, func(c corev1.NodeCondition) bool { return c.Type == rule.kind })
		switch {
		case i < 0 && rule.addWhenGone:
			out = append(out, corev1.NodeCondition{
				Type: rule.kind, Status: corev1.ConditionUnknown,
				Reason: ReasonNeverUpdated, Message: MessageNeverUpdated,
				LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: metav1.NewTime(now),
			})
			changed = true
		case i >= 0 && out[i].Status != corev1.ConditionUnknown:
			out[i].Status = corev1.ConditionUnknown
			out[i].Reason, out[i].Message = ReasonStatusUnknown, MessageStatusUnknown
			out[i].LastTransitionTime = metav1.NewTime(now)
			changed = true
		}
	}
	return out, changed
}

// wantTaints returns the node's taints with the lifecycle taints its Ready condition calls for,
// and whether that changes them. A taint already in place keeps its time added; others' taints
// are untouched.
func wantTaints(node *corev1.Node, now time.Time) ([]corev1.Taint, bool) {
	wantKey := ""
	if ready := condition(node, corev1.NodeReady); ready != nil {
		wantKey = readyTaints[ready.Status]
	}
	var out []corev1.Taint
	changed := false
	have := map[corev1.TaintEffect]bool{}
	for _, t := range node.Spec.Taints {
		if !isLifecycleTaint(t) {
			out = append(out, t)
			continue
		}
		if t.Key == wantKey && !have[t.Effect] {
			out = append(out, t)
			have[t.Effect] = true
			continue
		}
		changed = true
	}
	if wantKey == "" {
		return out, changed
	}
	for _, effect := range taintEffects {
		if have[effect] {
			continue
		}
		t := corev1.Taint{Key: wantKey, Effect: effect}
		if effect == corev1.TaintEffectNoExecute {
			t.TimeAdded = &metav1.Time{Time: now}
		}
		out = append(out, t)
		changed = true
	}
	return out, changed
}

func isLifecycleTaint(t corev1.Taint) bool {
	for _, key := range readyTaints {
		if t.Key == key && slices.Contains(taintEffects, t.Effect) {
			return true
		}
	}
	return false
}

// podNotReady returns the pod's status with its Ready condition False, and whether that changes
// it. A pod without a Ready condition is left alone, as upstream does: nothing reported it ready.
func podNotReady(pod *corev1.Pod, now time.Time) (corev1.PodStatus, bool) {
	status := *pod.Status.DeepCopy()
	for i, c := range status.Conditions {
		if c.Type != corev1.PodReady || c.Status == corev1.ConditionFalse {
			continue
		}
		status.Conditions[i].Status = corev1.ConditionFalse
		status.Conditions[i].LastTransitionTime = metav1.NewTime(now)
		return status, true
	}
	return status, false
}

func condition(node *corev1.Node, kind corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == kind {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}
