package e2e

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
)

// TestPodCertificateSigners drives the built-in signers with stock kubectl and the built binary:
// a request for a pod's client-pod certificate (Ed25519) is issued and the certificate makes
// `kubectl auth whoami` say the pod's service account until the pod is deleted; a SPIFFE request
// (ECDSA P-256) is issued and its SVID, judged by go-spiffe, verifies against the signer's
// ClusterTrustBundle with the service account's SPIFFE ID.
func TestPodCertificateSigners(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.ensureServiceAccount(t, "default", "bot")
	s.kubectl(t, "create", "-f", manifest(t, `apiVersion: v1
kind: Node
metadata:
  name: n1
`))
	s.kubectl(t, "create", "-f", manifest(t, `apiVersion: v1
kind: Pod
metadata:
  name: p
  namespace: default
spec:
  nodeName: n1
  serviceAccountName: bot
  containers:
  - name: c
    image: registry.example/app:1
`))
	uid := func(args ...string) string {
		return s.kubectl(t, append([]string{"get"}, append(args, "-o", "jsonpath={.metadata.uid}")...)...)
	}
	podUID, saUID, nodeUID := uid("pod", "p"), uid("serviceaccount", "bot"), uid("node", "n1")

	// request creates a request of signer for the pod with key and returns its issued chain.
	request := func(name, signer string, key crypto.Signer) string {
		t.Helper()
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
		if err != nil {
			t.Fatal(err)
		}
		s.kubectl(t, "create", "-f", manifest(t, fmt.Sprintf(`apiVersion: certificates.k8s.io/v1
kind: PodCertificateRequest
metadata:
  name: %s
  namespace: default
spec:
  signerName: %s
  podName: p
  podUID: %s
  serviceAccountName: bot
  serviceAccountUID: %s
  nodeName: n1
  nodeUID: %s
  stubPKCS10Request: %s
`, name, signer, podUID, saUID, nodeUID, base64.StdEncoding.EncodeToString(der))))
		s.kubectl(t, "wait", "--for", "condition=Issued", "--timeout", "60s", "podcertificaterequest/"+name)
		return s.kubectl(t, "get", "podcertificaterequest", name, "-o", "jsonpath={.status.certificateChain}")
	}

	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	clientChain := request("client", "kubernetes.io/kube-apiserver-client-pod", edKey)
	keyDER, err := x509.MarshalPKCS8PrivateKey(edKey)
	if err != nil {
		t.Fatal(err)
	}
	podKubeconfig := s.clientKubeconfig(t, []byte(clientChain), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	out, err := s.kubectlAs(podKubeconfig, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	if err != nil || out != "system:serviceaccount:default:bot" {
		t.Fatalf("kubectl auth whoami with the pod's certificate: %q, %v", out, err)
	}

	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	svidChain := request("svid", "idplane.io/spiffe", ecKey)
	var bundlePEM string
	eventually(t, 30*time.Second, func() error {
		bundlePEM, err = s.kubectlErr("get", "clustertrustbundle", "idplane.io:spiffe:idplane", "-o", "jsonpath={.spec.trustBundle}")
		return err
	})
	td := spiffeid.RequireTrustDomainFromString("cluster.local")
	bundle, err := x509bundle.Parse(td, []byte(bundlePEM))
	if err != nil {
		t.Fatalf("go-spiffe reading the ClusterTrustBundle: %v", err)
	}
	ecDER, err := x509.MarshalPKCS8PrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	svid, err := x509svid.Parse([]byte(svidChain), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER}))
	if err != nil {
		t.Fatalf("go-spiffe refuses the SVID: %v", err)
	}
	if id, _, err := x509svid.Verify(svid.Certificates, bundle); err != nil || id.String() != "spiffe://cluster.local/ns/default/sa/bot" {
		t.Errorf("SVID verifies as %v: %v", id, err)
	}

	s.kubectl(t, "delete", "pod", "p", "--grace-period=0", "--force")
	eventually(t, 30*time.Second, func() error {
		out, err := s.kubectlAs(podKubeconfig, "auth", "whoami")
		if err == nil || !strings.Contains(out, "Unauthorized") {
			return fmt.Errorf("kubectl auth whoami after the pod was deleted: %q, %v", out, err)
		}
		return nil
	})
}
