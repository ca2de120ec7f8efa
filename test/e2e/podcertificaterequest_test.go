package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestPodCertificateRequests drives the PodCertificateRequest API with stock kubectl: create
// through v1, list with the server's columns and field selectors, read through v1beta1, and see
// a v1beta1 request with the deprecated key fields refused at spec.stubPKCS10Request.
func TestPodCertificateRequests(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		t.Fatal(err)
	}
	stub := base64.StdEncoding.EncodeToString(der)
	request := func(version, name, node, extra string) string {
		return manifest(t, fmt.Sprintf(`apiVersion: certificates.k8s.io/%s
kind: PodCertificateRequest
metadata:
  name: %s
  namespace: default
spec:
  signerName: example.com/pods
  podName: web-0
  podUID: 7f0c6a4e-0000-4000-8000-000000000001
  serviceAccountName: web
  serviceAccountUID: 7f0c6a4e-0000-4000-8000-000000000002
  nodeName: %s
  nodeUID: 7f0c6a4e-0000-4000-8000-000000000003
  stubPKCS10Request: %s
%s`, version, name, node, stub, extra))
	}
	s.kubectl(t, "create", "-f", request("v1", "web-0-a", "node-a", ""))
	s.kubectl(t, "create", "-f", request("v1beta1", "web-0-b", "node-b", ""))

	out := s.kubectl(t, "get", "podcertificaterequests", "-o", "wide")
	header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
	if got := strings.Join(header, " "); got != "NAME SIGNERNAME POD SERVICEACCOUNT CONDITION AGE NODE" {
		t.Errorf("kubectl get podcertificaterequests columns: %q", got)
	}
	for _, want := range []string{"web-0-a", "web-0-b", "example.com/pods", "web-0", "Pending", "node-a"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get podcertificaterequests lacks %q:\n%s", want, out)
		}
	}
	out = s.kubectl(t, "get", "podcertificaterequests", "--field-selector", "spec.nodeName=node-b", "-o", "name")
	if strings.TrimSpace(out) != "podcertificaterequest.certificates.k8s.io/web-0-b" {
		t.Errorf("selected by spec.nodeName=node-b: %q", out)
	}
	if got := s.kubectl(t, "get", "podcertificaterequests", "web-0-a", "-o", "jsonpath={.spec.maxExpirationSeconds}"); got != "86400" {
		t.Errorf("maxExpirationSeconds %q, want the default 86400", got)
	}
	if got := s.kubectl(t, "get", "podcertificaterequests.v1beta1.certificates.k8s.io", "web-0-a", "-o", "jsonpath={.apiVersion}"); got != "certificates.k8s.io/v1beta1" {
		t.Errorf("read through v1beta1 as %q", got)
	}
	if out, err := s.kubectlErr("get", "podcertificaterequests", "--field-selector", "spec.podUID=x"); err == nil {
		t.Errorf("a selector on an unsupported field succeeded:\n%s", out)
	}
	if out := s.kubectl(t, "api-resources", "--api-group", "certificates.k8s.io"); !regexp.MustCompile(`(?m)^podcertificaterequests\s+certificates\.k8s\.io/v1\s+true\s+PodCertificateRequest$`).MatchString(out) {
		t.Errorf("api-resources:\n%s", out)
	}
	// Metadata changes through a strategic merge patch and server-side apply; the spec stays.
	s.kubectl(t, "label", "podcertificaterequests", "web-0-a", "team=web")
	s.kubectl(t, "apply", "--server-side", "-f", request("v1", "web-0-b", "node-b", ""))
	if got := s.kubectl(t, "get", "podcertificaterequests", "web-0-a", "-o", "jsonpath={.metadata.labels.team}"); got != "web" {
		t.Errorf("label team = %q", got)
	}
	if out, err := s.kubectlErr("apply", "--server-side", "--force-conflicts", "-f", request("v1", "web-0-b", "node-c", "")); err == nil || !strings.Contains(out, "immutable") {
		t.Errorf("applying another spec.nodeName: err %v\n%s", err, out)
	}
	out, err = s.kubectlErr("create", "-f", request("v1beta1", "legacy", "node-a", "  pkixPublicKey: "+base64.StdEncoding.EncodeToString([]byte("key"))+"\n"))
	if err == nil || !strings.Contains(out, "spec.stubPKCS10Request") || !strings.Contains(out, "is invalid") {
		t.Errorf("a v1beta1 request with pkixPublicKey: err %v\n%s", err, out)
	}
}
