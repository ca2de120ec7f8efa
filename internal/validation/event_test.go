package validation

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// validLegacyEvent is an event as client-go's legacy recorder writes it.
func validLegacyEvent() *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web.17f3a1c2b3d4e5f6", Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"},
		Reason:         "Scheduled",
		Message:        "Successfully assigned default/web to node-1",
		Source:         corev1.EventSource{Component: "default-scheduler"},
		Count:          1,
		Type:           corev1.EventTypeNormal,
	}
}

// validNewEvent is an event as the events.k8s.io recorder writes it.
func validNewEvent() *corev1.Event {
	e := validLegacyEvent()
	e.EventTime = metav1.NewMicroTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	e.Count = 0
	e.Source = corev1.EventSource{}
	e.ReportingController = "example.com/controller"
	e.ReportingInstance = "controller-0"
	e.Action = "Reconcile"
	return e
}

func TestValidateEvent(t *testing.T) {
	tests := []struct {
		name  string
		event func() *corev1.Event
		want  []want
	}{
		{name: "legacy", event: validLegacyEvent},
		{name: "new style", event: validNewEvent},
		{
			name: "legacy event about a cluster-scoped object in default",
			event: func() *corev1.Event {
				e := validLegacyEvent()
				e.InvolvedObject = corev1.ObjectReference{Kind: "Node", Name: "node-1"}
				return e
			},
		},
		{
			name: "lenient name",
			event: func() *corev1.Event {
				e := validLegacyEvent()
				e.Name = "Web_Pod.ABC"
				return e
			},
		},
		{
			name: "name with slash",
			event: func() *corev1.Event {
				e := validLegacyEvent()
				e.Name = "a/b"
				return e
			},
			want: []want{invalid("metadata.name")},
		},
		{
			name: "namespace mismatch",
			event: func() *corev1.Event {
				e := validLegacyEvent()
				e.InvolvedObject.Namespace = "other"
				return e
			},
			want: []want{invalid("involvedObject.namespace")},
		},
		{
			name: "cluster-scoped object in another namespace",
			event: func() *corev1.Event {
				e := validLegacyEvent()
				e.Namespace = "team-a"
				e.InvolvedObject = corev1.ObjectReference{Kind: "Node", Name: "node-1"}
				return e
			},
			want: []want{invalid("involvedObject.namespace")},
		},
		{
			name: "unknown type",
			event: func() *corev1.Event {
				e := validLegacyEvent()
				e.Type = "Error"
				return e
			},
			want: []want{notSupported("type")},
		},
		{
			name: "negative count",
			event: func() *corev1.Event {
				e := validLegacyEvent()
				e.Count = -1
				return e
			},
			want: []want{invalid("count")},
		},
		{
			name: "long legacy message is accepted",
			event: func() *corev1.Event {
				e := validLegacyEvent()
				e.Message = strings.Repeat("m", 2000)
				return e
			},
		},
		{
			name: "new style without reporter",
			event: func() *corev1.Event {
				e := validNewEvent()
				e.ReportingController, e.ReportingInstance, e.Action = "", "", ""
				return e
			},
			want: []want{required("reportingController"), required("reportingInstance"), required("action")},
		},
		{
			name: "new style with long texts",
			event: func() *corev1.Event {
				e := validNewEvent()
				e.Reason = strings.Repeat("r", 129)
				e.Message = strings.Repeat("m", 1025)
				return e
			},
			want: []want{invalid("reason"), invalid("message")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidateEvent(tc.event()), tc.want...)
		})
	}
}

func TestValidateEventUpdate(t *testing.T) {
	oldE := validLegacyEvent()
	oldE.ResourceVersion = "11"

	newE := oldE.DeepCopy()
	newE.Count = 2
	newE.LastTimestamp = metav1.Now()
	expectErrors(t, ValidateEventUpdate(newE, oldE))

	newE = oldE.DeepCopy()
	newE.Namespace = "kube-system"
	newE.InvolvedObject.Namespace = "kube-system"
	expectErrors(t, ValidateEventUpdate(newE, oldE), invalid("metadata.namespace"))
}
