package apiserver

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spiffe/go-spiffe/v2/bundle/spiffebundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/idplane/idplane/internal/certificates"
	"github.com/idplane/idplane/internal/certificates/podcert"
	"github.com/idplane/idplane/internal/controller/trustbundlepublisher"
	"github.com/idplane/idplane/internal/pki"
)

// podCertFixture is a service account, a node and a pod on it, as a pod certificate names them.
type podCertFixture struct {
	sa   *corev1.ServiceAccount
	node *corev1.Node
	pod  *corev1.Pod
}

func newPodCertFixture(t *testing.T, s *testServer, nodeName, podName string) podCertFixture {
	t.Helper()
	ctx := context.Background()
	f := podCertFixture{sa: ensureServiceAccount(t, s.client, "default", "bot")}
	var err error
	f.node, err = s.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		f.node, err = s.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	f.pod, err = s.client.CoreV1().Pods("default").Create(ctx, newPod(podName, onNode(nodeName), func(p *corev1.Pod) { p.Spec.ServiceAccountName = "bot" }), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// request is the PodCertificateRequest the pod's node would make for signer with key.
func (f podCertFixture) request(t *testing.T, signer string, key crypto.Signer) *certificatesv1.PodCertificateRequest {
	t.Helper()
	stub, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.pod.Namespace, GenerateName: f.pod.Name + "-"},
		Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName: signer, PodName: f.pod.Name, PodUID: f.pod.UID,
			ServiceAccountName: f.sa.Name, ServiceAccountUID: f.sa.UID,
			NodeName: types.NodeName(f.node.Name), NodeUID: f.node.UID,
			MaxExpirationSeconds: ptr[int32](86400), StubPKCS10Request: stub,
		},
	}
}

// signDirectly has the signer's CA in the server's data directory issue for the request, as the
// signing controller does.
func signDirectly(t *testing.T, s *testServer, short string, pcr *certificatesv1.PodCertificateRequest) []byte {
	t.Helper()
	files := pki.Files{Dir: filepath.Join(s.dataDir, "pki")}
	ca, err := certificates.LoadCA(files.SignerCACert(short), files.SignerCAKey(short))
	if err != nil {
		t.Fatal(err)
	}
	out := podcert.Policies()[pcr.Spec.SignerName].Decide(podcert.Params{TrustDomain: "cluster.local", Duration: 24 * time.Hour}, ca, pcr, time.Now())
	if out.Condition != certificatesv1.PodCertificateRequestConditionTypeIssued {
		t.Fatalf("not issued: %+v", out)
	}
	return []byte(out.CertificateChain)
}

func newECKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func keyPEM(t *testing.T, key crypto.Signer) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// certClientFor is a client that authenticates with the certificate chain and key alone.
func certClientFor(t *testing.T, s *testServer, chainPEM []byte, key crypto.Signer) kubernetes.Interface {
	t.Helper()
	cfg := rest.AnonymousClientConfig(s.config)
	cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData = chainPEM, keyPEM(t, key)
	return kubernetes.NewForConfigOrDie(cfg)
}

func selfReview(c kubernetes.Interface) (*authenticationv1.SelfSubjectReview, error) {
	return c.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
}

// checkWhoami requires the review to say the pod's service account with the pod-bound extras.
func checkWhoami(t *testing.T, c kubernetes.Interface, f podCertFixture) {
	t.Helper()
	r, err := selfReview(c)
	if err != nil {
		t.Fatalf("whoami with the pod's client certificate: %v", err)
	}
	u := r.Status.UserInfo
	if u.Username != "system:serviceaccount:default:bot" || u.UID != string(f.sa.UID) {
		t.Fatalf("whoami = %q (uid %q)", u.Username, u.UID)
	}
	for key, want := range map[string]string{
		"authentication.kubernetes.io/pod-name": f.pod.Name, "authentication.kubernetes.io/pod-uid": string(f.pod.UID),
		"authentication.kubernetes.io/node-name": f.node.Name, "authentication.kubernetes.io/node-uid": string(f.node.UID),
	} {
		if got := u.Extra[key]; len(got) != 1 || got[0] != want {
			t.Errorf("extra %s = %v, want %s", key, got, want)
		}
	}
}

