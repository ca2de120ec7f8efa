package validation

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func testCSRPEM(t testing.TB) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "alice"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func testCertPEM(t testing.TB) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "alice"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func validCSR(t testing.TB) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "csr-1", ResourceVersion: "1"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: testCSRPEM(t), SignerName: "example.com/signer", Username: "alice",
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}
}

func condition(t certificatesv1.RequestConditionType, status corev1.ConditionStatus) certificatesv1.CertificateSigningRequestCondition {
	return certificatesv1.CertificateSigningRequestCondition{Type: t, Status: status}
}

func TestValidateCertificateSigningRequest(t *testing.T) {
	// Mangling one byte of the signature leaves a request that parses but does not verify.
	badSignature := func() []byte {
		block, _ := pem.Decode(testCSRPEM(t))
		block.Bytes[len(block.Bytes)-3] ^= 0xff
		return pem.EncodeToMemory(block)
	}()
	tests := []struct {
		name   string
		mutate func(*certificatesv1.CertificateSigningRequest)
		want   []want
	}{
		{name: "valid", mutate: func(*certificatesv1.CertificateSigningRequest) {}},
		{name: "valid with a minimal duration", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.ExpirationSeconds = ptrTo[int32](600) }},
		{name: "no request", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = nil }, want: []want{required("spec.request")}},
		{name: "not PEM", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = []byte("hello") }, want: []want{invalid("spec.request")}},
		{name: "a certificate, not a request", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = testCertPEM(t) }, want: []want{invalid("spec.request")}},
		{name: "signature does not verify", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = badSignature }, want: []want{invalid("spec.request")}},
		{name: "too large", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = make([]byte, maxCSRBytes+1) }, want: []want{tooLong("spec.request")}},
		{name: "no signer", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "" }, want: []want{required("spec.signerName")}},
		{name: "legacy-unknown", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "kubernetes.io/legacy-unknown" }, want: []want{notSupported("spec.signerName")}},
		{name: "signer without a path", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example.com" }, want: []want{invalid("spec.signerName")}},
		{name: "signer with two slashes", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example.com/a/b" }, want: []want{invalid("spec.signerName")}},
		{name: "signer domain not qualified", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example/signer" }, want: []want{invalid("spec.signerName")}},
		{name: "signer name too long", mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.SignerName = "example.com/" + strings.Repeat("a", maxSignerNameLength)
		}, want: []want{tooLong("spec.signerName")}},
		{name: "duration too short", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.ExpirationSeconds = ptrTo[int32](599) }, want: []want{invalid("spec.expirationSeconds")}},
		{name: "no usages", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Usages = nil }, want: []want{required("spec.usages")}},
		{name: "unknown usage", mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Usages = []certificatesv1.KeyUsage{"teleport"}
		}, want: []want{notSupported("spec.usages[0]")}},
		{name: "duplicate usage", mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth, certificatesv1.UsageClientAuth}
		}, want: []want{duplicate("spec.usages[1]")}},
		{name: "certificate on create", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = testCertPEM(t) }, want: []want{forbidden("status.certificate")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := validCSR(t)
			tc.mutate(c)
			expectErrors(t, ValidateCertificateSigningRequest(c), tc.want...)
		})
	}
}

