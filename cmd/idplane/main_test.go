package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	apimachineryversion "k8s.io/apimachinery/pkg/version"

	"github.com/idplane/idplane/internal/version"
)

// execute runs idplane with args and returns its standard output.
func execute(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := run(root)
	return out.String(), err
}

// TestVersion: --version on any command, and `idplane version`, as Kubernetes components
// print it (component-base's verflag: the line, or =raw the record); -o json is /version's shape.
func TestVersion(t *testing.T) {
	line := "idplane " + version.String() + "\n"
	for _, args := range [][]string{{"--version"}, {"version"}, {"server", "--version"}, {"token", "create", "--version"}, {"gmsa", "--version=true"}} {
		out, err := execute(t, args...)
		if err != nil || out != line {
			t.Errorf("idplane %s: %q, %v; want %q", strings.Join(args, " "), out, err, line)
		}
	}
	out, err := execute(t, "--version=raw")
	if err != nil || !strings.HasPrefix(out, "version.Info{") || !strings.Contains(out, `GitVersion:"`+version.String()+`"`) {
		t.Errorf("--version=raw: %q, %v", out, err)
	}
	if _, err := execute(t, "--version=sometimes"); err == nil {
		t.Errorf("--version=sometimes: no error")
	}
	out, err = execute(t, "version", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var info apimachineryversion.Info
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("decoding %q: %v", out, err)
	}
	if info != *version.Info() {
		t.Errorf("version -o json: %+v, want %+v", info, *version.Info())
	}
	if out, err := execute(t, "version", "-o", "yaml"); err != nil || !strings.Contains(out, "gitVersion: "+version.String()) {
		t.Errorf("version -o yaml: %q, %v", out, err)
	}
	if _, err := execute(t, "version", "-o", "wide"); err == nil {
		t.Errorf("version -o wide: no error")
	}
}

// TestHelpSections: the logging flags are a section of their own, after the command's flags,
// and only the ones Kubernetes components still support; the agent's --node-ip shows one default.
func TestHelpSections(t *testing.T) {
	cases := []struct {
		args    []string
		want    []string // in this order
		without []string
	}{
		{[]string{"--help"}, []string{"Available Commands:", "server", "Logs flags:", "-v, --v", "Global flags:", "--version"}, nil},
		{[]string{"server", "--help"}, []string{"Generic flags:", "--data-dir", "Secure serving flags:", "--secure-port", "Etcd flags:", "--encryption-provider-config", "--etcd-servers",
			"Authentication flags:", "--service-account-issuer", "Authorization flags:", "Admission flags:",
			"--gmsa-alpha-annotations", "Certificates flags:", "Audit flags:", "--print-default-audit-policy", "Leader election flags:",
			"Shutdown flags:", "Logs flags:", "--vmodule", "Global flags:", "-h, --help"}, nil},
		{[]string{"agent", "--help"}, []string{"Agent flags:", "--node-ip", "default: the host's global unicast addresses, else 127.0.0.1).\n", "Logs flags:"}, []string{"(default [])"}},
		{[]string{"token", "create", "--help"}, []string{"Examples:", "Create flags:", "--kubeconfig", "Logs flags:"}, nil},
	}
	// klog's flags that Kubernetes components dropped (KEP 2845).
	dropped := []string{"log_dir", "log-dir", "logtostderr", "alsologtostderr", "stderrthreshold", "skip_headers", "add_dir_header", "one_output", "log_file"}
	for _, tc := range cases {
		out, err := execute(t, tc.args...)
		if err != nil {
			t.Errorf("idplane %v: %v", tc.args, err)
			continue
		}
		rest := out
		for _, w := range tc.want {
			i := strings.Index(rest, w)
			if i < 0 {
				t.Errorf("idplane %v: %q missing or out of order in\n%s", tc.args, w, out)
				break
			}
			rest = rest[i+len(w):]
		}
		for _, w := range append(tc.without, dropped...) {
			if strings.Contains(out, w) {
				t.Errorf("idplane %v: help shows %q:\n%s", tc.args, w, out)
			}
		}
	}
}

// TestSectionOf: a flag goes under the section whose prefix names it, a whole word of its name;
// one no section claims goes under the first.
func TestSectionOf(t *testing.T) {
	sections := []flagSection{
		{"generic", []string{"data-dir"}},
		{"etcd", []string{"etcd-", "encryption-provider-config"}},
		{"leader election", []string{"leader-elect"}},
	}
	cases := map[string]string{
		"data-dir":                   "generic",
		"etcd-servers":               "etcd",
		"encryption-provider-config": "etcd",
		"encryption-provider-config-automatic-reload": "etcd",
		"leader-elect":                "leader election",
		"leader-elect-lease-duration": "leader election",
		"leader-elected":              "generic", // a prefix is a whole word unless it ends in "-"
		"something-new":               "generic",
	}
	for name, want := range cases {
		if got := sectionOf(sections, name); got != want {
			t.Errorf("sectionOf(%q) = %q, want %q", name, got, want)
		}
	}
}
