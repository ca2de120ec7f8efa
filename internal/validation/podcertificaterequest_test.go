package validation

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/idplane/idplane/internal/testing/pcrtest"
	"github.com/idplane/idplane/internal/testing/testkeys"
)

// pcrNow is the server's clock in the status tests.
var pcrNow = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func validPCR(t *testing.T) func() *certificatesv1.PodCertificateRequest {
	return func() *certificatesv1.PodCertificateRequest {
		return pcrtest.Request(t, testkeys.Key(t, testkeys.ECDSAP256))
	}
}

func TestValidatePodCertificateRequestKeyTypes(t *testing.T) {
	cases := []struct {
		key  string
		want []want
	}{
		{testkeys.RSA3072, nil},
		{testkeys.RSA4096, nil},
		{testkeys.ECDSAP256, nil},
		{testkeys.ECDSAP384, nil},
		{testkeys.ECDSAP521, nil},
		{testkeys.Ed25519, nil},
		{testkeys.RSA, []want{invalid("spec.stubPKCS10Request")}},
		{testkeys.ECDSAP224, []want{invalid("spec.stubPKCS10Request")}},
	}
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			expectErrors(t, ValidatePodCertificateRequest(pcrtest.Request(t, testkeys.Key(t, tc.key))), tc.want...)
		})
	}
}

