package nodelifecycle

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	created = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	beat    = created.Add(time.Minute)
	now     = created.Add(time.Hour)
)

func cond(kind corev1.NodeConditionType, status corev1.ConditionStatus, reason string) corev1.NodeCondition {
	return corev1.NodeCondition{Type: kind, Status: status, Reason: reason, LastHeartbeatTime: metav1.NewTime(beat), LastTransitionTime: metav1.NewTime(beat)}
}

func unknown(kind corev1.NodeConditionType) corev1.NodeCondition {
	return corev1.NodeCondition{Type: kind, Status: corev1.ConditionUnknown, Reason: ReasonStatusUnknown, Message: MessageStatusUnknown,
		LastHeartbeatTime: metav1.NewTime(beat), LastTransitionTime: metav1.NewTime(now)}
}

func TestSilentConditions(t *testing.T) {
	other := corev1.NodeCondition{Type: "NetworkUnavailable", Status: corev1.ConditionFalse}
	for _, tc := range []struct {
		name    string
		in      []corev1.NodeCondition
		want    []corev1.NodeCondition
		changed bool
	}{
		{"ready becomes unknown", []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady")},
			[]corev1.NodeCondition{unknown(corev1.NodeReady)}, true},
		{"not ready becomes unknown too", []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionFalse, "KubeletNotReady")},
			[]corev1.NodeCondition{unknown(corev1.NodeReady)}, true},
		{"pressure conditions reported are unknown, others kept",
			[]corev1.NodeCondition{cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory"), other,
				cond(corev1.NodeReady, corev1.ConditionTrue, ""), cond(corev1.NodeDiskPressure, corev1.ConditionFalse, ""), cond(corev1.NodePIDPressure, corev1.ConditionFalse, "")},
			[]corev1.NodeCondition{unknown(corev1.NodeMemoryPressure), other, unknown(corev1.NodeReady), unknown(corev1.NodeDiskPressure), unknown(corev1.NodePIDPressure)}, true},
		{"never reported", nil, []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
			Reason: ReasonNeverUpdated, Message: MessageNeverUpdated, LastHeartbeatTime: metav1.NewTime(created), LastTransitionTime: metav1.NewTime(now)}}, true},
		{"already unknown is left as it is", []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionUnknown, ReasonStatusUnknown)},
			[]corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionUnknown, ReasonStatusUnknown)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}, Status: corev1.NodeStatus{Conditions: tc.in}}
			before := node.DeepCopy()
			got, changed := silentConditions(node, now)
			if changed != tc.changed {
				t.Errorf("changed = %v, want %v", changed, tc.changed)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, node); diff != "" {
				t.Errorf("the input node was modified:\n%s", diff)
			}
		})
	}
}

func TestWantTaints(t *testing.T) {
	earlier := &metav1.Time{Time: beat}
	admin := corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}
	unreachable := []corev1.Taint{
		{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: now}},
	}
	notReady := []corev1.Taint{
		{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: now}},
	}
	for _, tc := range []struct {
		name    string
		ready   corev1.ConditionStatus // "" for no Ready condition
		in      []corev1.Taint
		want    []corev1.Taint
		changed bool
	}{
		{"ready, nothing to do", corev1.ConditionTrue, []corev1.Taint{admin}, []corev1.Taint{admin}, false},
		{"unknown adds unreachable", corev1.ConditionUnknown, []corev1.Taint{admin}, append([]corev1.Taint{admin}, unreachable...), true},
		{"false adds not-ready", corev1.ConditionFalse, nil, notReady, true},
		{"unknown keeps its time added", corev1.ConditionUnknown,
			[]corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: earlier}, {Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule}},
			[]corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: earlier}, {Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule}}, false},
		{"ready again removes them, keeps the admin's", corev1.ConditionTrue, append(unreachable, admin), []corev1.Taint{admin}, true},
		{"unknown to false swaps", corev1.ConditionFalse, unreachable, notReady, true},
		{"a duplicate is dropped", corev1.ConditionUnknown, append(unreachable, unreachable[0]), unreachable, true},
		{"no ready condition removes them", "", notReady, nil, true},
		{"an unreachable PreferNoSchedule taint is not ours", corev1.ConditionTrue,
			[]corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectPreferNoSchedule}},
			[]corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectPreferNoSchedule}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := &corev1.Node{Spec: corev1.NodeSpec{Taints: tc.in}}
			if tc.ready != "" {
				node.Status.Conditions = []corev1.NodeCondition{cond(corev1.NodeReady, tc.ready, "")}
			}
			got, changed := wantTaints(node, now)
			if changed != tc.changed {
				t.Errorf("changed = %v, want %v", changed, tc.changed)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("taints (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodNotReady(t *testing.T) {
	podCond := func(kind corev1.PodConditionType, status corev1.ConditionStatus, at time.Time) corev1.PodCondition {
		return corev1.PodCondition{Type: kind, Status: status, LastTransitionTime: metav1.NewTime(at)}
	}
	for _, tc := range []struct {
		name    string
		in      []corev1.PodCondition
		want    []corev1.PodCondition
		changed bool
	}{
		{"ready turns false", []corev1.PodCondition{podCond(corev1.PodScheduled, corev1.ConditionTrue, beat), podCond(corev1.PodReady, corev1.ConditionTrue, beat)},
			[]corev1.PodCondition{podCond(corev1.PodScheduled, corev1.ConditionTrue, beat), podCond(corev1.PodReady, corev1.ConditionFalse, now)}, true},
		{"already false", []corev1.PodCondition{podCond(corev1.PodReady, corev1.ConditionFalse, beat)}, []corev1.PodCondition{podCond(corev1.PodReady, corev1.ConditionFalse, beat)}, false},
		{"no ready condition", []corev1.PodCondition{podCond(corev1.PodScheduled, corev1.ConditionTrue, beat)}, []corev1.PodCondition{podCond(corev1.PodScheduled, corev1.ConditionTrue, beat)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Status: corev1.PodStatus{Conditions: tc.in}}
			got, changed := podNotReady(pod, now)
			if changed != tc.changed {
				t.Errorf("changed = %v, want %v", changed, tc.changed)
			}
			if diff := cmp.Diff(tc.want, got.Conditions); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}