func TestValidateCertificateSigningRequestSubresources(t *testing.T) {
	cert := testCertPEM(t)
	approvedCSR := func(t testing.TB) *certificatesv1.CertificateSigningRequest {
		c := validCSR(t)
		c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{condition(certificatesv1.CertificateApproved, corev1.ConditionTrue)}
		return c
	}
	tests := []struct {
		name     string
		old      func(testing.TB) *certificatesv1.CertificateSigningRequest
		validate func(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList
		mutate   func(*certificatesv1.CertificateSigningRequest)
		want     []want
	}{
		{name: "approval: approve", old: validCSR, validate: ValidateCertificateSigningRequestApprovalUpdate, mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = append(c.Status.Conditions, condition(certificatesv1.CertificateApproved, corev1.ConditionTrue))
		}},
		{name: "approval: approve and deny", old: validCSR, validate: ValidateCertificateSigningRequestApprovalUpdate, mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = append(c.Status.Conditions, condition(certificatesv1.CertificateApproved, corev1.ConditionTrue), condition(certificatesv1.CertificateDenied, corev1.ConditionTrue))
		}, want: []want{invalid("status.conditions")}},
		{name: "approval: approved False", old: validCSR, validate: ValidateCertificateSigningRequestApprovalUpdate, mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = append(c.Status.Conditions, condition(certificatesv1.CertificateApproved, corev1.ConditionFalse))
		}, want: []want{notSupported("status.conditions[0].status")}},
		{name: "approval: remove Approved", old: approvedCSR, validate: ValidateCertificateSigningRequestApprovalUpdate, mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = nil
		}, want: []want{forbidden("status.conditions")}},
		{name: "approval: condition without status", old: validCSR, validate: ValidateCertificateSigningRequestApprovalUpdate, mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateDenied})
		}, want: []want{required("status.conditions[0].status"), notSupported("status.conditions[0].status")}},
		{name: "status: issue", old: approvedCSR, validate: ValidateCertificateSigningRequestStatusUpdate, mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Certificate = cert
		}},
		{name: "status: issue with text around the block", old: approvedCSR, validate: ValidateCertificateSigningRequestStatusUpdate, mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Certificate = append(append([]byte("issued by a test\n"), cert...), "trailing\n"...)
		}},
		{name: "status: a block with headers", old: approvedCSR, validate: ValidateCertificateSigningRequestStatusUpdate, mutate: func(c *certificatesv1.CertificateSigningRequest) {
			block, _ := pem.Decode(cert)
			block.Headers = map[string]string{"X": "y"}
			c.Status.Certificate = pem.EncodeToMemory(block)
		}, want: []want{invalid("status.certificate")}},
		{name: "status: a key, not a certificate", old: approvedCSR, validate: ValidateCertificateSigningRequestStatusUpdate, mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}})
		}, want: []want{invalid("status.certificate")}},
		{name: "status: no PEM at all", old: approvedCSR, validate: ValidateCertificateSigningRequestStatusUpdate, mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Certificate = []byte("nothing")
		}, want: []want{invalid("status.certificate")}},
		{name: "status: replace the certificate", old: func(t testing.TB) *certificatesv1.CertificateSigningRequest {
			c := approvedCSR(t)
			c.Status.Certificate = cert
			return c
		}, validate: ValidateCertificateSigningRequestStatusUpdate, mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Certificate = testCertPEM(t)
		}, want: []want{forbidden("status.certificate")}},
		{name: "status: approve", old: validCSR, validate: ValidateCertificateSigningRequestStatusUpdate, mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = append(c.Status.Conditions, condition(certificatesv1.CertificateApproved, corev1.ConditionTrue))
		}, want: []want{forbidden("status.conditions")}},
		{name: "status: Failed", old: approvedCSR, validate: ValidateCertificateSigningRequestStatusUpdate, mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = append(c.Status.Conditions, condition(certificatesv1.CertificateFailed, corev1.ConditionTrue))
		}},
		{name: "status: a custom condition", old: approvedCSR, validate: ValidateCertificateSigningRequestStatusUpdate, mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = append(c.Status.Conditions, condition("example.com/Queued", corev1.ConditionUnknown))
		}},
		{name: "main resource: change the spec", old: validCSR, validate: ValidateCertificateSigningRequestUpdate, mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.SignerName = "example.com/other"
		}, want: []want{forbidden("spec")}},
		{name: "main resource: labels", old: validCSR, validate: ValidateCertificateSigningRequestUpdate, mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Labels = map[string]string{"team": "a"}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := tc.old(t)
			c := old.DeepCopy()
			tc.mutate(c)
			expectErrors(t, tc.validate(c, old), tc.want...)
		})
	}
}

// FuzzCertificateSigningRequestPEM feeds arbitrary bytes to the request and certificate checks:
// whatever arrives, validation answers with field errors and never panics.
func FuzzCertificateSigningRequestPEM(f *testing.F) {
	f.Add(testCSRPEM(f), testCertPEM(f))
	f.Add([]byte("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"), []byte("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"))
	f.Add([]byte{}, []byte("text only"))
	base := validCSR(f)
	f.Fuzz(func(t *testing.T, request, certificate []byte) {
		c := base.DeepCopy()
		c.Spec.Request = request
		ValidateCertificateSigningRequest(c)
		old := c.DeepCopy()
		c.Status.Certificate = certificate
		ValidateCertificateSigningRequestStatusUpdate(c, old)
	})
}