func TestValidatePodCertificateRequest(t *testing.T) {
	valid := validPCR(t)
	pcr := func(mutate func(*certificatesv1.PodCertificateRequest)) *certificatesv1.PodCertificateRequest {
		return mutated(valid, mutate)
	}
	cases := []struct {
		name string
		req  *certificatesv1.PodCertificateRequest
		want []want
	}{
		{"valid", valid(), nil},
		{"no namespace", pcr(func(r *certificatesv1.PodCertificateRequest) { r.Namespace = "" }), []want{required("metadata.namespace")}},
		{"signer without path", pcr(func(r *certificatesv1.PodCertificateRequest) { r.Spec.SignerName = "example.com" }), []want{invalid("spec.signerName")}},
		{"no signer", pcr(func(r *certificatesv1.PodCertificateRequest) { r.Spec.SignerName = "" }), []want{required("spec.signerName")}},
		{"names and UIDs missing", pcr(func(r *certificatesv1.PodCertificateRequest) {
			r.Spec.PodName, r.Spec.PodUID, r.Spec.ServiceAccountName, r.Spec.ServiceAccountUID, r.Spec.NodeName, r.Spec.NodeUID = "", "", "", "", "", ""
		}), []want{invalid("spec.podName"), invalid("spec.podUID"), invalid("spec.serviceAccountName"), invalid("spec.serviceAccountUID"), invalid("spec.nodeName"), invalid("spec.nodeUID")}},
		{"UID too long", pcr(func(r *certificatesv1.PodCertificateRequest) { r.Spec.PodUID = types.UID(strings.Repeat("x", 129)) }), []want{tooLong("spec.podUID")}},
		{"bad pod name", pcr(func(r *certificatesv1.PodCertificateRequest) { r.Spec.PodName = "Pod_1" }), []want{invalid("spec.podName")}},
		{"no maxExpirationSeconds", pcr(func(r *certificatesv1.PodCertificateRequest) { r.Spec.MaxExpirationSeconds = nil }), []want{required("spec.maxExpirationSeconds")}},
		{"maxExpirationSeconds below an hour", pcr(func(r *certificatesv1.PodCertificateRequest) { r.Spec.MaxExpirationSeconds = ptrTo[int32](3599) }), []want{invalid("spec.maxExpirationSeconds")}},
		{"maxExpirationSeconds an hour", pcr(func(r *certificatesv1.PodCertificateRequest) { r.Spec.MaxExpirationSeconds = ptrTo[int32](3600) }), nil},
		{"maxExpirationSeconds 91 days", pcr(func(r *certificatesv1.PodCertificateRequest) { r.Spec.MaxExpirationSeconds = ptrTo[int32](7862400) }), nil},
		{"maxExpirationSeconds over 91 days", pcr(func(r *certificatesv1.PodCertificateRequest) { r.Spec.MaxExpirationSeconds = ptrTo[int32](7862401) }), []want{invalid("spec.maxExpirationSeconds")}},
		{"kubernetes.io signer, a day", pcr(func(r *certificatesv1.PodCertificateRequest) {
			r.Spec.SignerName = "kubernetes.io/kube-apiserver-client-pod"
		}), nil},
		{"kubernetes.io signer, over a day", pcr(func(r *certificatesv1.PodCertificateRequest) {
			r.Spec.SignerName, r.Spec.MaxExpirationSeconds = "kubernetes.io/kube-apiserver-client-pod", ptrTo[int32](86401)
		}), []want{invalid("spec.maxExpirationSeconds")}},
		{"sub.kubernetes.io signer, over a day", pcr(func(r *certificatesv1.PodCertificateRequest) {
			r.Spec.SignerName, r.Spec.MaxExpirationSeconds = "x.kubernetes.io/s", ptrTo[int32](86401)
		}), []want{invalid("spec.maxExpirationSeconds")}},
		{"no stub request", pcr(func(r *certificatesv1.PodCertificateRequest) { r.Spec.StubPKCS10Request = nil }), []want{required("spec.stubPKCS10Request")}},
		{"stub request not DER", pcr(func(r *certificatesv1.PodCertificateRequest) { r.Spec.StubPKCS10Request = []byte("junk") }), []want{invalid("spec.stubPKCS10Request")}},
		{"stub request too large", pcr(func(r *certificatesv1.PodCertificateRequest) { r.Spec.StubPKCS10Request = make([]byte, 10*1024+1) }), []want{tooLong("spec.stubPKCS10Request")}},
		{"stub request with a broken signature", pcr(func(r *certificatesv1.PodCertificateRequest) {
			r.Spec.StubPKCS10Request[len(r.Spec.StubPKCS10Request)-3] ^= 0xff
		}), []want{invalid("spec.stubPKCS10Request")}},
		{"user annotations", pcr(func(r *certificatesv1.PodCertificateRequest) {
			r.Spec.UnverifiedUserAnnotations = map[string]string{"example.com/ok": "v"}
		}), nil},
		{"user annotation without a domain", pcr(func(r *certificatesv1.PodCertificateRequest) {
			r.Spec.UnverifiedUserAnnotations = map[string]string{"plain": "v"}
		}), []want{invalid("spec.unverifiedUserAnnotations")}},
		{"user annotation with a bad key", pcr(func(r *certificatesv1.PodCertificateRequest) {
			r.Spec.UnverifiedUserAnnotations = map[string]string{"example.com/bad key": "v"}
		}), []want{invalid("spec.unverifiedUserAnnotations")}},
		{"user annotations too large", pcr(func(r *certificatesv1.PodCertificateRequest) {
			r.Spec.UnverifiedUserAnnotations = map[string]string{"example.com/big": strings.Repeat("x", 256*1024)}
		}), []want{tooLong("spec.unverifiedUserAnnotations")}},
		{"v1beta1 key fields", pcr(func(r *certificatesv1.PodCertificateRequest) {
			r.Annotations = map[string]string{PodCertificateV1beta1KeyFieldsAnnotation: ""}
		}), []want{required("spec.stubPKCS10Request")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { expectErrors(t, ValidatePodCertificateRequest(tc.req), tc.want...) })
	}
}

func TestValidatePodCertificateRequestUpdate(t *testing.T) {
	valid := validPCR(t)
	old := valid()
	old.ResourceVersion = "1"
	cases := []struct {
		name   string
		mutate func(*certificatesv1.PodCertificateRequest)
		want   []want
	}{
		{"labels", func(r *certificatesv1.PodCertificateRequest) { r.Labels = map[string]string{"a": "b"} }, nil},
		{"signer", func(r *certificatesv1.PodCertificateRequest) { r.Spec.SignerName = "example.com/other" }, []want{invalid("spec")}},
		{"pod UID", func(r *certificatesv1.PodCertificateRequest) { r.Spec.PodUID = "other" }, []want{invalid("spec")}},
		{"max expiration", func(r *certificatesv1.PodCertificateRequest) { r.Spec.MaxExpirationSeconds = ptrTo[int32](3600) }, []want{invalid("spec")}},
		{"user annotations", func(r *certificatesv1.PodCertificateRequest) {
			r.Spec.UnverifiedUserAnnotations = map[string]string{"example.com/a": "b"}
		}, []want{invalid("spec")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := old.DeepCopy()
			tc.mutate(req)
			expectErrors(t, ValidatePodCertificateRequestUpdate(req, old), tc.want...)
		})
	}
}

func pcrCondition(typ string, status metav1.ConditionStatus) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: "Because", Message: "m", LastTransitionTime: metav1.NewTime(pcrNow)}
}

