package e2e

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// designExample is the GMSACredentialSpec of the GMSA design, as its users have it on disk.
const designExample = `apiVersion: windows.k8s.io/v1alpha1
kind: GMSACredentialSpec
metadata:
  name: "webapp1-credspec"
credspec:
  ActiveDirectoryConfig:
    GroupManagedServiceAccounts:
    - Name: WebApplication1
      Scope: CONTOSO
    - Name: WebApplication1
      Scope: contoso.com
  CmsPlugins:
  - ActiveDirectory
  DomainJoinConfig:
    DnsName: contoso.com
    DnsTreeName: contoso.com
    Guid: 244818ae-87ca-4fcd-92ec-e79e5252348a
    MachineAccountName: WebApplication1
    NetBiosName: CONTOSO
    Sid: S-1-5-21-2126729477-2524075714-3094792973
`

func TestGMSACredentialSpecs(t *testing.T) {
	t.Parallel()
	s := startServer(t)

	// applyClean runs kubectl apply and requires it to say nothing on stderr: kubectl warns there
	// when it cannot compute a patch the way the server's OpenAPI told it to.
	applyClean := func(t *testing.T, content string, args ...string) string {
		t.Helper()
		stdout, stderr, err := s.run(s.Kubeconfig, append([]string{"apply", "-f", manifest(t, content)}, args...)...)
		if err != nil || stderr != "" {
			t.Fatalf("kubectl apply %v: %v\nstderr: %s\nstdout: %s", args, err, stderr, stdout)
		}
		return stdout
	}
	jsonpath := func(t *testing.T, version, path string) string {
		t.Helper()
		return s.kubectl(t, "get", "gmsacredentialspecs."+version+".windows.k8s.io", "webapp1-credspec", "-o", "jsonpath="+path)
	}

	t.Run("the CRD is there and established", func(t *testing.T) {
		out := s.kubectl(t, "get", "crd")
		if !regexp.MustCompile(`(?m)^gmsacredentialspecs\.windows\.k8s\.io\s+\d{4}-`).MatchString(out) {
			t.Errorf("kubectl get crd:\n%s", out)
		}
		stdout, stderr, err := s.run(s.Kubeconfig, "wait", "--for", "condition=established", "--timeout=20s", "crd/gmsacredentialspecs.windows.k8s.io")
		if err != nil || stderr != "" || !strings.Contains(stdout, "condition met") {
			t.Errorf("kubectl wait: %v\nstdout: %s\nstderr: %s", err, stdout, stderr)
		}
	})

	t.Run("the design's example applies unchanged", func(t *testing.T) {
		if out := applyClean(t, designExample); out != "gmsacredentialspec.windows.k8s.io/webapp1-credspec created\n" {
			t.Errorf("first apply printed %q", out)
		}
		if out := applyClean(t, designExample); out != "gmsacredentialspec.windows.k8s.io/webapp1-credspec unchanged\n" {
			t.Errorf("second apply printed %q", out)
		}
		for _, version := range []string{"v1", "v1alpha1"} {
			if got := jsonpath(t, version, "{.credspec.DomainJoinConfig.Guid} {.credspec.ActiveDirectoryConfig.GroupManagedServiceAccounts[1].Scope}"); got != "244818ae-87ca-4fcd-92ec-e79e5252348a contoso.com" {
				t.Errorf("%s shows %q", version, got)
			}
		}
		out := s.kubectl(t, "get", "gmsacredentialspecs")
		if !regexp.MustCompile(`^NAME\s+AGE\nwebapp1-credspec\s+\d+s\n$`).MatchString(out) {
			t.Errorf("kubectl get gmsacredentialspecs:\n%s", out)
		}
	})

	t.Run("apply at v1 changes it and keeps fields nobody declared", func(t *testing.T) {
		changed := strings.NewReplacer(
			"windows.k8s.io/v1alpha1", "windows.k8s.io/v1",
			"NetBiosName: CONTOSO", "NetBiosName: CONTOSO2",
			"  CmsPlugins:", "  FutureField:\n    added: [1, {x: z}]\n  CmsPlugins:",
		).Replace(designExample)
		if out := applyClean(t, changed); out != "gmsacredentialspec.windows.k8s.io/webapp1-credspec configured\n" {
			t.Errorf("apply printed %q", out)
		}
		if got := jsonpath(t, "v1alpha1", "{.credspec.DomainJoinConfig.NetBiosName} {.credspec.FutureField.added[1].x}"); got != "CONTOSO2 z" {
			t.Errorf("after apply: %q", got)
		}
		// Back to the design's example: apply removes what it added, as with any object.
		applyClean(t, designExample)
		if got := jsonpath(t, "v1", "{.credspec.DomainJoinConfig.NetBiosName}|{.credspec.FutureField}"); got != "CONTOSO|" {
			t.Errorf("after re-applying the example: %q", got)
		}
	})

	t.Run("server-side apply", func(t *testing.T) {
		ssa := strings.Replace(designExample, "MachineAccountName: WebApplication1", "MachineAccountName: WebApp1", 1)
		if out := applyClean(t, ssa, "--server-side", "--force-conflicts"); out != "gmsacredentialspec.windows.k8s.io/webapp1-credspec serverside-applied\n" {
			t.Errorf("server-side apply printed %q", out)
		}
		if got := jsonpath(t, "v1", "{.credspec.DomainJoinConfig.MachineAccountName}"); got != "WebApp1" {
			t.Errorf("after server-side apply: %q", got)
		}
	})

	t.Run("patch", func(t *testing.T) {
		s.kubectl(t, "patch", "gmsacredentialspec", "webapp1-credspec", "--type", "merge", "-p", `{"credspec":{"DomainJoinConfig":{"DnsTreeName":"corp.contoso.com"}}}`)
		if got := jsonpath(t, "v1", "{.credspec.DomainJoinConfig.DnsTreeName} {.credspec.DomainJoinConfig.DnsName}"); got != "corp.contoso.com contoso.com" {
			t.Errorf("after merge patch: %q", got)
		}
		// kubectl's default patch type is strategic merge, which, as for a custom resource, the
		// server does not take.
		out, err := s.kubectlErr("patch", "gmsacredentialspec", "webapp1-credspec", "-p", `{"credspec":{"CmsPlugins":[]}}`)
		if err == nil || !strings.Contains(out, "415: Unsupported Media Type") {
			t.Errorf("strategic merge patch: %v\n%s", err, out)
		}
	})

	t.Run("invalid credspecs are refused with the field", func(t *testing.T) {
		for _, tc := range []struct{ name, credspec, want string }{
			{"a string", `credspec: "ActiveDirectory"`, `credspec: Invalid value: must be a JSON object, not a string`},
			{"missing", ``, `credspec: Required value`},
			{"too deep", `credspec: ` + strings.Repeat(`{a: `, 33) + `1` + strings.Repeat(`}`, 33), `must not nest objects and arrays more than 32 levels deep`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				out, err := s.kubectlErr("create", "-f", manifest(t, "apiVersion: windows.k8s.io/v1\nkind: GMSACredentialSpec\nmetadata: {name: bad}\n"+tc.credspec+"\n"))
				if err == nil || !strings.Contains(out, `The GMSACredentialSpec "bad" is invalid`) || !strings.Contains(out, tc.want) {
					t.Errorf("create: %v\n%s", err, out)
				}
			})
		}
	})

	t.Run("explain", func(t *testing.T) {
		out := s.kubectl(t, "explain", "gmsacredentialspecs.credspec")
		if !strings.Contains(out, "GROUP:      windows.k8s.io") || !strings.Contains(out, "FIELD: credspec <CredSpec>") {
			t.Errorf("explain gmsacredentialspecs.credspec:\n%s", out)
		}
	})

	t.Run("delete", func(t *testing.T) {
		if out := s.kubectl(t, "delete", "-f", manifest(t, designExample)); out != "gmsacredentialspec.windows.k8s.io \"webapp1-credspec\" deleted\n" {
			t.Errorf("delete printed %q", out)
		}
	})
}

