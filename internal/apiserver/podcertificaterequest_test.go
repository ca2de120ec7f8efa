package apiserver

//lint:file-ignore SA1019 v1beta1's deprecated pkixPublicKey and proofOfPossession are named to refuse them: v1 cannot hold them.

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/idplane/idplane/internal/testing/pcrtest"
	"github.com/idplane/idplane/internal/testing/testkeys"
)

// pcrFor is a valid request (maxExpirationSeconds left to the server) named name for pod p-1
// on node n-1 with signer.
func pcrFor(t *testing.T, name, signer string) *certificatesv1.PodCertificateRequest {
	r := pcrtest.Request(t, testkeys.Key(t, testkeys.ECDSAP256))
	r.Name, r.Namespace, r.Spec.SignerName, r.Spec.MaxExpirationSeconds = name, "default", signer, nil
	return r
}

// causeAt reports whether err is a 422 with a cause at field.
func causeAt(err error, field string) bool {
	status, ok := err.(apierrors.APIStatus)
	if !ok || !apierrors.IsInvalid(err) || status.Status().Details == nil {
		return false
	}
	for _, c := range status.Status().Details.Causes {
		if c.Field == field {
			return true
		}
	}
	return false
}

// TestPodCertificateRequestAPI: create, defaulting, field selectors, the table, v1beta1 over the
// same storage, an immutable spec.
func TestPodCertificateRequestAPI(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	pcrs := s.client.CertificatesV1().PodCertificateRequests("default")

	first := pcrFor(t, "first", "example.com/a")
	first.Status.CertificateChain = "smuggled"
	created, err := pcrs.Create(ctx, first, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating: %v", err)
	}
	if created.Spec.MaxExpirationSeconds == nil || *created.Spec.MaxExpirationSeconds != 86400 {
		t.Errorf("maxExpirationSeconds = %v, want the default 86400", created.Spec.MaxExpirationSeconds)
	}
	if created.Status.CertificateChain != "" {
		t.Error("a status sent on create was stored")
	}
	second := pcrFor(t, "second", "example.com/b")
	second.Spec.PodName, second.Spec.NodeName = "p-2", "n-2"
	mustCreate(t, pcrs.Create, second)

	for _, tc := range []struct{ selector, want string }{
		{"spec.nodeName=n-2", "second"},
		{"spec.podName=p-1", "first"},
		{"spec.signerName=example.com/b", "second"},
	} {
		list, err := pcrs.List(ctx, metav1.ListOptions{FieldSelector: tc.selector})
		if err != nil {
			t.Fatalf("listing with %s: %v", tc.selector, err)
		}
		if len(list.Items) != 1 || list.Items[0].Name != tc.want {
			t.Errorf("%s selected %d items, want only %s", tc.selector, len(list.Items), tc.want)
		}
	}
	if _, err := pcrs.List(ctx, metav1.ListOptions{FieldSelector: "spec.podUID=x"}); !apierrors.IsBadRequest(err) {
		t.Errorf("listing by an unsupported field: got %v, want BadRequest", err)
	}

	for version, rc := range map[string]interface {
		Get() *rest.Request
	}{"v1": s.client.CertificatesV1().RESTClient(), "v1beta1": s.client.CertificatesV1beta1().RESTClient()} {
		table := &metav1.Table{}
		err = rc.Get().Namespace("default").Resource("podcertificaterequests").
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Into(table)
		if err != nil {
			t.Fatalf("getting the %s table: %v", version, err)
		}
		var names []string
		for _, c := range table.ColumnDefinitions {
			names = append(names, c.Name)
		}
		if got := strings.Join(names, ","); got != "Name,SignerName,Pod,ServiceAccount,Condition,Age,Node" || len(table.Rows) != 2 {
			t.Errorf("%s table: columns %s, %d rows", version, got, len(table.Rows))
		}
	}

	beta, err := s.client.CertificatesV1beta1().PodCertificateRequests("default").Get(ctx, "first", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading through v1beta1: %v", err)
	}
	if beta.Spec.SignerName != "example.com/a" || string(beta.Spec.StubPKCS10Request) != string(created.Spec.StubPKCS10Request) {
		t.Errorf("v1beta1 reads %+v", beta.Spec)
	}

	created.Spec.PodUID = "another"
	if _, err := pcrs.Update(ctx, created, metav1.UpdateOptions{}); !causeAt(err, "spec") {
		t.Errorf("changing the spec: got %v, want 422 at spec", err)
	}
}

