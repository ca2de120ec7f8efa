package apiserver

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func windowsOptions(runAsUserName string) *corev1.SecurityContext {
	return &corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{RunAsUserName: &runAsUserName}}
}

// expectInvalidAt asserts a 422 whose causes include one at path.
func expectInvalidAt(t *testing.T, what string, err error, path string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("%s: got %v, want Invalid", what, err)
	}
	status := err.(apierrors.APIStatus).Status()
	if status.Code != 422 || status.Details == nil {
		t.Fatalf("%s: status %+v, want 422 with details", what, status)
	}
	for _, c := range status.Details.Causes {
		if c.Field == path {
			return
		}
	}
	t.Errorf("%s: causes %+v, want one at %s", what, status.Details.Causes, path)
}

func TestWindowsOptionsValidation(t *testing.T) {
	ts := startTestServer(t, t.TempDir(), nil)
	ctx := context.Background()
	ensureServiceAccount(t, ts.client, "default", "default")
	pods := ts.client.CoreV1().Pods("default")

	bad := newPod("bad-user", func(p *corev1.Pod) {
		p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
		p.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "registry.example/setup:1", SecurityContext: windowsOptions(`CORP\setup\admin`)}}
	})
	_, err := pods.Create(ctx, bad, metav1.CreateOptions{})
	expectInvalidAt(t, "two backslashes in an init container's user name", err, "spec.initContainers[0].securityContext.windowsOptions.runAsUserName")

	good := newPod("windows-app", func(p *corev1.Pod) {
		p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
		p.Spec.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{RunAsUserName: ptr("ContainerUser")}}
		p.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "registry.example/setup:1", SecurityContext: windowsOptions(`contoso.com\setup`)}}
		p.Spec.Containers[0].SecurityContext = windowsOptions(`NT AUTHORITY\NETWORK SERVICE`)
	})
	created, err := pods.Create(ctx, good, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("valid Windows pod: %v", err)
	}
	if got := *created.Spec.InitContainers[0].SecurityContext.WindowsOptions.RunAsUserName; got != `contoso.com\setup` {
		t.Errorf("init container user name stored as %q", got)
	}

	created.Spec.Containers[0].SecurityContext.WindowsOptions.RunAsUserName = ptr(`NT AUTHORITY\SYSTEM`)
	_, err = pods.Update(ctx, created, metav1.UpdateOptions{})
	expectInvalidAt(t, "changing a container's user name", err, "spec")

	hostProcess := newPod("host-process", func(p *corev1.Pod) {
		p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
		p.Spec.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{
			HostProcess: ptr(true), RunAsUserName: ptr(`NT AUTHORITY\SYSTEM`),
		}}
	})
	_, err = pods.Create(ctx, hostProcess, metav1.CreateOptions{})
	expectInvalidAt(t, "host-process pod without host network", err, "spec.hostNetwork")
	hostProcess.Spec.HostNetwork = true
	if _, err := pods.Create(ctx, hostProcess, metav1.CreateOptions{}); err != nil {
		t.Errorf("host-process pod on the host network: %v", err)
	}
}