// TestPodClientCertificateAuthentication: a kube-apiserver-client-pod certificate is the pod's
// service account while the pod lives, and nothing once it is deleted; the TLS layer asks for it
// by its CA; an SVID, or a client-pod certificate of another CA, is nobody.
func TestPodClientCertificateAuthentication(t *testing.T) {
	s := startTestServer(t, t.TempDir(), nil)
	ctx := context.Background()
	f := newPodCertFixture(t, s, "n1", "p")
	key := newECKey(t)
	chain := signDirectly(t, s, "kube-apiserver-client-pod", f.request(t, podcert.ClientPodSignerName, key))
	client := certClientFor(t, s, chain, key)
	checkWhoami(t, client, f)

	// A TLS client that offers only a certificate of a CA the server names (Go's, when given
	// Certificates) must find the client-pod CA among them.
	caPEM, err := os.ReadFile(filepath.Join(s.dataDir, "pki", "kube-apiserver-client-pod-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	podCA, err := pki.ParseCertificate(caPEM)
	if err != nil {
		t.Fatal(err)
	}
	var acceptable [][]byte
	conn, err := tls.Dial("tcp", s.URL[len("https://"):], &tls.Config{
		InsecureSkipVerify: true, // only the CertificateRequest is looked at
		GetClientCertificate: func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
			acceptable = cri.AcceptableCAs
			return &tls.Certificate{}, nil
		},
	})
	if err != nil {
		t.Fatalf("TLS handshake: %v", err)
	}
	conn.Close()
	found := false
	for _, name := range acceptable {
		found = found || bytes.Equal(name, podCA.RawSubject)
	}
	if !found {
		t.Errorf("the server's CertificateRequest does not name the client-pod CA (%d names)", len(acceptable))
	}

	// An SVID is no client certificate of the API.
	svidKey := newECKey(t)
	svid := signDirectly(t, s, "spiffe", f.request(t, podcert.SPIFFESignerName, svidKey))
	if _, err := selfReview(certClientFor(t, s, svid, svidKey)); !apierrors.IsUnauthorized(err) {
		t.Errorf("whoami with an SVID: %v, want 401", err)
	}
	// A client-pod certificate signed by the SPIFFE CA is nobody either.
	pcr := f.request(t, podcert.ClientPodSignerName, svidKey)
	forged := signDirectly(t, s, "spiffe", pcr)
	if _, err := selfReview(certClientFor(t, s, forged, svidKey)); !apierrors.IsUnauthorized(err) {
		t.Errorf("whoami with a client-pod certificate of the SPIFFE CA: %v, want 401", err)
	}

	if err := s.client.CoreV1().Pods("default").Delete(ctx, f.pod.Name, *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted pod's certificate refused", func() error {
		if _, err := selfReview(client); !apierrors.IsUnauthorized(err) {
			return fmt.Errorf("whoami: %v, want 401", err)
		}
		return nil
	})
	// A new pod of the same name does not bring the certificate back.
	newPodCertFixture(t, s, "n1", "p")
	if _, err := selfReview(client); !apierrors.IsUnauthorized(err) {
		t.Errorf("whoami after the pod was replaced: %v, want 401", err)
	}
}

