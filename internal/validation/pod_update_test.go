package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestValidatePodUpdateAllowances pins the exact errors of the spec changes
// an update may make, and that a refused container list or deadline stops
// the checks that follow. The refusal of any other change quotes a go-cmp
// diff, whose spacing go-cmp varies on purpose: only its first line is
// pinned.
func TestValidatePodUpdateAllowances(t *testing.T) {
	gated := func(p *corev1.Pod) {
		p.Spec.NodeName = ""
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/a"}, {Name: "example.com/b"}}
		p.Spec.NodeSelector = map[string]string{"zone": "a"}
	}
	tests := []struct {
		name   string
		old    func(*corev1.Pod)
		mutate func(*corev1.Pod)
		want   []string
	}{
		{name: "images", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Image = " nginx"
			p.Spec.InitContainers = nil
		}, want: []string{
			"spec.containers[0].image: Invalid value: \" nginx\": must not have leading or trailing whitespace",
			"spec.containers[0].image: Invalid value: \" nginx\": must not have leading or trailing whitespace",
		}},
		{
			name: "init container removed, deadline raised",
			old: func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{validContainer("init")}
				p.Spec.ActiveDeadlineSeconds = ptrTo[int64](60)
			},
			mutate: func(p *corev1.Pod) {
				p.Spec.InitContainers = nil
				p.Spec.ActiveDeadlineSeconds = ptrTo[int64](90)
			},
			want: []string{
				"spec.initContainers: Forbidden: pod updates may not add or remove containers",
			},
		},
		{
			name: "deadline raised stops before tolerations",
			old:  func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptrTo[int64](60) },
			mutate: func(p *corev1.Pod) {
				p.Spec.ActiveDeadlineSeconds = ptrTo[int64](90)
				p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Value: "not valid"}}
			},
			want: []string{
				"spec.tolerations[0].operator: Invalid value: \"not valid\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
				"spec.activeDeadlineSeconds: Invalid value: 90: must be less than or equal to previous value",
			},
		},
		{
			name: "deadline out of range stops",
			mutate: func(p *corev1.Pod) {
				p.Spec.ActiveDeadlineSeconds = ptrTo[int64](-1)
				p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Value: "not valid"}}
			},
			want: []string{
				"spec.activeDeadlineSeconds: Invalid value: -1: must be between 1 and 2147483647, inclusive",
				"spec.tolerations[0].operator: Invalid value: \"not valid\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
				"spec.activeDeadlineSeconds: Invalid value: -1: must be between 0 and 2147483647, inclusive",
			},
		},
		{
			name: "deadline cleared goes on",
			old:  func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptrTo[int64](60) },
			mutate: func(p *corev1.Pod) {
				p.Spec.ActiveDeadlineSeconds = nil
				p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Value: "not valid"}}
			},
			want: []string{
				"spec.tolerations[0].operator: Invalid value: \"not valid\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
				"spec.activeDeadlineSeconds: Invalid value: null: must not update from a positive integer to nil value",
				"spec.tolerations[0].operator: Invalid value: \"not valid\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
			},
		},
		{
			name: "deadline lowered, tolerations added and their seconds changed",
			old: func(p *corev1.Pod) {
				p.Spec.ActiveDeadlineSeconds = ptrTo[int64](60)
				p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo[int64](10)}}
			},
			mutate: func(p *corev1.Pod) {
				p.Spec.ActiveDeadlineSeconds = ptrTo[int64](30)
				p.Spec.Tolerations = []corev1.Toleration{
					{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo[int64](20)},
					{Key: "new", Operator: corev1.TolerationOpExists},
				}
			},
		},
		{
			name: "toleration changed",
			old: func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
			},
			mutate: func(p *corev1.Pod) { p.Spec.Tolerations[0].Key = "j" },
			want: []string{
				"spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds",
			},
		},
		{
			name: "gates removed, selector extended while gated",
			old:  gated,
			mutate: func(p *corev1.Pod) {
				p.Spec.SchedulingGates = p.Spec.SchedulingGates[1:]
				p.Spec.NodeSelector["disk"] = "ssd"
			},
		},
		{
			name: "gate added, selector changed while gated",
			old:  gated,
			mutate: func(p *corev1.Pod) {
				p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: "example.com/c"})
				p.Spec.NodeSelector["zone"] = "b"
			},
			want: []string{
				"spec.schedulingGates[2].name: Forbidden: only deletion is allowed, but found new scheduling gate 'example.com/c'",
				"spec.nodeSelector[zone]: Forbidden: only additions to spec.nodeSelector are allowed (no mutations or deletions)",
			},
		},
		{
			name:   "selector changed once ungated",
			mutate: func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a"} },
			want: []string{
				"spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldP := existingPod()
			if tc.old != nil {
				tc.old(oldP)
			}
			newP := oldP.DeepCopy()
			tc.mutate(newP)
			errs := ValidatePodUpdate(newP, oldP)
			for _, e := range errs {
				if e.Field == "spec" {
					e.Detail, _, _ = strings.Cut(e.Detail, "\n")
				}
			}
			expectExactErrors(t, errs, tc.want)
		})
	}
}