// TestPodCertificateRequestV1beta1 creates through v1beta1, and refuses its deprecated key fields
// with a 422 naming spec.stubPKCS10Request.
func TestPodCertificateRequestV1beta1(t *testing.T) {
	s := startTestServer(t, t.TempDir(), nil)
	ctx := context.Background()
	beta := s.client.CertificatesV1beta1().PodCertificateRequests("default")
	v1 := pcrFor(t, "beta", "example.com/a")
	req := &certificatesv1beta1.PodCertificateRequest{ObjectMeta: metav1.ObjectMeta{Name: "beta"}}
	if err := scheme.Convert(v1, req, nil); err != nil {
		t.Fatal(err)
	}
	req.Namespace = "default"
	got, err := beta.Create(ctx, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating through v1beta1: %v", err)
	}
	if got.Spec.MaxExpirationSeconds == nil || *got.Spec.MaxExpirationSeconds != 86400 {
		t.Errorf("maxExpirationSeconds %v, want 86400", got.Spec.MaxExpirationSeconds)
	}
	// Whatever version it came through, etcd holds the v1 form.
	client, err := newEtcdClient([]string{s.etcd.clientURL}, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	resp, err := client.Get(ctx, "/registry/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	for _, kv := range resp.Kvs {
		if strings.HasSuffix(string(kv.Key), "podcertificaterequests/default/beta") {
			raw = kv.Value
		}
	}
	if !bytes.Contains(raw, []byte("certificates.k8s.io/v1\x12")) {
		t.Errorf("stored as %q, want certificates.k8s.io/v1", raw[:min(len(raw), 48)])
	}
	for name, set := range map[string]func(*certificatesv1beta1.PodCertificateRequest){
		"pkixPublicKey":     func(r *certificatesv1beta1.PodCertificateRequest) { r.Spec.PKIXPublicKey = []byte("key") },
		"proofOfPossession": func(r *certificatesv1beta1.PodCertificateRequest) { r.Spec.ProofOfPossession = []byte("proof") },
		"both, no stub": func(r *certificatesv1beta1.PodCertificateRequest) {
			r.Spec.PKIXPublicKey, r.Spec.ProofOfPossession, r.Spec.StubPKCS10Request = []byte("key"), []byte("proof"), nil
		},
	} {
		r := req.DeepCopy()
		r.Name, r.ResourceVersion = "deprecated", ""
		set(r)
		if _, err := beta.Create(ctx, r, metav1.CreateOptions{}); !causeAt(err, "spec.stubPKCS10Request") {
			t.Errorf("%s: got %v, want 422 at spec.stubPKCS10Request", name, err)
		}
	}
	stored, err := s.client.CertificatesV1().PodCertificateRequests("default").Get(ctx, "beta", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored.Annotations = map[string]string{"a": "b"}
	updated, err := beta.Update(ctx, v1beta1Of(t, stored), metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating metadata through v1beta1: %v", err)
	}
	updated.Spec.PKIXPublicKey = []byte("key")
	if _, err := beta.Update(ctx, updated, metav1.UpdateOptions{}); !causeAt(err, "spec.stubPKCS10Request") {
		t.Errorf("adding pkixPublicKey by a v1beta1 update: got %v, want 422 at spec.stubPKCS10Request", err)
	}
}

func v1beta1Of(t *testing.T, r *certificatesv1.PodCertificateRequest) *certificatesv1beta1.PodCertificateRequest {
	t.Helper()
	out := &certificatesv1beta1.PodCertificateRequest{}
	if err := scheme.Convert(r, out, nil); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPodCertificateRequestStatusNeedsSign: /status is written only by a user allowed "sign" on
// the request's signer, whatever else RBAC grants; an issue that breaks the rules is a 422.
func TestPodCertificateRequestStatusNeedsSign(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	key := testkeys.Key(t, testkeys.ECDSAP256)
	pcrs := s.client.CertificatesV1().PodCertificateRequests("default")
	for _, name := range []string{"mine", "theirs", "short"} {
		signer := "example.com/mine"
		if name == "theirs" {
			signer = "other.example/theirs"
		}
		mustCreate(t, pcrs.Create, pcrFor(t, name, signer))
	}
	rbac := s.client.RbacV1()
	mustCreate(t, rbac.ClusterRoles().Create, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "pcr-status-writer"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"podcertificaterequests", "podcertificaterequests/status"}, Verbs: []string{"get", "update", "patch"}},
		},
	})
	mustCreate(t, rbac.ClusterRoles().Create, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "example-signer"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"}, Verbs: []string{"sign"}, ResourceNames: []string{"example.com/*"}},
		},
	})
	for _, role := range []string{"pcr-status-writer", "example-signer"} {
		mustCreate(t, rbac.ClusterRoleBindings().Create, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "signer-" + role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "signer"}},
		})
	}
	mustCreate(t, rbac.ClusterRoleBindings().Create, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "writer-only"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "pcr-status-writer"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "writer"}},
	})
	signer, writer := s.user(t, "signer"), s.user(t, "writer")

	issue := func(c kubernetes.Interface, name string, lifetime time.Duration) error {
		r, err := c.CertificatesV1().PodCertificateRequests("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pcrtest.Issue(t, r, key, time.Now(), lifetime)
		_, err = c.CertificatesV1().PodCertificateRequests("default").UpdateStatus(ctx, r, metav1.UpdateOptions{})
		return err
	}
	eventually(t, "the writer's role is in force", func() error {
		_, err := writer.CertificatesV1().PodCertificateRequests("default").Get(ctx, "mine", metav1.GetOptions{})
		return err
	})
	if err := issue(writer, "mine", 24*time.Hour); !apierrors.IsForbidden(err) {
		t.Fatalf("a writer without sign issued: got %v, want Forbidden", err)
	}
	eventually(t, "the signer issues for its own signer", func() error { return issue(signer, "mine", 24*time.Hour) })
	if err := issue(signer, "theirs", 24*time.Hour); !apierrors.IsForbidden(err) {
		t.Errorf("issuing for another signer: got %v, want Forbidden", err)
	}
	if err := issue(signer, "short", 30*time.Minute); !causeAt(err, "status.certificateChain") {
		t.Errorf("a 30-minute certificate: got %v, want 422 at status.certificateChain", err)
	}
	if err := issue(s.client, "theirs", 24*time.Hour); err != nil {
		t.Errorf("the admin (system:masters) issuing: %v", err)
	}
	got, err := pcrs.Get(ctx, "mine", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.CertificateChain == "" || got.Status.BeginRefreshAt == nil {
		t.Errorf("the issued status was not stored: %+v", got.Status)
	}
	got.Status.Conditions[0].Message = "changed"
	if _, err := signer.CertificatesV1().PodCertificateRequests("default").UpdateStatus(ctx, got, metav1.UpdateOptions{}); !causeAt(err, "status") {
		t.Errorf("changing an issued status: got %v, want 422 at status", err)
	}

	// Two issued (mine, theirs), none refused counted; three requested; every signer here is
	// not a built-in one, so all count as "other".
	sum := scrapeMetrics(t, s.testServer)
	for _, want := range []struct {
		name   string
		labels map[string]string
		value  float64
	}{
		{"apiserver_pod_certificate_requests_requested_total", map[string]string{"signerName": "other"}, 3},
		{"apiserver_pod_certificate_requests_answered_total", map[string]string{"signerName": "other", "condition": "Issued"}, 2},
		{"apiserver_pod_certificate_requests_issuance_duration_seconds_count", map[string]string{"signerName": "other"}, 2},
	} {
		if v, ok := sum(want.name, want.labels); !ok || v < want.value {
			t.Errorf("%s%v = %v (found %v); want at least %v", want.name, want.labels, v, ok, want.value)
		}
	}
}
