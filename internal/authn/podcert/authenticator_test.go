package podcert

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/idplane/idplane/internal/certificates"
	podcertformat "github.com/idplane/idplane/internal/certificates/podcert"
	"github.com/idplane/idplane/internal/pki"
)

// objects is a serviceaccount.Getter over maps the test changes between requests.
type objects struct {
	sas   map[string]*corev1.ServiceAccount
	pods  map[string]*corev1.Pod
	nodes map[string]*corev1.Node
}

func notFound(resource, name string) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
}

func (o *objects) ServiceAccount(_ context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	if sa, ok := o.sas[ns+"/"+name]; ok {
		return sa, nil
	}
	return nil, notFound("serviceaccounts", name)
}

func (o *objects) Pod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	if p, ok := o.pods[ns+"/"+name]; ok {
		return p, nil
	}
	return nil, notFound("pods", name)
}

func (o *objects) Secret(_ context.Context, _, name string) (*corev1.Secret, error) {
	return nil, notFound("secrets", name)
}

func (o *objects) Node(_ context.Context, name string) (*corev1.Node, error) {
	if n, ok := o.nodes[name]; ok {
		return n, nil
	}
	return nil, notFound("nodes", name)
}

func world() *objects {
	return &objects{
		sas: map[string]*corev1.ServiceAccount{"ns/web": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "sa-1"}}},
		pods: map[string]*corev1.Pod{"ns/web-0": {
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0", UID: "pod-1"},
			Spec:       corev1.PodSpec{ServiceAccountName: "web", NodeName: "node-a"},
		}},
		nodes: map[string]*corev1.Node{
			"node-a": {ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "node-1"}},
			"node-b": {ObjectMeta: metav1.ObjectMeta{Name: "node-b", UID: "node-2"}},
		},
	}
}

type testCA struct {
	ca  *certificates.CA
	raw *pki.CA
	pem []byte
}

func newCA(t *testing.T, name string) testCA {
	t.Helper()
	files := pki.Files{Dir: t.TempDir()}
	raw, err := pki.EnsureSignerCA(files, name, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ca, err := certificates.LoadCA(files.SignerCACert(name), files.SignerCAKey(name))
	if err != nil {
		t.Fatal(err)
	}
	return testCA{ca: ca, raw: raw, pem: ca.CertPEM()}
}

// issue has signer's policy issue for the pod web-0 (UID pod-1, service account web sa-1) on
// node-a (node-1), signed by ca, and returns the leaf.
func issue(t *testing.T, signer string, ca testCA, now time.Time, edit func(*certificatesv1.PodCertificateRequestSpec)) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	stub, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		t.Fatal(err)
	}
	pcr := &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "req"},
		Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName: signer, PodName: "web-0", PodUID: "pod-1", ServiceAccountName: "web", ServiceAccountUID: "sa-1",
			NodeName: "node-a", NodeUID: "node-1", MaxExpirationSeconds: ptr.To[int32](3600), StubPKCS10Request: stub,
		},
	}
	if edit != nil {
		edit(&pcr.Spec)
	}
	out := podcertformat.Policies()[signer].Decide(podcertformat.Params{TrustDomain: "cluster.local", Duration: 24 * time.Hour}, ca.ca, pcr, now)
	if out.Condition != "Issued" {
		t.Fatalf("not issued: %+v", out)
	}
	block, _ := pem.Decode([]byte(out.CertificateChain))
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

func request(certs ...*x509.Certificate) *http.Request {
	req, _ := http.NewRequest(http.MethodGet, "https://idplane/api", nil)
	if certs != nil {
		req.TLS = &tls.ConnectionState{PeerCertificates: certs}
	}
	return req
}

func newAuthenticator(t *testing.T, ca testCA, o *objects, clk *clocktesting.FakeClock) *Authenticator {
	t.Helper()
	content, err := dynamiccertificates.NewStaticCAContent("client-pod-ca", ca.pem)
	if err != nil {
		t.Fatal(err)
	}
	return New(content, o, clk)
}