// TestSPIFFEBundleEndpoint: the bundle is published as the signer's ClusterTrustBundle and served
// at /spiffe/v1/bundle to service accounts, to anonymous parties only once the operator opens the
// path and binds the role, in the format go-spiffe reads.
func TestSPIFFEBundleEndpoint(t *testing.T) {
	dir := t.TempDir()
	authnConfig := writeFile(t, dir, "authn.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
anonymous:
  enabled: true
  conditions:
  - path: /readyz
  - path: /spiffe/v1/bundle
`)
	s := startTestServer(t, filepath.Join(dir, "data"), func(o *Options) { o.AuthenticationConfigFile = authnConfig })
	ctx := context.Background()
	caPEM, err := os.ReadFile(filepath.Join(s.dataDir, "pki", "spiffe-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the SPIFFE ClusterTrustBundle", func() error {
		ctb, err := s.client.CertificatesV1().ClusterTrustBundles().Get(ctx, trustbundlepublisher.BundleName(podcert.SPIFFESignerName), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if ctb.Spec.SignerName != podcert.SPIFFESignerName || ctb.Spec.TrustBundle != string(caPEM) {
			return fmt.Errorf("bundle %s holds another CA", ctb.Name)
		}
		return nil
	})
	if _, err := s.client.CertificatesV1().ClusterTrustBundles().Get(ctx, trustbundlepublisher.BundleName(podcert.ClientPodSignerName), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the client-pod CA is published for others to trust: %v", err)
	}

	get := func(c *http.Client) (int, []byte) {
		t.Helper()
		resp, err := c.Get(s.URL + podcert.BundlePath)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	anonymous, err := rest.HTTPClientFor(rest.AnonymousClientConfig(s.config))
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := get(anonymous); code != http.StatusForbidden {
		t.Errorf("anonymous GET before the binding: %d, want 403", code)
	}
	ensureServiceAccount(t, s.client, "default", "bot")
	tr, err := requestToken(s.client, "default", "bot", authenticationv1.TokenRequestSpec{})
	if err != nil {
		t.Fatal(err)
	}
	saConfig := rest.AnonymousClientConfig(s.config)
	saConfig.BearerToken = tr.Status.Token
	saClient, err := rest.HTTPClientFor(saConfig)
	if err != nil {
		t.Fatal(err)
	}
	code, body := get(saClient)
	if code != http.StatusOK {
		t.Fatalf("service account GET: %d %s", code, body)
	}
	bundle, err := spiffebundle.Parse(spiffeid.RequireTrustDomainFromString("cluster.local"), body)
	if err != nil {
		t.Fatalf("go-spiffe refuses the served bundle: %v", err)
	}
	caCert, err := pki.ParseCertificate(caPEM)
	if err != nil {
		t.Fatal(err)
	}
	if auth := bundle.X509Authorities(); len(auth) != 1 || !auth[0].Equal(caCert) {
		t.Errorf("served bundle does not hold the SPIFFE CA")
	}

	mustCreate(t, s.client.RbacV1().ClusterRoleBindings().Create, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "spiffe-bundle-public"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "idplane:spiffe-bundle-discovery"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:unauthenticated"}},
	})
	eventually(t, "anonymous bundle", func() error {
		if code, _ := get(anonymous); code != http.StatusOK {
			return fmt.Errorf("anonymous GET: %d", code)
		}
		return nil
	})
	// Opening the bundle opens nothing else.
	resp, err := anonymous.Get(s.URL + "/openid/v1/jwks")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous GET of another path: %d, want 401", resp.StatusCode)
	}
}

// waitAnswered waits for the request's terminal condition, on a watch of it.
func waitAnswered(t *testing.T, s *testServer, pcr *certificatesv1.PodCertificateRequest) *certificatesv1.PodCertificateRequest {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pcrs := s.client.CertificatesV1().PodCertificateRequests(pcr.Namespace)
	w, err := pcrs.Watch(ctx, metav1.SingleObject(pcr.ObjectMeta))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if got, ok := ev.Object.(*certificatesv1.PodCertificateRequest); ok && len(got.Status.Conditions) > 0 {
			return got
		}
	}
	t.Fatalf("pod certificate request %s was not answered", pcr.Name)
	return nil
}

func createPCR(t *testing.T, s *testServer, pcr *certificatesv1.PodCertificateRequest) *certificatesv1.PodCertificateRequest {
	t.Helper()
	created, err := s.client.CertificatesV1().PodCertificateRequests(pcr.Namespace).Create(context.Background(), pcr, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a pod certificate request: %v", err)
	}
	return waitAnswered(t, s, created)
}

// TestPodCertificateRequestsIssued: through the API, each built-in signer answers: the SVID
// verifies against the published bundle with the pod's SPIFFE ID, the client-pod certificate
// makes SelfSubjectReview say the service account until the pod is deleted, and the rules deny
// with the API's reasons.
func TestPodCertificateRequestsIssued(t *testing.T) {
	s := startTestServer(t, t.TempDir(), nil)
	ctx := context.Background()
	f := newPodCertFixture(t, s, "n1", "p")

	svidKey := newECKey(t)
	svidPCR := createPCR(t, s, f.request(t, podcert.SPIFFESignerName, svidKey))
	if c := svidPCR.Status.Conditions; c[0].Type != "Issued" || svidPCR.Status.CertificateChain == "" {
		t.Fatalf("SPIFFE request: %+v", svidPCR.Status.Conditions)
	}
	// The bundle as a federating party fetches it from the server.
	bundle, err := s.client.CoreV1().RESTClient().Get().AbsPath(podcert.BundlePath).DoRaw(ctx)
	if err != nil {
		t.Fatalf("fetching the SPIFFE bundle: %v", err)
	}
	td := spiffeid.RequireTrustDomainFromString("cluster.local")
	sb, err := spiffebundle.Parse(td, bundle)
	if err != nil {
		t.Fatal(err)
	}
	svid, err := x509svid.Parse([]byte(svidPCR.Status.CertificateChain), keyPEM(t, svidKey))
	if err != nil {
		t.Fatalf("go-spiffe refuses the issued SVID: %v", err)
	}
	if id, _, err := x509svid.Verify(svid.Certificates, sb); err != nil || id.String() != "spiffe://cluster.local/ns/default/sa/bot" {
		t.Errorf("SVID verifies as %v: %v", id, err)
	}

	clientKey := newECKey(t)
	clientPCR := createPCR(t, s, f.request(t, podcert.ClientPodSignerName, clientKey))
	if c := clientPCR.Status.Conditions; c[0].Type != "Issued" {
		t.Fatalf("client-pod request: %+v", c)
	}
	if d := clientPCR.Status.NotAfter.Sub(clientPCR.Status.NotBefore.Time); d != 24*time.Hour {
		t.Errorf("client-pod certificate lifetime %v, want 24h", d)
	}
	client := certClientFor(t, s, []byte(clientPCR.Status.CertificateChain), clientKey)
	checkWhoami(t, client, f)

	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	denied := createPCR(t, s, f.request(t, podcert.SPIFFESignerName, edKey))
	if c := denied.Status.Conditions[0]; c.Type != "Denied" || c.Reason != "UnsupportedKeyType" || denied.Status.CertificateChain != "" {
		t.Errorf("Ed25519 SPIFFE request: %+v", c)
	}
	annotated := f.request(t, podcert.ClientPodSignerName, newECKey(t))
	annotated.Spec.UnverifiedUserAnnotations = map[string]string{"example.com/ttl": "1h"}
	if c := createPCR(t, s, annotated).Status.Conditions[0]; c.Type != "Denied" || c.Reason != "InvalidUnverifiedUserAnnotations" {
		t.Errorf("annotated request: %+v", c)
	}

	if err := s.client.CoreV1().Pods("default").Delete(ctx, f.pod.Name, *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted pod's certificate refused", func() error {
		if _, err := selfReview(client); !apierrors.IsUnauthorized(err) {
			return fmt.Errorf("whoami: %v, want 401", err)
		}
		return nil
	})
}

// TestPodCertificateFromTheNode: the whole path as an agent takes it: the pod's node asks, with
// its own credentials, for the pod's podCertificate source; the signer issues; the certificate
// is the service account for the API, and stops being anyone once its node is gone.
func TestPodCertificateFromTheNode(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	sa := ensureServiceAccount(t, s.client, "default", "bot")
	node, err := s.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := s.client.CoreV1().Pods("default").Create(ctx, newPod("p", onNode("n1"), func(p *corev1.Pod) {
		p.Spec.ServiceAccountName = "bot"
		p.Spec.Volumes = []corev1.Volume{{Name: "cert", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{PodCertificate: &corev1.PodCertificateProjection{
				SignerName: podcert.ClientPodSignerName, KeyType: "ED25519", CredentialBundlePath: "bundle.pem",
			}}},
		}}}}
	}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f := podCertFixture{sa: sa, node: node, pod: pod}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pcrs := nodeClient(t, s, "n1").CertificatesV1().PodCertificateRequests("default")
	var created *certificatesv1.PodCertificateRequest
	eventually(t, "the node creates the request", func() error {
		created, err = pcrs.Create(ctx, f.request(t, podcert.ClientPodSignerName, key), metav1.CreateOptions{})
		return err
	})
	issued := waitAnswered(t, s.testServer, created)
	if c := issued.Status.Conditions[0]; c.Type != "Issued" {
		t.Fatalf("the node's request: %+v", c)
	}
	client := certClientFor(t, s.testServer, []byte(issued.Status.CertificateChain), key)
	checkWhoami(t, client, f)

	if err := s.client.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the certificate refused once its node is gone", func() error {
		if _, err := selfReview(client); !apierrors.IsUnauthorized(err) {
			return fmt.Errorf("whoami: %v, want 401", err)
		}
		return nil
	})
}