// TestGMSAUserStory follows the README: a credential spec made by `idplane gmsa credspec`, a role
// to use it bound to one service account, and pods of that account and of another.
func TestGMSAUserStory(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	out, err := exec.Command(idplaneBin, "gmsa", "credspec", "--name", "webapp1-credspec",
		"--account-name", "WebApplication1", "--dns-domain", "contoso.com",
		"--domain-sid", "S-1-5-21-2126729477-2524075714-3094792973", "--domain-guid", "244818ae-87ca-4fcd-92ec-e79e5252348a").Output()
	if err != nil {
		t.Fatalf("idplane gmsa credspec: %v", err)
	}
	s.kubectl(t, "apply", "-f", manifest(t, string(out)))
	// kubectl create clusterrole checks verbs against discovery, which has no "use": a manifest, as
	// the design writes it.
	s.kubectl(t, "apply", "-f", manifest(t, `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: webapp1-credspec-user
rules:
- apiGroups: ["windows.k8s.io"]
  resources: ["gmsacredentialspecs"]
  verbs: ["use"]
  resourceNames: ["webapp1-credspec"]
`))
	s.kubectl(t, "create", "rolebinding", "webapp1-credspec", "--clusterrole", "webapp1-credspec-user", "--serviceaccount", "default:webapp1")
	s.kubectl(t, "create", "serviceaccount", "webapp1")
	s.kubectl(t, "create", "serviceaccount", "other")

	pod := func(name, account string) string {
		return manifest(t, `apiVersion: v1
kind: Pod
metadata:
  name: `+name+`
spec:
  serviceAccountName: `+account+`
  os: {name: windows}
  containers:
  - name: iis
    image: mcr.microsoft.com/windows/servercore/iis
    securityContext:
      windowsOptions: {gmsaCredentialSpecName: webapp1-credspec}
`)
	}
	eventually(t, 10*time.Second, func() error {
		out, err := s.kubectlErr("create", "-f", pod("iis", "webapp1"))
		if err != nil {
			return fmt.Errorf("pod of webapp1: %v\n%s", err, out)
		}
		return nil
	})
	contents := s.kubectl(t, "get", "pod", "iis", "-o", "jsonpath={.spec.containers[0].securityContext.windowsOptions.gmsaCredentialSpec}")
	if !strings.Contains(contents, `"MachineAccountName":"WebApplication1"`) {
		t.Errorf("the pod's credential spec contents are %q, want the spec's credspec", contents)
	}
	out2, err := s.kubectlErr("create", "-f", pod("iis-other", "other"))
	if err == nil || !strings.Contains(out2, "Forbidden") || !strings.Contains(out2, "system:serviceaccount:default:other") {
		t.Errorf("pod of another account (err %v):\n%s", err, out2)
	}
}
