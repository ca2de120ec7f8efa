package pods

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// drain returns the events recorded so far.
func drain(h *harness) []string {
	var out []string
	for {
		select {
		case e := <-h.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func countLines(logs, what string) int {
	n := 0
	for line := range strings.Lines(logs) {
		if strings.Contains(line, what) {
			n++
		}
	}
	return n
}

// A pod whose config map is missing: one info line with the reason and one FailedMount event,
// however often it is retried; once the config map exists, one info line that it is written.
func TestPodOutcomeIsToldOnce(t *testing.T) {
	p := pod("p", corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}}}})
	h := start(t, p)
	eventually(t, "VolumeNotReady", func() bool {
		c := h.condition(t, p)
		return c != nil && c.Status == corev1.ConditionFalse && c.Reason == "VolumeNotReady"
	})
	// The retries come at 50 ms, 100 ms, ...: wait for a few to have passed, by the log.
	eventually(t, "the failure told", func() bool {
		return countLines(h.logs.String(), "Pod volumes not written") > 0
	})
	_, err := h.client.CoreV1().ConfigMaps("ns").Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "absent"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the success told", func() bool {
		return countLines(h.logs.String(), "Pod volumes written") > 0
	})
	// Another sync of the ready pod (a label change) tells nothing new.
	p.Labels = map[string]string{"touched": "yes"}
	if _, err := h.client.CoreV1().Pods("ns").Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the label seen", func() bool {
		got, err := h.client.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
		return err == nil && got.Labels["touched"] == "yes"
	})

	logs := h.logs.String()
	if n := countLines(logs, "Pod volumes not written"); n != 1 {
		t.Errorf("%d failure lines, want 1:\n%s", n, logs)
	}
	if n := countLines(logs, `reason="VolumeNotReady"`); n != 1 || !strings.Contains(logs, `configMap \"absent\"`) {
		t.Errorf("the failure line lacks its reason or the config map's name:\n%s", logs)
	}
	if hasErrorLine(logs) {
		t.Errorf("waiting for a config map logged an error:\n%s", logs)
	}
	events := drain(h)
	failed := 0
	for _, e := range events {
		if strings.HasPrefix(e, "Warning FailedMount ") && strings.Contains(e, `"absent"`) {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("events %q: want one Warning FailedMount naming the config map", events)
	}
}

func TestMissingObject(t *testing.T) {
	secret := apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, "s")
	cm := apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "c")
	bundle := apierrors.NewNotFound(schema.GroupResource{Group: "certificates.k8s.io", Resource: "clustertrustbundles"}, "b")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "s", fmt.Errorf("no"))
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"secret", fmt.Errorf("volume %q: %w", "v", secret), true},
		{"config map among others", fmt.Errorf("v: %w", fmt.Errorf("waits: %w", errors.Join(forbidden, cm))), true},
		{"a trust bundle is not a mount failure of this kind", bundle, false},
		{"forbidden", forbidden, false},
		{"nil", nil, false},
	} {
		if got := missingObject(tc.err); got != tc.want {
			t.Errorf("%s: missingObject = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// hasErrorLine reports whether klog's text output holds an error line.
func hasErrorLine(logs string) bool {
	for line := range strings.Lines(logs) {
		if strings.HasPrefix(line, "ERROR") {
			return true
		}
	}
	return false
}
