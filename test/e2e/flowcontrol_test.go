package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestPriorityAndFairnessWithKubectl: stock kubectl lists the bootstrap flow schemas and
// priority levels with upstream's columns, an admin edits a suggested schema after turning its
// autoupdate off and the edit stays, and a node may not touch them.
func TestPriorityAndFairnessWithKubectl(t *testing.T) {
	t.Parallel()
	s := startServer(t)

	out := s.kubectl(t, "get", "flowschemas,prioritylevelconfigurations")
	for _, want := range []string{
		`(?m)^NAME\s+PRIORITYLEVEL\s+MATCHINGPRECEDENCE\s+DISTINGUISHERMETHOD\s+AGE\s+MISSINGPL$`,
		`(?m)^flowschema\.flowcontrol\.apiserver\.k8s\.io/exempt\s+exempt\s+1\s+<none>\s+\S+\s+\S+$`,
		`(?m)^flowschema\.flowcontrol\.apiserver\.k8s\.io/system-nodes\s+system\s+500\s+ByUser\s+`,
		`(?m)^NAME\s+TYPE\s+NOMINALCONCURRENCYSHARES\s+QUEUES\s+HANDSIZE\s+QUEUELENGTHLIMIT\s+AGE$`,
		`(?m)^prioritylevelconfiguration\.flowcontrol\.apiserver\.k8s\.io/catch-all\s+Limited\s+5\s+<none>\s+<none>\s+<none>\s+`,
		`(?m)^prioritylevelconfiguration\.flowcontrol\.apiserver\.k8s\.io/system\s+Limited\s+30\s+64\s+6\s+50\s+`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("kubectl get flowschemas,prioritylevelconfigurations has no line matching %s:\n%s", want, out)
		}
	}
	// The config consumer judges every schema: MISSINGPL turns False.
	eventually(t, 30*time.Second, func() error {
		out, err := s.kubectlErr("get", "flowschema", "system-nodes", "-o", "jsonpath={.status.conditions[?(@.type==\"Dangling\")].status}")
		if err != nil || out != "False" {
			return fmt.Errorf("Dangling condition %q (%v), want False", out, err)
		}
		return nil
	})

	s.kubectl(t, "annotate", "flowschema", "system-nodes", "apf.kubernetes.io/autoupdate-spec=false", "--overwrite")
	s.kubectl(t, "patch", "flowschema", "system-nodes", "--type", "merge", "-p", `{"spec":{"matchingPrecedence":450}}`)
	if out := s.kubectl(t, "get", "flowschema", "system-nodes", "-o", "jsonpath={.spec.matchingPrecedence} {.metadata.generation}"); out != "450 2" {
		t.Errorf("after the edit: precedence and generation %q, want \"450 2\"", out)
	}
	out, err := s.kubectlErr("patch", "flowschema", "catch-all", "--type", "merge", "-p", `{"spec":{"matchingPrecedence":9000}}`)
	if err == nil || !strings.Contains(out, "spec of 'catch-all' must equal the fixed value") {
		t.Errorf("editing the mandatory catch-all: %v\n%s", err, out)
	}

	node := s.userKubeconfig(t, "system:node:n1", "system:nodes")
	if out, err := s.kubectlAs(node, "delete", "flowschema", "system-nodes"); err == nil || !strings.Contains(out, "Forbidden") {
		t.Errorf("node deleting system-nodes: %v\n%s", err, out)
	}
}
