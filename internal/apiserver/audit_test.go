package apiserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// auditLog reads the JSON-lines audit log; every line must be an audit.k8s.io/v1 Event.
func auditLog(t *testing.T, path string) ([]auditv1.Event, []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the audit log: %v", err)
	}
	var events []auditv1.Event
	lines := bufio.NewScanner(bytes.NewReader(data))
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		var ev auditv1.Event
		if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
			t.Fatalf("audit log line %q: %v", lines.Text(), err)
		}
		if ev.APIVersion != "audit.k8s.io/v1" || ev.Kind != "Event" {
			t.Fatalf("audit log line is a %s %s, want an audit.k8s.io/v1 Event", ev.APIVersion, ev.Kind)
		}
		events = append(events, ev)
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}
	return events, data
}

// auditQuery describes the event a test expects.
type auditQuery struct {
	user, verb, resource, subresource, name string
	decision                                string
	code                                    int32
}

func (q auditQuery) matches(ev auditv1.Event) bool {
	ref := ev.ObjectRef
	return ref != nil && ev.Stage == auditv1.StageResponseComplete &&
		(q.user == "" || ev.User.Username == q.user) && ev.Verb == q.verb &&
		ref.Resource == q.resource && ref.Subresource == q.subresource && ref.Name == q.name &&
		(q.decision == "" || ev.Annotations["authorization.k8s.io/decision"] == q.decision) &&
		(q.code == 0 || ev.ResponseStatus != nil && ev.ResponseStatus.Code == q.code)
}

func (q auditQuery) String() string {
	return fmt.Sprintf("%s %s %s/%s %s (decision %q, code %d)", q.user, q.verb, q.resource, q.subresource, q.name, q.decision, q.code)
}

// waitForAuditEvents waits until the log holds an event for each query and returns them in order:
// the log backend writes an event after the response has gone out.
func waitForAuditEvents(t *testing.T, path string, queries ...auditQuery) []auditv1.Event {
	t.Helper()
	var found []auditv1.Event
	eventually(t, "audit events", func() error {
		events, _ := auditLog(t, path)
		found = found[:0]
		for _, q := range queries {
			i := indexOf(events, q.matches)
			if i < 0 {
				return fmt.Errorf("no event for %s", q)
			}
			found = append(found, events[i])
		}
		return nil
	})
	return found
}

func indexOf(events []auditv1.Event, match func(auditv1.Event) bool) int {
	for i, ev := range events {
		if match(ev) {
			return i
		}
	}
	return -1
}

func TestDefaultAuditPolicy(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "audit", "audit.log")
	s := startRBACServerWith(t, func(o *Options) { o.Audit.LogOptions.Path = logPath })
	ctx := context.Background()
	admin := s.client

	const password = "audit-must-not-see-this"
	mustCreate(t, admin.CoreV1().Secrets("default").Create, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "db"}, StringData: map[string]string{"password": password},
	})
	ensureServiceAccount(t, admin, "default", "robot")
	token, err := requestToken(admin, "default", "robot", authenticationv1.TokenRequestSpec{})
	if err != nil {
		t.Fatal(err)
	}

	csrs := admin.CertificatesV1().CertificateSigningRequests()
	csr, err := csrs.Create(ctx, newCSR("audited", certificatesv1.KubeAPIServerClientSignerName, csrPEM(t, "audited-user")), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test"}}
	if _, err := csrs.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	node := nodeClient(t, s, "n1")
	if _, err := node.CoreV1().Secrets("default").Get(ctx, "db", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("node reading an unrelated secret: got %v, want 403", err)
	}
	// An allowed request of a node is recorded too: the policy cannot tell them apart.
	if _, err := node.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("node reading its own missing Node: got %v, want 404", err)
	}

	found := waitForAuditEvents(t, logPath,
		auditQuery{user: "idplane-admin", verb: "create", resource: "secrets", name: "db", code: 201},
		auditQuery{user: "idplane-admin", verb: "create", resource: "serviceaccounts", subresource: "token", name: "robot", code: 201},
		auditQuery{user: "idplane-admin", verb: "update", resource: "certificatesigningrequests", subresource: "approval", name: "audited", code: 200},
		auditQuery{verb: "update", resource: "certificatesigningrequests", subresource: "status", name: "audited", code: 200},
		auditQuery{user: "system:node:n1", verb: "get", resource: "secrets", name: "db", decision: "forbid", code: 403},
		auditQuery{user: "system:node:n1", verb: "get", resource: "nodes", name: "n1", decision: "allow", code: 404},
	)
	for _, ev := range found {
		if ev.Level != "Metadata" || ev.RequestObject != nil || ev.ResponseObject != nil {
			t.Errorf("%s %s/%s: level %s with bodies %v/%v, want Metadata without bodies", ev.Verb, ev.ObjectRef.Resource, ev.ObjectRef.Subresource, ev.Level, ev.RequestObject != nil, ev.ResponseObject != nil)
		}
	}
	if reason := found[4].Annotations["authorization.k8s.io/reason"]; !strings.Contains(reason, "n1") {
		t.Errorf("denied node request: reason %q does not explain the refusal", reason)
	}

	events, data := auditLog(t, logPath)
	for _, secret := range []string{password, base64.StdEncoding.EncodeToString([]byte(password)), token.Status.Token} {
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("the audit log holds a secret value %.20q...", secret)
		}
	}
	for _, ev := range events {
		if ev.Stage == auditv1.StageRequestReceived {
			t.Errorf("event at stage RequestReceived for %s %s: the default policy omits it", ev.Verb, ev.RequestURI)
		}
		if ev.ObjectRef != nil && ev.ObjectRef.Resource == "configmaps" && !strings.HasPrefix(ev.User.Username, "system:node:") {
			t.Errorf("configmap request of %s recorded: the default policy records only secrets, tokens, CSR approval and signing, and nodes", ev.User.Username)
		}
	}
	t.Logf("%d events, %d bytes: %d bytes per event", len(events), len(data), len(data)/len(events))
}