func TestValidatePodCertificateRequestStatusUpdate(t *testing.T) {
	key := testkeys.Key(t, testkeys.ECDSAP256)
	other := testkeys.Key(t, testkeys.Ed25519)
	pending := pcrtest.Request(t, key)
	pending.ResourceVersion = "1"
	issued := func(notBefore time.Time, lifetime time.Duration) *certificatesv1.PodCertificateRequest {
		r := pending.DeepCopy()
		pcrtest.Issue(t, r, key, notBefore, lifetime)
		return r
	}
	issuedWith := func(mutate func(*certificatesv1.PodCertificateRequest)) *certificatesv1.PodCertificateRequest {
		r := issued(pcrNow, 24*time.Hour)
		mutate(r)
		return r
	}
	denied := pending.DeepCopy()
	denied.Status.Conditions = []metav1.Condition{pcrCondition(certificatesv1.PodCertificateRequestConditionTypeDenied, metav1.ConditionTrue)}
	failed := pending.DeepCopy()
	failed.Status.Conditions = []metav1.Condition{pcrCondition(certificatesv1.PodCertificateRequestConditionTypeFailed, metav1.ConditionTrue)}
	at := func(t time.Time) *metav1.Time { return &metav1.Time{Time: t} }

	cases := []struct {
		name     string
		req, old *certificatesv1.PodCertificateRequest
		want     []want
	}{
		{"issued", issued(pcrNow, 24*time.Hour), pending, nil},
		{"issued, an hour", issued(pcrNow, time.Hour), pending, nil},
		{"denied", denied, pending, nil},
		{"failed", failed, pending, nil},
		{"no change while pending", pending.DeepCopy(), pending, nil},
		{"issued and denied", issuedWith(func(r *certificatesv1.PodCertificateRequest) {
			r.Status.Conditions = append(r.Status.Conditions, pcrCondition(certificatesv1.PodCertificateRequestConditionTypeDenied, metav1.ConditionTrue))
		}), pending, []want{invalid("status.conditions[1].type")}},
		{"issued False", issuedWith(func(r *certificatesv1.PodCertificateRequest) { r.Status.Conditions[0].Status = metav1.ConditionFalse }), pending,
			[]want{notSupported("status.conditions[0].status")}},
		{"unknown condition type", issuedWith(func(r *certificatesv1.PodCertificateRequest) { r.Status.Conditions[0].Type = "Approved" }), pending,
			[]want{notSupported("status.conditions[0].type")}},
		{"condition without a reason", issuedWith(func(r *certificatesv1.PodCertificateRequest) { r.Status.Conditions[0].Reason = "" }), pending,
			[]want{required("status.conditions[0].reason")}},
		{"chain without conditions", issuedWith(func(r *certificatesv1.PodCertificateRequest) { r.Status.Conditions = nil }), pending, []want{invalid("status")}},
		{"denied with a chain", issuedWith(func(r *certificatesv1.PodCertificateRequest) {
			r.Status.Conditions = denied.Status.Conditions
		}), pending, []want{invalid("status")}},
		{"change after issue", issuedWith(func(r *certificatesv1.PodCertificateRequest) {
			r.Status.BeginRefreshAt = at(pcrNow.Add(2 * time.Hour))
		}), issued(pcrNow, 24*time.Hour), []want{invalid("status")}},
		{"issue after deny", issued(pcrNow, 24*time.Hour), denied, []want{invalid("status")}},
		{"not PEM", issuedWith(func(r *certificatesv1.PodCertificateRequest) { r.Status.CertificateChain = "junk" }), pending, []want{invalid("status.certificateChain")}},
		{"other key", issuedWith(func(r *certificatesv1.PodCertificateRequest) {
			r.Status.CertificateChain = pcrtest.Certificate(t, other.Public(), pcrNow, 24*time.Hour)
		}), pending, []want{invalid("status.certificateChain")}},
		{"times missing", issuedWith(func(r *certificatesv1.PodCertificateRequest) {
			r.Status.NotBefore, r.Status.NotAfter, r.Status.BeginRefreshAt = nil, nil, nil
		}), pending, []want{required("status.notBefore"), required("status.notAfter"), required("status.beginRefreshAt")}},
		{"notBefore not the leaf's", issuedWith(func(r *certificatesv1.PodCertificateRequest) { r.Status.NotBefore = at(pcrNow.Add(time.Minute)) }), pending,
			[]want{invalid("status.notBefore")}},
		{"notBefore 6 minutes ahead", issued(pcrNow.Add(6*time.Minute), 24*time.Hour), pending, []want{invalid("status.notBefore")}},
		{"notBefore 6 minutes behind", issued(pcrNow.Add(-6*time.Minute), 24*time.Hour), pending, []want{invalid("status.notBefore")}},
		{"notBefore 4 minutes behind", issued(pcrNow.Add(-4*time.Minute), 24*time.Hour), pending, nil},
		{"notAfter not the leaf's", issuedWith(func(r *certificatesv1.PodCertificateRequest) { r.Status.NotAfter = at(pcrNow.Add(time.Hour)) }), pending,
			[]want{invalid("status.notAfter")}},
		{"30 minutes", issued(pcrNow, 30*time.Minute), pending, []want{invalid("status.certificateChain")}},
		{"longer than maxExpirationSeconds", issued(pcrNow, 25*time.Hour), pending, []want{invalid("status.certificateChain")}},
		{"refresh too early", issuedWith(func(r *certificatesv1.PodCertificateRequest) {
			r.Status.BeginRefreshAt = at(pcrNow.Add(9 * time.Minute))
		}), pending,
			[]want{invalid("status.beginRefreshAt")}},
		{"refresh too late", issuedWith(func(r *certificatesv1.PodCertificateRequest) {
			r.Status.BeginRefreshAt = at(pcrNow.Add(24*time.Hour - 9*time.Minute))
		}), pending, []want{invalid("status.beginRefreshAt")}},
		{"leaf with a bad DNS name", issuedWith(func(r *certificatesv1.PodCertificateRequest) {
			r.Status.CertificateChain = pcrtest.Certificate(t, key.Public(), pcrNow, 24*time.Hour, "a..example.com")
		}), pending, []want{invalid("status.certificateChain")}},
		{"intermediate not a certificate", issuedWith(func(r *certificatesv1.PodCertificateRequest) {
			r.Status.CertificateChain += "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
		}), pending, []want{invalid("status.certificateChain")}},
		{"chain too long", issuedWith(func(r *certificatesv1.PodCertificateRequest) {
			r.Status.CertificateChain += strings.Repeat("x", 100*1024)
		}), pending, []want{tooLong("status.certificateChain")}},
		{"name changed", issuedWith(func(r *certificatesv1.PodCertificateRequest) { r.Name = "other" }), pending, []want{invalid("metadata.name")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidatePodCertificateRequestStatusUpdate(tc.req, tc.old, pcrNow), tc.want...)
		})
	}
}