// TestAuthenticate: the certificate is the pod's service account with a pod-bound token's extras
// while the objects it names are the ones it names; every way they stop being so refuses it.
func TestAuthenticate(t *testing.T) {
	now := time.Now()
	clientPodCA, spiffeCA, otherCA := newCA(t, "kube-apiserver-client-pod"), newCA(t, "spiffe"), newCA(t, "other")
	good := issue(t, podcertformat.ClientPodSignerName, clientPodCA, now, nil)

	for _, tc := range []struct {
		name    string
		cert    *x509.Certificate
		change  func(o *objects)
		at      time.Duration
		ok      bool
		errHas  string // empty: no error
		noCerts bool
	}{
		{name: "live pod", cert: good, ok: true},
		{name: "no client certificate", noCerts: true},
		{name: "pod deleted", cert: good, change: func(o *objects) { delete(o.pods, "ns/web-0") }, errHas: "pod ns/web-0 named in the certificate has been deleted"},
		{name: "pod replaced", cert: good, change: func(o *objects) { o.pods["ns/web-0"].UID = "pod-2" }, errHas: "not the UID pod-1"},
		{name: "pod being deleted", cert: good, change: func(o *objects) { o.pods["ns/web-0"].DeletionTimestamp = &metav1.Time{Time: now} }, errHas: "is being deleted"},
		{name: "pod on another node", cert: good, change: func(o *objects) { o.pods["ns/web-0"].Spec.NodeName = "node-b" }, errHas: `bound to node "node-b", not "node-a"`},
		{name: "pod of another service account", cert: good, change: func(o *objects) { o.pods["ns/web-0"].Spec.ServiceAccountName = "admin" }, errHas: `runs as service account "admin"`},
		{name: "node deleted", cert: good, change: func(o *objects) { delete(o.nodes, "node-a") }, errHas: "node node-a named in the certificate has been deleted"},
		{name: "node replaced", cert: good, change: func(o *objects) { o.nodes["node-a"].UID = "node-9" }, errHas: "not the UID node-1"},
		{name: "service account replaced", cert: good, change: func(o *objects) { o.sas["ns/web"].UID = "sa-2" }, errHas: "not the UID sa-1"},
		{name: "service account deleted", cert: good, change: func(o *objects) { delete(o.sas, "ns/web") }, errHas: "service account ns/web named in the certificate has been deleted"},
		{name: "certificate for the wrong node", change: func(o *objects) {},
			cert: issue(t, podcertformat.ClientPodSignerName, clientPodCA, now, func(s *certificatesv1.PodCertificateRequestSpec) {
				s.NodeName, s.NodeUID = "node-b", "node-2"
			}), errHas: `bound to node "node-a", not "node-b"`},
		{name: "expired", cert: good, at: 2 * time.Hour, errHas: "expired"},
		{name: "client-pod format from another CA", cert: issue(t, podcertformat.ClientPodSignerName, otherCA, now, nil), errHas: "unknown authority"},
		{name: "client-pod format from the SPIFFE CA", cert: issue(t, podcertformat.ClientPodSignerName, spiffeCA, now, nil), errHas: "unknown authority"},
		{name: "a cluster client certificate", cert: adminCert(t, otherCA, now)},
		{name: "an SVID of the SPIFFE CA", cert: issue(t, podcertformat.SPIFFESignerName, spiffeCA, now, nil)},
		{name: "an SVID signed by the client-pod CA", cert: issue(t, podcertformat.SPIFFESignerName, clientPodCA, now, nil), errHas: "exactly three URI"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := world()
			if tc.change != nil {
				tc.change(o)
			}
			clk := clocktesting.NewFakeClock(now.Add(tc.at))
			a := newAuthenticator(t, clientPodCA, o, clk)
			req := request(tc.cert)
			if tc.noCerts {
				req = request()
			}
			resp, ok, err := a.AuthenticateRequest(req)
			if ok != tc.ok || (err == nil) != (tc.errHas == "") || (err != nil && !strings.Contains(err.Error(), tc.errHas)) {
				t.Fatalf("got ok=%v err=%v, want ok=%v err containing %q", ok, err, tc.ok, tc.errHas)
			}
			if !ok {
				if resp != nil {
					t.Fatal("a refusal carries a user")
				}
				return
			}
			u := resp.User
			if u.GetName() != "system:serviceaccount:ns:web" || u.GetUID() != "sa-1" ||
				!slices.Equal(u.GetGroups(), []string{"system:serviceaccounts", "system:serviceaccounts:ns"}) {
				t.Errorf("user %q uid %q groups %q", u.GetName(), u.GetUID(), u.GetGroups())
			}
			extra := u.GetExtra()
			want := map[string][]string{
				"authentication.kubernetes.io/pod-name":  {"web-0"},
				"authentication.kubernetes.io/pod-uid":   {"pod-1"},
				"authentication.kubernetes.io/node-name": {"node-a"},
				"authentication.kubernetes.io/node-uid":  {"node-1"},
			}
			id := extra["authentication.kubernetes.io/credential-id"]
			delete(extra, "authentication.kubernetes.io/credential-id")
			if !maps.EqualFunc(extra, want, slices.Equal) || len(id) != 1 || !strings.HasPrefix(id[0], "X509SHA256=") {
				t.Errorf("extra %v, credential-id %v", extra, id)
			}
		})
	}
}

// TestNoCacheOutlivesThePod: the same certificate, on the same authenticator, stops working at
// the first request after the pod is gone, and works again for nobody when a new pod of the same
// name appears.
func TestNoCacheOutlivesThePod(t *testing.T) {
	now := time.Now()
	ca := newCA(t, "kube-apiserver-client-pod")
	cert := issue(t, podcertformat.ClientPodSignerName, ca, now, nil)
	o := world()
	a := newAuthenticator(t, ca, o, clocktesting.NewFakeClock(now))
	for i := range 3 {
		if _, ok, err := a.AuthenticateRequest(request(cert)); !ok || err != nil {
			t.Fatalf("request %d: %v %v", i, ok, err)
		}
	}
	pod := o.pods["ns/web-0"]
	delete(o.pods, "ns/web-0")
	if _, ok, err := a.AuthenticateRequest(request(cert)); ok || err == nil {
		t.Fatal("the deleted pod's certificate still authenticates")
	}
	replacement := pod.DeepCopy()
	replacement.UID = types.UID("pod-2")
	o.pods["ns/web-0"] = replacement
	if _, ok, err := a.AuthenticateRequest(request(cert)); ok || err == nil {
		t.Fatal("the certificate authenticates for the pod's replacement")
	}
}

// adminCert is a client certificate of ca such as the general x509 authenticator takes: not this
// authenticator's business.
func adminCert(t *testing.T, ca testCA, now time.Time) *x509.Certificate {
	t.Helper()
	certPEM, _, err := pki.Issue(ca.raw, pki.IssueRequest{
		CommonName: "idplane-admin", Organization: []string{"system:masters"},
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, Validity: time.Hour, Now: now,
	})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pki.ParseCertificate(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
