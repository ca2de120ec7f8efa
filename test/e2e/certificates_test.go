package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestCertificateSigningRequests drives the Certificates API with stock kubectl: create a CSR,
// list it with the server's columns, approve and deny through `kubectl certificate`, describe it.
func TestCertificateSigningRequests(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	csrFor := func(name string) string {
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: name, Organization: []string{"devs"}}}, key)
		if err != nil {
			t.Fatal(err)
		}
		request := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
		return manifest(t, fmt.Sprintf(`apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata:
  name: %s
spec:
  request: %s
  signerName: example.com/team-signer
  expirationSeconds: 86400
  usages: ["digital signature", "client auth"]
`, name, request))
	}
	s.kubectl(t, "create", "-f", csrFor("alice"))
	s.kubectl(t, "create", "-f", csrFor("bob"))

	out := s.kubectl(t, "get", "csr")
	header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
	if strings.Join(header, " ") != "NAME AGE SIGNERNAME REQUESTOR REQUESTEDDURATION CONDITION" {
		t.Errorf("kubectl get csr columns: %q", header)
	}
	if !strings.Contains(out, "example.com/team-signer") || !strings.Contains(out, "idplane-admin") || !strings.Contains(out, "24h") || !strings.Contains(out, "Pending") {
		t.Errorf("kubectl get csr:\n%s", out)
	}

	if out := s.kubectl(t, "certificate", "approve", "alice"); !strings.Contains(out, "approved") {
		t.Errorf("kubectl certificate approve: %s", out)
	}
	if out := s.kubectl(t, "certificate", "deny", "bob"); !strings.Contains(out, "denied") {
		t.Errorf("kubectl certificate deny: %s", out)
	}
	if got := s.kubectl(t, "get", "csr", "alice", "-o", "jsonpath={.status.conditions[0].type}"); got != "Approved" {
		t.Errorf("alice's condition: %q, want Approved", got)
	}
	out = s.kubectl(t, "get", "csr", "--field-selector", "spec.signerName=example.com/team-signer")
	if !strings.Contains(out, "Approved") || !strings.Contains(out, "Denied") {
		t.Errorf("kubectl get csr by signer:\n%s", out)
	}
	out = s.kubectl(t, "describe", "csr", "bob")
	for _, want := range []string{"Name:", "bob", "Requesting User:", "idplane-admin", "Signer:", "example.com/team-signer", "Status:", "Denied", "Subject:", "Common Name:"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl describe csr lacks %q:\n%s", want, out)
		}
	}
	// The built-in signers' CAs are discoverable through the API.
	eventually(t, 30*time.Second, func() error {
		out, err := s.kubectlErr("get", "clustertrustbundles")
		if err != nil {
			return err
		}
		if !strings.Contains(out, "kubernetes.io:kube-apiserver-client:idplane") || !strings.Contains(out, "SIGNERNAME") {
			return fmt.Errorf("kubectl get clustertrustbundles:\n%s", out)
		}
		return nil
	})
	// Approving a denied request is refused: the two conditions exclude each other.
	if out, err := s.kubectlErr("certificate", "approve", "bob"); err == nil {
		t.Errorf("approving a denied CSR succeeded: %s", out)
	}
}