// TestPodCertificateRequestErrorMessages pins the full text of the errors users see, in
// testdata/podcertificaterequest_errors.txt (regenerate with -update).
func TestPodCertificateRequestErrorMessages(t *testing.T) {
	valid := validPCR(t)
	key := testkeys.Key(t, testkeys.ECDSAP256)
	pending := pcrtest.Request(t, key)
	pending.ResourceVersion = "1"
	issued := func(mutate func(*certificatesv1.PodCertificateRequest)) *certificatesv1.PodCertificateRequest {
		r := pending.DeepCopy()
		pcrtest.Issue(t, r, key, pcrNow, 24*time.Hour)
		mutate(r)
		return r
	}
	cases := []struct {
		name string
		errs field.ErrorList
	}{
		{"create: empty spec", ValidatePodCertificateRequest(&certificatesv1.PodCertificateRequest{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "n"}})},
		{"create: range, key, annotations", ValidatePodCertificateRequest(mutated(valid, func(r *certificatesv1.PodCertificateRequest) {
			r.Spec.SignerName = "kubernetes.io/kube-apiserver-client-pod"
			r.Spec.MaxExpirationSeconds = ptrTo[int32](90000)
			r.Spec.StubPKCS10Request = pcrtest.StubRequest(t, testkeys.Key(t, testkeys.ECDSAP224))
			r.Spec.UnverifiedUserAnnotations = map[string]string{"plain": ""}
		}))},
		{"create: bad signature", ValidatePodCertificateRequest(mutated(valid, func(r *certificatesv1.PodCertificateRequest) {
			r.Spec.StubPKCS10Request[len(r.Spec.StubPKCS10Request)-3] ^= 0xff
		}))},
		{"create: v1beta1 key fields", ValidatePodCertificateRequest(mutated(valid, func(r *certificatesv1.PodCertificateRequest) {
			r.Annotations = map[string]string{PodCertificateV1beta1KeyFieldsAnnotation: ""}
		}))},
		{"status: two terminal conditions", ValidatePodCertificateRequestStatusUpdate(issued(func(r *certificatesv1.PodCertificateRequest) {
			r.Status.Conditions = append(r.Status.Conditions, pcrCondition(certificatesv1.PodCertificateRequestConditionTypeFailed, metav1.ConditionFalse))
		}), pending, pcrNow)},
		{"status: 30 minutes", ValidatePodCertificateRequestStatusUpdate(mutated(func() *certificatesv1.PodCertificateRequest { return pending.DeepCopy() }, func(r *certificatesv1.PodCertificateRequest) {
			pcrtest.Issue(t, r, key, pcrNow, 30*time.Minute)
		}), pending, pcrNow)},
		{"status: notBefore far off", ValidatePodCertificateRequestStatusUpdate(mutated(func() *certificatesv1.PodCertificateRequest { return pending.DeepCopy() }, func(r *certificatesv1.PodCertificateRequest) {
			pcrtest.Issue(t, r, key, pcrNow.Add(time.Hour), 24*time.Hour)
		}), pending, pcrNow)},
		{"status: refresh too early", ValidatePodCertificateRequestStatusUpdate(issued(func(r *certificatesv1.PodCertificateRequest) {
			r.Status.BeginRefreshAt = &metav1.Time{Time: pcrNow}
		}), pending, pcrNow)},
		{"status: changed after issue", ValidatePodCertificateRequestStatusUpdate(issued(func(r *certificatesv1.PodCertificateRequest) {
			r.Status.Conditions[0].Message = "again"
		}), issued(func(*certificatesv1.PodCertificateRequest) {}), pcrNow)},
	}
	var b strings.Builder
	for _, c := range cases {
		b.WriteString("== " + c.name + "\n")
		lines := make([]string, 0, len(c.errs))
		for _, e := range c.errs {
			msg, _, _ := strings.Cut(e.Error(), "\n")
			lines = append(lines, msg)
		}
		slices.Sort(lines)
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
	}
	got := b.String()
	golden := filepath.Join("testdata", "podcertificaterequest_errors.txt")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wantText, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("reading %s (run with -update to create it): %v", golden, err)
	}
	if diff := cmp.Diff(string(wantText), got); diff != "" {
		t.Errorf("errors differ from %s (-want +got):\n%s", golden, diff)
	}
}

// FuzzPodCertificateRequest feeds arbitrary stub requests and certificate chains to the create
// and issue rules: whatever a node or a signer sends, the answer is an error list, never a panic.
func FuzzPodCertificateRequest(f *testing.F) {
	key := testkeys.Key(f, testkeys.ECDSAP256)
	base := pcrtest.Request(f, key)
	issued := base.DeepCopy()
	pcrtest.Issue(f, issued, key, pcrNow, 24*time.Hour)
	f.Add(base.Spec.StubPKCS10Request, issued.Status.CertificateChain)
	f.Add([]byte("junk"), "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
	f.Add([]byte{}, "")
	f.Fuzz(func(t *testing.T, stub []byte, chain string) {
		r := base.DeepCopy()
		r.Spec.StubPKCS10Request = stub
		ValidatePodCertificateRequest(r)
		old := r.DeepCopy()
		old.ResourceVersion = "1"
		next := issued.DeepCopy()
		next.ResourceVersion = "1"
		next.Spec.StubPKCS10Request = stub
		next.Status.CertificateChain = chain
		ValidatePodCertificateRequestStatusUpdate(next, old, pcrNow)
	})
}