func TestAuditPolicyFileIsHonoured(t *testing.T) {
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	err := os.WriteFile(policy, []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Request
  resources: [{group: "", resources: [configmaps]}]
- level: None
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "audit.log")
	ts := startTestServer(t, t.TempDir(), func(o *Options) {
		o.Audit.PolicyFile, o.Audit.LogOptions.Path = policy, logPath
	})
	createSecret(t, ts, "unaudited", "not-in-the-log")
	for _, name := range []string{"cm1", "cm2"} {
		mustCreate(t, ts.client.CoreV1().ConfigMaps("default").Create, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	found := waitForAuditEvents(t, logPath, auditQuery{verb: "create", resource: "configmaps", name: "cm2", code: 201})
	if found[0].Level != "Request" || found[0].RequestObject == nil {
		t.Errorf("configmap event at level %s with request body %v, want Request with the body", found[0].Level, found[0].RequestObject != nil)
	}
	events, _ := auditLog(t, logPath)
	for _, ev := range events {
		if ev.ObjectRef == nil || ev.ObjectRef.Resource != "configmaps" {
			t.Errorf("event for %s %s recorded: the policy records configmaps only", ev.Verb, ev.RequestURI)
		}
	}
}

func TestAuditConfigRefused(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	badLevel := write("bad-level.yaml", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Everything\n")
	notPolicy := write("not-policy.yaml", "apiVersion: v1\nkind: ConfigMap\n")
	logPath := filepath.Join(dir, "audit.log")
	for _, tc := range []struct {
		name      string
		configure func(*Options)
		want      string
	}{
		{"unknown level", func(o *Options) { o.Audit.PolicyFile, o.Audit.LogOptions.Path = badLevel, logPath }, "bad-level.yaml"},
		{"not a policy", func(o *Options) { o.Audit.PolicyFile, o.Audit.LogOptions.Path = notPolicy, logPath }, "not-policy.yaml"},
		{"missing policy", func(o *Options) {
			o.Audit.PolicyFile, o.Audit.LogOptions.Path = filepath.Join(dir, "absent.yaml"), logPath
		}, "absent.yaml"},
		{"policy without a log", func(o *Options) { o.Audit.PolicyFile = badLevel }, "--audit-policy-file needs --audit-log-path"},
		{"unknown log format", func(o *Options) { o.Audit.LogOptions.Path, o.Audit.LogOptions.Format = logPath, "yaml" }, "invalid audit log format yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			o.DataDir, o.SecurePort = t.TempDir(), 0
			tc.configure(o)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			srv, err := Start(ctx, o)
			if err == nil {
				cancel()
				_ = srv.Wait()
				t.Fatal("server started")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
			if _, err := os.Stat(logPath); err == nil {
				t.Errorf("the refused server created its audit log")
			}
		})
	}
}
