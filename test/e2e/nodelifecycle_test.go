package e2e

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// TestNodeLifecycle: a node whose agent stops shows NotReady in kubectl, tainted unreachable,
// with its pods not Ready, and Ready again, untainted, once its agent is back.
func TestNodeLifecycle(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	// The agent renews its lease every 10 s; the grace leaves room for a busy machine.
	s := startServer(t, fmt.Sprintf("--secure-port=%d", port), "--node-monitor-grace-period=20s", "--node-monitor-period=500ms")
	a := startAgent(t, s, "node-l")
	status := func() (string, error) {
		return s.kubectlErr("get", "node", "node-l", "--no-headers", "-o", "custom-columns=STATUS:.status.conditions[?(@.type==\"Ready\")].status,REASON:.status.conditions[?(@.type==\"Ready\")].reason,TAINTS:.spec.taints[*].key")
	}
	printed := func(want string) error {
		out, err := s.kubectlErr("get", "node", "node-l", "--no-headers")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		if f := strings.Fields(out); len(f) < 2 || f[1] != want {
			return fmt.Errorf("kubectl get node: %q, want status %s", out, want)
		}
		return nil
	}
	eventually(t, 60*time.Second, func() error { return printed("Ready") })

	s.kubectl(t, "create", "namespace", "l")
	s.ensureServiceAccount(t, "l", "default")
	s.kubectl(t, "create", "-f", manifest(t, `apiVersion: v1
kind: Pod
metadata: {name: web, namespace: l}
spec:
  nodeName: node-l
  containers: [{name: app, image: busybox}]
`))
	// The agent reports no Ready condition for pods; set one as a kubelet would have.
	s.kubectl(t, "patch", "pod", "web", "-n", "l", "--subresource=status", "--type=merge", "-p",
		`{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`)

	a.stop(t)
	eventually(t, 90*time.Second, func() error {
		if err := printed("NotReady"); err != nil {
			return err
		}
		out, err := status()
		if err != nil || !strings.Contains(out, "Unknown") || !strings.Contains(out, "NodeStatusUnknown") || !strings.Contains(out, "node.kubernetes.io/unreachable,node.kubernetes.io/unreachable") {
			return fmt.Errorf("node-l: %q (%v), want Ready Unknown NodeStatusUnknown and both unreachable taints", out, err)
		}
		return nil
	})
	out := s.kubectl(t, "get", "node", "node-l", "-o", "jsonpath={range .spec.taints[*]}{.effect}={.timeAdded};{end}")
	if !strings.Contains(out, "NoSchedule=;") || !strings.Contains(out, "NoExecute=20") {
		t.Errorf("taints %q: want NoSchedule and NoExecute with its time added", out)
	}
	eventually(t, 30*time.Second, func() error {
		out, err := s.kubectlErr("get", "pod", "web", "-n", "l", "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}")
		if err != nil || out != "False" {
			return fmt.Errorf("pod web on the silent node: Ready %q (%v), want False", out, err)
		}
		return nil
	})
	out = s.kubectl(t, "describe", "node", "node-l")
	if !strings.Contains(out, "Kubelet stopped posting node status.") {
		t.Errorf("kubectl describe node shows no %q:\n%s", "Kubelet stopped posting node status.", out)
	}

	a.start(t)
	eventually(t, 60*time.Second, func() error {
		if err := printed("Ready"); err != nil {
			return err
		}
		out, err := status()
		if err != nil || strings.Contains(out, "unreachable") {
			return fmt.Errorf("node-l: %q (%v), want no unreachable taints", out, err)
		}
		return nil
	})
}
