package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestAgentTellsWhatItWaitsFor: at the default log level the agent says which command would
// finish its pending kubelet-serving CSR, and a restart reuses that CSR instead of filing
// another; a pod whose secret is missing gets a FailedMount event and one log line with the
// reason, and one more once its files are written.
func TestAgentTellsWhatItWaitsFor(t *testing.T) {
	t.Parallel()
	s := startServer(t) // serving approval off
	a := startAgent(t, s, "node-t")

	servingCSRs := func() []string {
		out := s.kubectl(t, "get", "csr", "-o", `jsonpath={range .items[?(@.spec.signerName=="kubernetes.io/kubelet-serving")]}{.metadata.name}{"\n"}{end}`)
		return strings.Fields(out)
	}
	var name string
	eventually(t, 60*time.Second, func() error {
		if got := servingCSRs(); len(got) != 1 {
			return fmt.Errorf("serving CSRs %v, want one", got)
		}
		name = servingCSRs()[0]
		return nil
	})

	// Restart at the default verbosity; read only what this run logs.
	a.stop(t)
	a.args = slices.DeleteFunc(a.args, func(arg string) bool { return strings.HasPrefix(arg, "-v=") })
	before, err := os.ReadFile(a.logPath)
	if err != nil {
		t.Fatal(err)
	}
	log := func() string {
		data, _ := os.ReadFile(a.logPath)
		return string(data[len(before):])
	}
	a.start(t)
	eventually(t, 60*time.Second, func() error {
		if !strings.Contains(log(), "kubectl certificate approve "+name) {
			return fmt.Errorf("no hint naming %s in the agent's log", name)
		}
		return nil
	})
	if got := servingCSRs(); !slices.Equal(got, []string{name}) {
		t.Errorf("serving CSRs after a restart %v, want still just %s", got, name)
	}

	s.kubectl(t, "create", "namespace", "tell")
	s.ensureServiceAccount(t, "tell", "default")
	s.kubectl(t, "create", "-f", manifest(t, `apiVersion: v1
kind: Pod
metadata: {name: web, namespace: tell}
spec:
  nodeName: node-t
  containers: [{name: app, image: busybox}]
  volumes: [{name: creds, secret: {secretName: db-password}}]
`))
	eventually(t, 60*time.Second, func() error {
		out := s.kubectl(t, "get", "events", "-n", "tell", "-o", `jsonpath={range .items[*]}{.type} {.reason} {.involvedObject.name} {.message}{"\n"}{end}`)
		if !strings.Contains(out, `Warning FailedMount web `) || !strings.Contains(out, `db-password`) {
			return fmt.Errorf("no FailedMount event for pod web naming the secret:\n%s", out)
		}
		return nil
	})
	eventually(t, 30*time.Second, func() error {
		if l := log(); !strings.Contains(l, `"Pod volumes not written" pod="tell/web"`) || !strings.Contains(l, `reason="VolumeNotReady"`) {
			return fmt.Errorf("no line about pod web's failure with its reason in:\n%s", l)
		}
		return nil
	})
	s.kubectl(t, "create", "secret", "generic", "db-password", "-n", "tell", "--from-literal=password=s3cret")
	eventually(t, 60*time.Second, func() error {
		if !strings.Contains(log(), `"Pod volumes written" pod="tell/web"`) {
			return fmt.Errorf("no line that pod web's volumes are written")
		}
		return nil
	})
	if n := strings.Count(log(), `"Pod volumes not written" pod="tell/web"`); n != 1 {
		t.Errorf("%d failure lines for pod web, want 1", n)
	}

	// The hint works: approving that CSR gives the agent its certificate.
	s.kubectl(t, "certificate", "approve", name)
	eventually(t, 60*time.Second, func() error {
		if _, err := os.Stat(filepath.Join(a.rootDir, "pki", "kubelet-server-current.pem")); err != nil {
			return fmt.Errorf("no serving certificate yet: %v", err)
		}
		if _, err := os.Stat(filepath.Join(a.rootDir, "pki", "kubelet-server-pending.key")); !os.IsNotExist(err) {
			return fmt.Errorf("the pending key is still there (%v)", err)
		}
		return nil
	})
	for line := range strings.Lines(log()) {
		if strings.HasPrefix(line, "E") {
			t.Errorf("the agent logged an error at the default level: %s", line)
		}
	}
}
