package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestDiscovery(t *testing.T) {
	t.Parallel()
	s := startServer(t)

	t.Run("version", func(t *testing.T) {
		out := s.kubectl(t, "version")
		if !regexp.MustCompile(`(?m)^Server Version: v1\.37\.`).MatchString(out) {
			t.Errorf("kubectl version shows no v1.37 server:\n%s", out)
		}
		var v struct {
			ServerVersion struct {
				Major, Minor, GitVersion string
			}
		}
		if err := json.Unmarshal([]byte(s.kubectl(t, "version", "-o", "json")), &v); err != nil {
			t.Fatalf("decoding kubectl version -o json: %v", err)
		}
		if sv := v.ServerVersion; sv.Major != "1" || sv.Minor != "37" || !strings.HasPrefix(sv.GitVersion, "v1.37.") {
			t.Errorf("server version = %+v, want major 1, minor 37, gitVersion v1.37.*", sv)
		}
	})

	t.Run("api-resources", func(t *testing.T) {
		out := s.kubectl(t, "api-resources")
		for _, want := range []string{
			`(?m)^pods\s+po\s+v1\s+true\s+Pod$`,
			`(?m)^secrets\s+v1\s+true\s+Secret$`,
			`(?m)^leases\s+coordination\.k8s\.io/v1\s+true\s+Lease$`,
			`(?m)^namespaces\s+ns\s+v1\s+false\s+Namespace$`,
			`(?m)^selfsubjectreviews\s+authentication\.k8s\.io/v1\s+false\s+SelfSubjectReview$`,
		} {
			if !regexp.MustCompile(want).MatchString(out) {
				t.Errorf("api-resources has no line matching %s:\n%s", want, out)
			}
		}
	})

	t.Run("explain", func(t *testing.T) {
		out := s.kubectl(t, "explain", "pods.spec")
		if !regexp.MustCompile(`(?m)^\s+containers\s+<\[\]Container> -required-$`).MatchString(out) {
			t.Errorf("explain pods.spec does not list the required containers field:\n%s", out)
		}
		out = s.kubectl(t, "explain", "leases.spec.holderIdentity")
		if !strings.Contains(out, "GROUP:      coordination.k8s.io") || !strings.Contains(out, "FIELD: holderIdentity <string>") {
			t.Errorf("explain leases.spec.holderIdentity:\n%s", out)
		}
	})
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	s := startServer(t)

	t.Run("whoami", func(t *testing.T) {
		out := s.kubectl(t, "auth", "whoami")
		if !regexp.MustCompile(`(?m)^Username\s+idplane-admin$`).MatchString(out) {
			t.Errorf("whoami does not show user idplane-admin:\n%s", out)
		}
		if !regexp.MustCompile(`(?m)^Groups\s+\[system:masters system:authenticated\]$`).MatchString(out) {
			t.Errorf("whoami does not show groups system:masters and system:authenticated:\n%s", out)
		}
	})

	t.Run("self subject review", func(t *testing.T) {
		ssr := manifest(t, "apiVersion: authentication.k8s.io/v1\nkind: SelfSubjectReview\n")
		out := s.kubectl(t, "create", "-f", ssr, "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")
		if want := `idplane-admin ["system:masters","system:authenticated"]`; out != want {
			t.Errorf("created SelfSubjectReview shows %q, want %q", out, want)
		}
	})

	t.Run("server CA, not a master", func(t *testing.T) {
		cert, key := s.serverCA(t).issueClient(t, "jane", "developers")
		kubeconfig := s.clientKubeconfig(t, cert, key)
		out, err := s.kubectlAs(kubeconfig, "get", "configmaps")
		if err == nil {
			t.Fatalf("jane listed configmaps under AlwaysDeny:\n%s", out)
		}
		want := `Error from server (Forbidden): configmaps is forbidden: User "jane" cannot list resource "configmaps" in API group "" in the namespace "default"`
		if exitCode(err) != 1 || !strings.Contains(out, want) {
			t.Errorf("kubectl get configmaps as jane (exit %d):\n%s\nwant it to contain %s", exitCode(err), out, want)
		}
	})

	t.Run("server CA, master", func(t *testing.T) {
		cert, key := s.serverCA(t).issueClient(t, "root", "system:masters")
		out, err := s.kubectlAs(s.clientKubeconfig(t, cert, key), "get", "namespace", "default", "-o", "name")
		if err != nil || out != "namespace/default\n" {
			t.Errorf("system:masters certificate: err %v, output %q, want namespace/default", err, out)
		}
	})

	t.Run("foreign CA", func(t *testing.T) {
		cert, key := newCA(t, "elsewhere-ca").issueClient(t, "mallory", "system:masters")
		out, err := s.kubectlAs(s.clientKubeconfig(t, cert, key), "get", "configmaps")
		if err == nil {
			t.Fatalf("certificate from a foreign CA was accepted:\n%s", out)
		}
		if exitCode(err) != 1 || !strings.Contains(out, "You must be logged in to the server (Unauthorized)") {
			t.Errorf("kubectl with a foreign CA's certificate (exit %d):\n%s\nwant Unauthorized", exitCode(err), out)
		}
	})
}

