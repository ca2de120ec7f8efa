package pods

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
)

// announce tells, at the default log level, what became of a pod's files when that changed
// since the agent last told: written, or not and why. A secret or config map the pod needs that
// does not exist also gets a FailedMount event on the pod, as the kubelet's, once per change;
// waiting for one to appear is no error of the agent's, so nothing louder is logged.
func (m *Manager) announce(ctx context.Context, pod *corev1.Pod, p *problem) {
	outcome := ""
	if p != nil {
		outcome = p.reason + "\x00" + p.message
	}
	m.mu.Lock()
	last, told := m.announced[pod.UID]
	m.announced[pod.UID] = outcome
	m.mu.Unlock()
	if told && last == outcome {
		return
	}
	logger := klog.FromContext(ctx)
	if p == nil {
		logger.Info("Pod volumes written", "pod", klog.KObj(pod), "uid", pod.UID)
		return
	}
	logger.Info("Pod volumes not written", "pod", klog.KObj(pod), "uid", pod.UID, "reason", p.reason, "message", p.message)
	if p.missing && !p.event {
		m.c.Recorder.Event(pod, corev1.EventTypeWarning, "FailedMount", p.message)
	}
}

// missingObject reports whether err, or any error it wraps or joins, says that a secret or a
// config map does not exist.
func missingObject(err error) bool {
	if err == nil {
		return false
	}
	if status, ok := err.(apierrors.APIStatus); ok && apierrors.IsNotFound(err) {
		if d := status.Status().Details; d != nil && (d.Kind == "secrets" || d.Kind == "configmaps") {
			return true
		}
	}
	switch e := err.(type) {
	case interface{ Unwrap() error }:
		return missingObject(e.Unwrap())
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			if missingObject(inner) {
				return true
			}
		}
	}
	return false
}

// isProblem tells a pod's unready files, which announce reports, from a failure of the sync.
func isProblem(err error) bool {
	var p *problem
	return errors.As(err, &p)
}
