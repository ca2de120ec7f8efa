package apiserver

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/idplane/idplane/internal/controller/trustbundlepublisher"
	"github.com/idplane/idplane/internal/pki"
)

// kubeletServingBundle waits until the kubelet-serving signer's ClusterTrustBundle holds want.
func kubeletServingBundle(t *testing.T, client kubernetes.Interface, want []byte) {
	t.Helper()
	eventually(t, "the kubelet-serving bundle holds its CA", func() error {
		b, err := client.CertificatesV1().ClusterTrustBundles().Get(context.Background(), trustbundlepublisher.BundleName(certificatesv1.KubeletServingSignerName), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if b.Spec.TrustBundle != string(want) {
			return fmt.Errorf("bundle %q, want %q", b.Spec.TrustBundle, want)
		}
		return nil
	})
}

// TestKubeletServingCA: kubernetes.io/kubelet-serving signs with a CA of its own, created at
// first start and published as its bundle; a data directory an older idplane made (no such CA)
// gets one at start and keeps working; an operator who wants the cluster CA to sign serving
// certificates names it with the signer's flags, and then no CA is created.
func TestKubeletServingCA(t *testing.T) {
	dir := t.TempDir()
	files := pki.Files{Dir: filepath.Join(dir, "pki")}
	certFile, keyFile := files.SignerCACert("kubelet-serving"), files.SignerCAKey("kubelet-serving")
	ts := startTestServer(t, dir, nil)
	clusterCA := readFile(t, files.CACert())
	first := readFile(t, certFile)
	if string(first) == string(clusterCA) {
		t.Fatal("the kubelet-serving CA is the cluster CA")
	}
	if info, err := os.Stat(keyFile); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("kubelet-serving CA key: %v, %v; want mode 0600", info, err)
	}
	kubeletServingBundle(t, ts.client, first)
	ts.stop()

	// The data directory of an older idplane: everything but the kubelet-serving CA.
	for _, f := range []string{certFile, keyFile} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	ts = startTestServer(t, dir, nil)
	second := readFile(t, certFile)
	if string(second) == string(first) || string(second) == string(clusterCA) {
		t.Error("restarting on an older data directory did not create a new kubelet-serving CA")
	}
	if got := readFile(t, files.CACert()); string(got) != string(clusterCA) {
		t.Error("the cluster CA changed")
	}
	kubeletServingBundle(t, ts.client, second)
	ts.stop()

	// The operator's choice: the cluster CA signs kubelet serving certificates too.
	for _, f := range []string{certFile, keyFile} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	ts = startTestServer(t, dir, func(o *Options) {
		o.ClusterSigningFiles["kubelet-serving"] = &SigningFiles{CertFile: files.CACert(), KeyFile: files.CAKey()}
	})
	kubeletServingBundle(t, ts.client, clusterCA)
	if _, err := os.Stat(certFile); !os.IsNotExist(err) {
		t.Errorf("a kubelet-serving CA was created although the flags name one: %v", err)
	}
}

// TestKubeletServingNamesOfOthers replays the review's attack: with --approve-kubelet-serving, a
// node puts localhost, 127.0.0.1, another node's name, kubernetes.default.svc and the kubernetes
// Service's ClusterIP in its own status and asks for a serving certificate for them. The request stays pending, neither approved
// nor denied, with an event naming what blocked it; the node's request for its own names is
// signed by the kubelet-serving CA, which does not verify the API server.
func TestKubeletServingNamesOfOthers(t *testing.T) {
	s := startRBACServerWith(t, func(o *Options) { o.ApproveKubeletServing = true })
	ctx := context.Background()
	registerNode(t, s, "n2", corev1.NodeAddress{Type: corev1.NodeHostName, Address: "n2"}, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.0.2.2"})
	registerNode(t, s, "n1", corev1.NodeAddress{Type: corev1.NodeHostName, Address: "n1"}, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.0.2.1"})
	n1 := nodeClient(t, s, "n1")
	patch := `{"status":{"addresses":[
		{"type":"Hostname","address":"n1"},{"type":"InternalIP","address":"192.0.2.1"},
		{"type":"InternalDNS","address":"localhost"},{"type":"ExternalIP","address":"127.0.0.1"},{"type":"ExternalIP","address":"10.0.0.1"},
		{"type":"ExternalDNS","address":"n2"},{"type":"InternalDNS","address":"kubernetes.default.svc"}]}}`
	eventually(t, "n1 patches its own addresses", func() error {
		_, err := n1.CoreV1().Nodes().Patch(ctx, "n1", types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
		return err
	})

	createAs(t, n1, servingCSR(t, "n1-evil", "n1", []string{"n1", "localhost", "n2", "kubernetes.default.svc"}, "192.0.2.1", "127.0.0.1", "10.0.0.1"))
	eventually(t, "an event on n1-evil names what blocked it", func() error {
		events, err := s.client.CoreV1().Events("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name != "n1-evil" || e.Reason != "KubeletServingNameRefused" {
				continue
			}
			for _, want := range []string{`"localhost"`, `"n2"`, `"kubernetes.default.svc"`, "127.0.0.1", "10.0.0.1"} {
				if !strings.Contains(e.Message, want) {
					return fmt.Errorf("event %q does not name %s", e.Message, want)
				}
			}
			return nil
		}
		return fmt.Errorf("no KubeletServingNameRefused event on n1-evil among %d events", len(events.Items))
	})

	createAs(t, n1, servingCSR(t, "n1-own", "n1", []string{"n1"}, "192.0.2.1"))
	block, _ := pem.Decode(issued(t, s.testServer, "n1-own"))
	if block == nil {
		t.Fatal("the issued certificate is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	servingCA, err := pki.ParseCertificate(readFile(t, filepath.Join(s.dataDir, "pki", "kubelet-serving-ca.crt")))
	if err != nil {
		t.Fatal(err)
	}
	if err := cert.CheckSignatureFrom(servingCA); err != nil {
		t.Errorf("n1's serving certificate is not signed by the kubelet-serving CA: %v", err)
	}
	if cert.CheckSignatureFrom(s.ca.Cert) == nil {
		t.Error("n1's serving certificate is signed by the cluster CA")
	}
	if !slices.Equal(cert.DNSNames, []string{"n1"}) {
		t.Errorf("certificate names %v", cert.DNSNames)
	}
	// The approver saw n1-evil before n1-own, which it approved.
	pending(t, s.testServer, "n1-evil")
}