func TestCreateApplyDelete(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.ensureServiceAccount(t, "default", "default")

	t.Run("create", func(t *testing.T) {
		out := s.kubectl(t, "create", "-f", manifest(t, `apiVersion: v1
kind: Secret
metadata:
  name: creds
stringData:
  password: hunter2
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: fast
`))
		if out != "secret/creds created\nconfigmap/settings created\n" {
			t.Errorf("create -f printed %q", out)
		}
		if got := s.kubectl(t, "get", "secret", "creds", "-o", "jsonpath={.type} {.data.password}"); got != "Opaque "+base64.StdEncoding.EncodeToString([]byte("hunter2")) {
			t.Errorf("secret creds: got %q, want type Opaque and stringData moved into data", got)
		}
		if got := s.kubectl(t, "get", "configmap", "settings", "-o", "jsonpath={.data.mode}"); got != "fast" {
			t.Errorf("configmap settings data.mode = %q, want fast", got)
		}
		out, err := s.kubectlErr("create", "-f", manifest(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n"))
		if err == nil || !regexp.MustCompile(`Error from server \(AlreadyExists\): .*configmaps "settings" already exists`).MatchString(out) {
			t.Errorf("creating configmap settings again: err %v, output:\n%s", err, out)
		}
	})

	t.Run("apply", func(t *testing.T) {
		const cm = `apiVersion: v1
kind: ConfigMap
metadata:
  name: app
data:
  color: %s
`
		for _, step := range []struct{ color, want string }{
			{"blue", "configmap/app created\n"},
			{"green", "configmap/app configured\n"},
			{"green", "configmap/app unchanged\n"},
		} {
			if out := s.kubectl(t, "apply", "-f", manifest(t, strings.Replace(cm, "%s", step.color, 1))); out != step.want {
				t.Errorf("apply with color %s printed %q, want %q", step.color, out, step.want)
			}
			if got := s.kubectl(t, "get", "configmap", "app", "-o", "jsonpath={.data.color}"); got != step.color {
				t.Errorf("after apply, data.color = %q, want %q", got, step.color)
			}
		}
		last := s.kubectl(t, "get", "configmap", "app", "-o", `jsonpath={.metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration}`)
		if !strings.Contains(last, `"color":"green"`) {
			t.Errorf("last-applied-configuration annotation = %q, want the green manifest", last)
		}
	})

	t.Run("delete", func(t *testing.T) {
		s.kubectl(t, "create", "configmap", "doomed", "--from-literal=a=b")
		s.kubectl(t, "run", "unscheduled", "--image=nginx")
		for _, c := range []struct{ kind, name, want string }{
			{"configmap", "doomed", `configmap "doomed" deleted`},
			// Never scheduled, so the pod has no kubelet to wait for and goes at once.
			{"pod", "unscheduled", `pod "unscheduled" deleted`},
		} {
			if out := s.kubectl(t, "delete", c.kind, c.name); !strings.HasPrefix(out, c.want) {
				t.Errorf("delete %s %s printed %q, want %q", c.kind, c.name, out, c.want)
			}
			out, err := s.kubectlErr("get", c.kind, c.name)
			if err == nil || !strings.Contains(out, "(NotFound)") {
				t.Errorf("get %s %s after delete: err %v, output:\n%s", c.kind, c.name, err, out)
			}
		}
	})
}

func TestGet(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.ensureServiceAccount(t, "default", "default")

	t.Run("wide", func(t *testing.T) {
		s.kubectl(t, "create", "-f", manifest(t, `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  nodeName: node-a
  containers:
  - name: nginx
    image: nginx
`))
		lines := strings.Split(strings.TrimSpace(s.kubectl(t, "get", "pods", "-o", "wide")), "\n")
		if len(lines) != 2 {
			t.Fatalf("get pods -o wide: want a header and one row, got:\n%s", strings.Join(lines, "\n"))
		}
		header, row := columns(lines[0]), columns(lines[1])
		want := []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED NODE", "READINESS GATES"}
		if strings.Join(header, "|") != strings.Join(want, "|") {
			t.Fatalf("wide header = %q, want %q", header, want)
		}
		if len(row) != len(header) {
			t.Fatalf("wide row %q does not match header %q", row, header)
		}
		for i, want := range map[int]string{0: "web", 1: "0/1", 2: "Pending", 5: "<none>", 6: "node-a"} {
			if row[i] != want {
				t.Errorf("column %s = %q, want %q", header[i], row[i], want)
			}
		}
	})

	t.Run("watch", func(t *testing.T) {
		s.kubectl(t, "create", "configmap", "watched", "--from-literal=k=v1")
		w := s.kubectlBackground(t, "get", "configmap", "watched", "--watch", "--output-watch-events",
			"-o", `jsonpath={.type} {.object.data.k}{"\n"}`)
		if got := w.next(t, 10*time.Second); got != "ADDED v1" {
			t.Fatalf("first watch line = %q, want ADDED v1", got)
		}
		s.kubectl(t, "patch", "configmap", "watched", "-p", `{"data":{"k":"v2"}}`)
		if got := w.next(t, 10*time.Second); got != "MODIFIED v2" {
			t.Fatalf("watch line after patch = %q, want MODIFIED v2", got)
		}
		w.stop()
	})
}

// columns splits a kubectl table line at runs of two or more spaces, as the printer pads them.
func columns(line string) []string {
	return regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), -1)
}

