package printers

import (
	"context"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func running(name string, ready bool, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name: name, Ready: ready, RestartCount: restarts,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
	}
}

func waiting(name, reason string, restarts int32, lastExit time.Duration) corev1.ContainerStatus {
	st := corev1.ContainerStatus{
		Name: name, RestartCount: restarts,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}},
	}
	if lastExit > 0 {
		st.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: ago(lastExit)}
	}
	return st
}

func terminated(name, reason string, exitCode, signal int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name:  name,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: exitCode, Signal: signal}},
	}
}

func containers(names ...string) []corev1.Container {
	var cs []corev1.Container
	for _, n := range names {
		cs = append(cs, corev1.Container{Name: n})
	}
	return cs
}

func condition(t corev1.PodConditionType, s corev1.ConditionStatus) corev1.PodCondition {
	return corev1.PodCondition{Type: t, Status: s}
}

func TestPods(t *testing.T) {
	sidecar := corev1.Container{Name: "proxy", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}
	tests := []struct {
		name string
		pod  corev1.Pod
		// NAME READY STATUS RESTARTS AGE IP NODE NOMINATED-NODE READINESS-GATES
		want []any
	}{
		{
			name: "pending without statuses",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: ago(30 * time.Second)},
				Spec:       corev1.PodSpec{Containers: containers("app")},
				Status:     corev1.PodStatus{Phase: corev1.PodPending},
			},
			want: []any{"p", "0/1", "Pending", "0", "30s", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "running and ready, wide cells filled",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: ago(3 * time.Hour)},
				Spec: corev1.PodSpec{
					Containers:     containers("app", "log"),
					NodeName:       "node-1",
					ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: "example.com/dns"}},
				},
				Status: corev1.PodStatus{
					Phase:             corev1.PodRunning,
					PodIPs:            []corev1.PodIP{{IP: "10.0.0.7"}, {IP: "fd00::7"}},
					NominatedNodeName: "node-2",
					Conditions:        []corev1.PodCondition{condition("example.com/lb", corev1.ConditionTrue), condition("example.com/dns", corev1.ConditionFalse)},
					ContainerStatuses: []corev1.ContainerStatus{running("app", true, 0), running("log", false, 0)},
				},
			},
			want: []any{"p", "1/2", "Running", "0", "3h", "10.0.0.7", "node-1", "node-2", "1/2"},
		},
		{
			name: "crash loop shows reason and time since last restart",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: ago(time.Hour)},
				Spec:       corev1.PodSpec{Containers: containers("app")},
				Status: corev1.PodStatus{
					Phase:             corev1.PodRunning,
					ContainerStatuses: []corev1.ContainerStatus{waiting("app", "CrashLoopBackOff", 5, 5*time.Minute)},
				},
			},
			want: []any{"p", "0/1", "CrashLoopBackOff", "5 (5m ago)", "60m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "waiting for the first init container",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p"},
				Spec:       corev1.PodSpec{InitContainers: containers("migrate"), Containers: containers("app")},
				Status: corev1.PodStatus{
					Phase:                 corev1.PodPending,
					InitContainerStatuses: []corev1.ContainerStatus{waiting("migrate", "PodInitializing", 0, 0)},
					ContainerStatuses:     []corev1.ContainerStatus{waiting("app", "PodInitializing", 0, 0)},
				},
			},
			want: []any{"p", "0/1", "Init:0/1", "0", "<unknown>", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "second init container crash looping, restarts counted from init containers",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p"},
				Spec:       corev1.PodSpec{InitContainers: containers("a", "b"), Containers: containers("app")},
				Status: corev1.PodStatus{
					Phase: corev1.PodPending,
					InitContainerStatuses: []corev1.ContainerStatus{
						terminated("a", "Completed", 0, 0),
						waiting("b", "CrashLoopBackOff", 3, 2*time.Minute),
					},
				},
			},
			want: []any{"p", "0/1", "Init:CrashLoopBackOff", "3 (2m ago)", "<unknown>", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "failed init container without reason shows exit code",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p"},
				Spec:       corev1.PodSpec{InitContainers: containers("a"), Containers: containers("app")},
				Status: corev1.PodStatus{
					Phase:                 corev1.PodPending,
					InitContainerStatuses: []corev1.ContainerStatus{terminated("a", "", 2, 0)},
				},
			},
			want: []any{"p", "0/1", "Init:ExitCode:2", "0", "<unknown>", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "started sidecar counts as a ready container",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p"},
				Spec:       corev1.PodSpec{InitContainers: []corev1.Container{sidecar}, Containers: containers("app")},
				Status: corev1.PodStatus{
					Phase:      corev1.PodRunning,
					Conditions: []corev1.PodCondition{condition(corev1.PodInitialized, corev1.ConditionTrue)},
					InitContainerStatuses: []corev1.ContainerStatus{func() corev1.ContainerStatus {
						st := running("proxy", true, 1)
						st.Started = ptr.To(true)
						st.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{FinishedAt: ago(10 * time.Minute)}
						return st
					}()},
					ContainerStatuses: []corev1.ContainerStatus{running("app", true, 0)},
				},
			},
			want: []any{"p", "2/2", "Running", "1 (10m ago)", "<unknown>", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "succeeded pod is Completed",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p"},
				Spec:       corev1.PodSpec{Containers: containers("job")},
				Status: corev1.PodStatus{
					Phase:             corev1.PodSucceeded,
					ContainerStatuses: []corev1.ContainerStatus{terminated("job", "Completed", 0, 0)},
				},
			},
			want: []any{"p", "0/1", "Completed", "0", "<unknown>", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "completed container beside a running one is NotReady without the Ready condition",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p"},
				Spec:       corev1.PodSpec{Containers: containers("main", "helper")},
				Status: corev1.PodStatus{
					Phase:             corev1.PodRunning,
					ContainerStatuses: []corev1.ContainerStatus{terminated("main", "Completed", 0, 0), running("helper", true, 0)},
				},
			},
			want: []any{"p", "1/2", "NotReady", "0", "<unknown>", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "completed container beside a running one is Running with the Ready condition",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p"},
				Spec:       corev1.PodSpec{Containers: containers("main", "helper")},
				Status: corev1.PodStatus{
					Phase:             corev1.PodRunning,
					Conditions:        []corev1.PodCondition{condition(corev1.PodReady, corev1.ConditionTrue)},
					ContainerStatuses: []corev1.ContainerStatus{terminated("main", "Completed", 0, 0), running("helper", true, 0)},
				},
			},
			want: []any{"p", "1/2", "Running", "0", "<unknown>", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "killed container without reason shows the signal",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p"},
				Spec:       corev1.PodSpec{Containers: containers("app")},
				Status: corev1.PodStatus{
					Phase:             corev1.PodRunning,
					ContainerStatuses: []corev1.ContainerStatus{terminated("app", "", 137, 9)},
				},
			},
			want: []any{"p", "0/1", "Signal:9", "0", "<unknown>", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "deleting a running pod shows Terminating",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p", DeletionTimestamp: ptr.To(ago(time.Second))},
				Spec:       corev1.PodSpec{Containers: containers("app")},
				Status: corev1.PodStatus{
					Phase:             corev1.PodRunning,
					ContainerStatuses: []corev1.ContainerStatus{running("app", true, 0)},
				},
			},
			want: []any{"p", "1/1", "Terminating", "0", "<unknown>", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "deleting a finished pod keeps its status",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p", DeletionTimestamp: ptr.To(ago(time.Second))},
				Spec:       corev1.PodSpec{Containers: containers("app")},
				Status: corev1.PodStatus{
					Phase:             corev1.PodFailed,
					ContainerStatuses: []corev1.ContainerStatus{terminated("app", "Error", 1, 0)},
				},
			},
			want: []any{"p", "0/1", "Error", "0", "<unknown>", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "deleting a pod on a lost node shows Unknown",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p", DeletionTimestamp: ptr.To(ago(time.Second))},
				Spec:       corev1.PodSpec{Containers: containers("app")},
				Status:     corev1.PodStatus{Phase: corev1.PodRunning, Reason: "NodeLost"},
			},
			want: []any{"p", "0/1", "Unknown", "0", "<unknown>", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "scheduling gated pod",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p"},
				Spec:       corev1.PodSpec{Containers: containers("app")},
				Status: corev1.PodStatus{
					Phase:      corev1.PodPending,
					Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "SchedulingGated"}},
				},
			},
			want: []any{"p", "0/1", "SchedulingGated", "0", "<unknown>", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "evicted pod shows the pod reason",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p"},
				Spec:       corev1.PodSpec{Containers: containers("app")},
				Status:     corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"},
			},
			want: []any{"p", "0/1", "Evicted", "0", "<unknown>", "<none>", "<none>", "<none>", "<none>"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cells(t, pods, &tt.pod); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("cells = %#v\nwant    %#v", got, tt.want)
			}
		})
	}
}

func TestPodRowConditions(t *testing.T) {
	completed := func(reason, message string) []metav1.TableRowCondition {
		return []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: reason, Message: message}}
	}
	tests := map[corev1.PodPhase][]metav1.TableRowCondition{
		corev1.PodSucceeded: completed("Succeeded", "The pod has completed successfully."),
		corev1.PodFailed:    completed("Failed", "The pod failed."),
		corev1.PodRunning:   nil,
		corev1.PodPending:   nil,
	}
	for phase, want := range tests {
		t.Run(string(phase), func(t *testing.T) {
			table, err := frozen(pods).ConvertToTable(context.Background(), &corev1.Pod{Status: corev1.PodStatus{Phase: phase}}, nil)
			if err != nil {
				t.Fatalf("ConvertToTable: %v", err)
			}
			if got := table.Rows[0].Conditions; !reflect.DeepEqual(got, want) {
				t.Errorf("conditions = %v, want %v", got, want)
			}
		})
	}
}
