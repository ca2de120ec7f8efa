package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/idplane/idplane/internal/certificates/podcert"
	"github.com/idplane/idplane/internal/pki"
)

// With -pod-certificate every simulated pod carries a podCertificate source: the nodes' agents
// make the keys, create the PodCertificateRequests, the server's SPIFFE signer issues them, and
// each pod's credential bundle lands in its node's scratch root, holding the pod's key and an
// SVID naming the pod's service account.
func TestLevelWithPodCertificates(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and runs a level")
	}
	ctx, srv, o := startServer(t)
	files := pki.Files{Dir: filepath.Join(o.DataDir, "pki")}
	scratch := t.TempDir()
	cfg, err := parseFlags([]string{
		"-kubeconfig", srv.AdminKubeconfig, "-client-ca-cert", files.CACert(), "-client-ca-key", files.CAKey(),
		"-scratch-root", scratch, "-nodes", "2", "-pods-per-node", "2", "-namespaces", "2", "-service-accounts", "2",
		"-token-expiration", "0", "-pod-certificate", podcert.SPIFFESignerName,
		"-ramp", "0s", "-settle", "0s", "-duration", "1s", "-ready-timeout", "1m", "-setup-timeout", "1m",
	})
	if err != nil {
		t.Fatal(err)
	}

	// The level deletes its pods at its end: the admin notes, as they are created, which
	// namespace and service account each pod (by UID) runs as.
	rc, err := clientcmd.BuildConfigFromFlags("", srv.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	w, err := admin.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{LabelSelector: podLabel + "=" + podLabelValue})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	identities := map[types.UID]*corev1.Pod{}
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for ev := range w.ResultChan() {
			if pod, ok := ev.Object.(*corev1.Pod); ok && ev.Type == watch.Added {
				mu.Lock()
				identities[pod.UID] = pod
				mu.Unlock()
			}
		}
	}()

	res, err := runLevel(ctx, cfg, 2)
	w.Stop()
	<-watched
	if err != nil {
		t.Fatalf("runLevel: %v", err)
	}
	var out strings.Builder
	printLevel(&out, res)
	t.Log("\n" + out.String())
	if res.Ready != 2 || res.Pods != 4 {
		t.Fatalf("ready %d of 2 nodes, %d pods; want 2 and 4 (verdict %q, errors %+v)", res.Ready, res.Pods, res.Verdict, res.Errors)
	}
	c := res.PodCertificates
	if c == nil {
		t.Fatalf("no pod certificate figures in the report:\n%s", out.String())
	}
	if c.Signer != podcert.SPIFFESignerName || c.Requests != 4 || c.RequestsPerPod != 1 || c.PodsWithFiles != 4 {
		t.Errorf("pod certificates %+v, want 4 requests (1 per pod) by %s and 4 pods with files", c, podcert.SPIFFESignerName)
	}
	if c.PodsPerSecond <= 0 || c.P50Ms <= 0 || c.P99Ms < c.P50Ms || c.MaxMs < c.P99Ms {
		t.Errorf("pod certificates %+v, want a rate and 0 < p50 <= p99 <= max", c)
	}
	if !strings.Contains(out.String(), "4 PodCertificateRequests created (1.00 per pod)") {
		t.Errorf("the report does not give the requests per pod:\n%s", out.String())
	}

	bundles, _ := filepath.Glob(filepath.Join(scratch, "level-2", "*", "pods", "*", "volumes", podCertificateVolume, credentialBundle))
	if len(bundles) != 4 {
		t.Fatalf("credential bundles in the scratch root: %v, want one per pod", bundles)
	}
	for _, path := range bundles {
		uid := types.UID(filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(path)))))
		mu.Lock()
		pod := identities[uid]
		mu.Unlock()
		if pod == nil {
			t.Fatalf("%s: no pod with UID %s was created", path, uid)
		}
		key, cert := parseBundle(t, path)
		want, err := podcert.SPIFFEID(o.PodCertificates.SPIFFETrustDomain, pod.Namespace, pod.Spec.ServiceAccountName)
		if err != nil {
			t.Fatal(err)
		}
		if len(cert.URIs) != 1 || cert.URIs[0].String() != want.String() {
			t.Errorf("%s: URI SANs %v, want %s", path, cert.URIs, want)
		}
		if pub, ok := cert.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() || !pub.Equal(key.Public()) {
			t.Errorf("%s: the certificate's key is not the bundle's P-256 key", path)
		}
	}
}

// parseBundle reads a credential bundle: a PKCS#8 private key, then the certificate chain.
func parseBundle(t *testing.T, path string) (crypto.Signer, *x509.Certificate) {
	t.Helper()
	rest, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []*pem.Block
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		blocks = append(blocks, b)
	}
	if len(blocks) < 2 || blocks[0].Type != "PRIVATE KEY" || blocks[1].Type != "CERTIFICATE" {
		t.Fatalf("%s: PEM blocks %d, want a PRIVATE KEY then CERTIFICATE(s)", path, len(blocks))
	}
	k, err := x509.ParsePKCS8PrivateKey(blocks[0].Bytes)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	key, ok := k.(crypto.Signer)
	if !ok {
		t.Fatalf("%s: key of type %T", path, k)
	}
	cert, err := x509.ParseCertificate(blocks[1].Bytes)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return key, cert
}