func TestPatch(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.ensureServiceAccount(t, "default", "default")
	s.kubectl(t, "create", "-f", manifest(t, `apiVersion: v1
kind: Pod
metadata:
  name: twins
spec:
  containers:
  - name: a
    image: nginx:1.26
  - name: b
    image: nginx:1.26
`))
	s.kubectl(t, "create", "configmap", "cfg", "--from-literal=old=1", "--from-literal=keep=2")

	for _, c := range []struct {
		name, target, typ, patch, jsonpath, want string
	}{{
		// Strategic merge matches containers by name, so a is left alone.
		name: "strategic", target: "pod/twins", typ: "strategic",
		patch:    `{"spec":{"containers":[{"name":"b","image":"nginx:1.27"}]}}`,
		jsonpath: `{range .spec.containers[*]}{.name}={.image} {end}`,
		want:     "a=nginx:1.26 b=nginx:1.27 ",
	}, {
		name: "merge", target: "configmap/cfg", typ: "merge",
		patch:    `{"data":{"old":null,"new":"3"}}`,
		jsonpath: `{.data}`,
		want:     `{"keep":"2","new":"3"}`,
	}, {
		name: "json", target: "configmap/cfg", typ: "json",
		patch:    `[{"op":"test","path":"/data/new","value":"3"},{"op":"replace","path":"/data/new","value":"4"},{"op":"add","path":"/metadata/labels","value":{"tier":"gold"}}]`,
		jsonpath: `{.data.new} {.metadata.labels.tier}`,
		want:     "4 gold",
	}} {
		t.Run(c.name, func(t *testing.T) {
			out := s.kubectl(t, "patch", c.target, "--type="+c.typ, "-p", c.patch)
			if want := c.target + " patched\n"; out != want {
				t.Errorf("patch printed %q, want %q", out, want)
			}
			if got := s.kubectl(t, "get", c.target, "-o", "jsonpath="+c.jsonpath); got != c.want {
				t.Errorf("after %s patch: got %q, want %q", c.typ, got, c.want)
			}
		})
	}

	t.Run("json test fails", func(t *testing.T) {
		// A failed test op is a 422 whose detail the server keeps in the status causes, which
		// kubectl does not print.
		out, err := s.kubectlErr("patch", "configmap/cfg", "--type=json", "-p", `[{"op":"test","path":"/data/keep","value":"nope"},{"op":"remove","path":"/data/keep"}]`)
		if err == nil || !strings.Contains(out, "The request is invalid") {
			t.Errorf("failing json-patch test op: err %v, output:\n%s", err, out)
		}
		if got := s.kubectl(t, "get", "configmap/cfg", "-o", "jsonpath={.data.keep}"); got != "2" {
			t.Errorf("after the failed patch data.keep = %q, want 2", got)
		}
	})
}

func TestServerSideApply(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	const cm = `apiVersion: v1
kind: ConfigMap
metadata:
  name: shared
data:
  owner: %s
`
	ownedBy := func(who string) string { return manifest(t, strings.Replace(cm, "%s", who, 1)) }

	if out := s.kubectl(t, "apply", "--server-side", "--field-manager=alice", "-f", ownedBy("alice")); out != "configmap/shared serverside-applied\n" {
		t.Errorf("first server-side apply printed %q", out)
	}
	if got := s.kubectl(t, "get", "configmap", "shared", "-o", `jsonpath={range .metadata.managedFields[*]}{.manager}/{.operation} {end}`); got != "alice/Apply " {
		t.Errorf("managedFields managers = %q, want alice/Apply", got)
	}

	out, err := s.kubectlErr("apply", "--server-side", "--field-manager=bob", "-f", ownedBy("bob"))
	if err == nil {
		t.Fatalf("conflicting server-side apply succeeded:\n%s", out)
	}
	if !strings.Contains(out, `Apply failed with 1 conflict: conflict with "alice": .data.owner`) {
		t.Errorf("conflicting apply output:\n%s\nwant a conflict with alice on .data.owner", out)
	}
	if got := s.kubectl(t, "get", "configmap", "shared", "-o", "jsonpath={.data.owner}"); got != "alice" {
		t.Errorf("after the refused apply data.owner = %q, want alice", got)
	}

	s.kubectl(t, "apply", "--server-side", "--field-manager=bob", "--force-conflicts", "-f", ownedBy("bob"))
	if got := s.kubectl(t, "get", "configmap", "shared", "-o", "jsonpath={.data.owner}"); got != "bob" {
		t.Errorf("after the forced apply data.owner = %q, want bob", got)
	}
	// alice lost her only field, so her entry is gone.
	if got := s.kubectl(t, "get", "configmap", "shared", "-o", `jsonpath={range .metadata.managedFields[*]}{.manager}/{.operation} {end}`); got != "bob/Apply " {
		t.Errorf("managedFields managers after forcing = %q, want bob/Apply", got)
	}

	// An imperative update is recorded under kubectl's own manager.
	s.kubectl(t, "label", "configmap", "shared", "team=x")
	managers := s.kubectl(t, "get", "configmap", "shared", "-o", `jsonpath={range .metadata.managedFields[*]}{.manager}/{.operation} {end}`)
	if !strings.Contains(managers, "kubectl-label/Update") {
		t.Errorf("managedFields after kubectl label = %q, want a kubectl-label/Update entry", managers)
	}
}

func TestValidationErrors(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.ensureServiceAccount(t, "default", "default")
	for _, c := range []struct {
		name, manifest, want string
	}{{
		name: "duplicate container name",
		manifest: `apiVersion: v1
kind: Pod
metadata:
  name: dup
spec:
  containers:
  - {name: c, image: nginx}
  - {name: c, image: nginx}
`,
		want: `The Pod "dup" is invalid: spec.containers[1].name: Duplicate value: "c"`,
	}, {
		name: "pod without containers",
		manifest: `apiVersion: v1
kind: Pod
metadata:
  name: empty
spec:
  containers: []
`,
		want: `The Pod "empty" is invalid: spec.containers: Required value`,
	}, {
		name: "namespace name not a DNS label",
		manifest: `apiVersion: v1
kind: Namespace
metadata:
  name: Upper
`,
		want: `The Namespace "Upper" is invalid: metadata.name: Invalid value: "Upper": a lowercase RFC 1123 label must consist of`,
	}, {
		name: "configmap key",
		manifest: `apiVersion: v1
kind: ConfigMap
metadata:
  name: keys
data:
  "a b": x
`,
		want: `The ConfigMap "keys" is invalid: data[a b]: Invalid value: "a b": a valid config key must consist of alphanumeric characters`,
	}, {
		name: "lease duration",
		manifest: `apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: l
spec:
  leaseDurationSeconds: -1
`,
		want: `The Lease "l" is invalid: spec.leaseDurationSeconds: Invalid value: -1: must be greater than 0`,
	}} {
		t.Run(c.name, func(t *testing.T) {
			out, err := s.kubectlErr("create", "-f", manifest(t, c.manifest))
			if err == nil {
				t.Fatalf("invalid object was created:\n%s", out)
			}
			if !strings.Contains(out, c.want) {
				t.Errorf("create output:\n%s\nwant it to contain:\n%s", out, c.want)
			}
		})
	}
}

func TestNamespaceLifecycle(t *testing.T) {
	t.Parallel()
	s := startServer(t)

	s.kubectl(t, "create", "namespace", "team-a")
	s.kubectl(t, "create", "configmap", "inside", "-n", "team-a", "--from-literal=a=b")
	if out := s.kubectl(t, "get", "configmaps", "-n", "team-a", "-o", "name"); !strings.Contains(out, "configmap/inside\n") {
		t.Fatalf("configmap not in team-a:\n%s", out)
	}
	if out := s.kubectl(t, "delete", "namespace", "team-a", "--wait=false"); !strings.HasPrefix(out, `namespace "team-a" deleted`) {
		t.Errorf("delete namespace printed %q", out)
	}
	eventually(t, 20*time.Second, func() error {
		out, err := s.kubectlErr("get", "namespace", "team-a")
		if err == nil || !strings.Contains(out, `namespaces "team-a" not found`) {
			return fmt.Errorf("namespace team-a still there: %s", out)
		}
		return nil
	})
	if out := s.kubectl(t, "get", "configmaps", "-n", "team-a", "-o", "name"); out != "" {
		t.Errorf("configmaps outlived their namespace:\n%s", out)
	}
	if out, err := s.kubectlErr("create", "configmap", "late", "-n", "team-a"); err == nil || !strings.Contains(out, `namespaces "team-a" not found`) {
		t.Errorf("creating in the deleted namespace: err %v, output:\n%s", err, out)
	}

	for _, ns := range []string{"default", "kube-system", "kube-public"} {
		out, err := s.kubectlErr("delete", "namespace", ns)
		want := `Error from server (Forbidden): namespaces "` + ns + `" is forbidden: this namespace may not be deleted`
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("delete namespace %s: err %v, output:\n%s\nwant %s", ns, err, out, want)
		}
	}
	if out := s.kubectl(t, "get", "namespace", "default", "-o", "jsonpath={.status.phase}"); out != "Active" {
		t.Errorf("namespace default phase = %q after the refused delete, want Active", out)
	}
}

func TestRestartKeepsObjects(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.kubectl(t, "create", "namespace", "durable")
	s.ensureServiceAccount(t, "durable", "default")
	s.kubectl(t, "create", "-n", "durable", "-f", manifest(t, `apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
data:
  k: v
---
apiVersion: v1
kind: Secret
metadata:
  name: sec
data:
  token: dDBrZW4=
---
apiVersion: v1
kind: Pod
metadata:
  name: pod
spec:
  nodeName: node-a
  containers:
  - name: c
    image: nginx
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: lease
spec:
  holderIdentity: me
  leaseDurationSeconds: 15
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: robot
`))
	objects := []string{"namespace/durable", "configmap/cm", "secret/sec", "pod/pod", "lease/lease", "serviceaccount/robot"}
	uids := func() map[string]string {
		got := map[string]string{}
		for _, o := range objects {
			got[o] = s.kubectl(t, "get", "-n", "durable", o, "-o", "jsonpath={.metadata.uid}")
		}
		return got
	}
	before := uids()
	oldURL := s.URL

	s.restart(t)

	if got := kubeconfigServer(t, s.Kubeconfig); got != s.URL {
		t.Errorf("admin kubeconfig points to %s after restart, want the new address %s (was %s)", got, s.URL, oldURL)
	}
	after := uids()
	for _, o := range objects {
		if before[o] == "" || before[o] != after[o] {
			t.Errorf("%s: uid before restart %q, after %q", o, before[o], after[o])
		}
	}
	if got := s.kubectl(t, "get", "-n", "durable", "secret/sec", "-o", "jsonpath={.data.token}"); got != base64.StdEncoding.EncodeToString([]byte("t0ken")) {
		t.Errorf("secret data after restart = %q", got)
	}
	if got := s.kubectl(t, "get", "-n", "durable", "lease/lease", "-o", "jsonpath={.spec.holderIdentity}"); got != "me" {
		t.Errorf("lease holder after restart = %q, want me", got)
	}
	// The restarted server still accepts writes on the same store.
	s.kubectl(t, "patch", "-n", "durable", "configmap/cm", "-p", `{"data":{"k":"v2"}}`)
	if got := s.kubectl(t, "get", "-n", "durable", "configmap/cm", "-o", "jsonpath={.data.k}"); got != "v2" {
		t.Errorf("configmap after patch on the restarted server = %q, want v2", got)
	}
	s.stop(t)
}
