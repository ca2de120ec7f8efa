package csrapproving

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
)

var created = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// tokenSecret is bootstrap token id's secret, created at created, with extra data.
func tokenSecret(id string, extra map[string]string) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id, Namespace: "kube-system", UID: types.UID("uid-" + id), CreationTimestamp: metav1.NewTime(created)},
		Type:       "bootstrap.kubernetes.io/token",
		Data: map[string][]byte{
			"token-id": []byte(id), "token-secret": []byte("0123456789abcdef"), "usage-bootstrap-authentication": []byte("true"),
		},
	}
	for k, v := range extra {
		s.Data[k] = []byte(v)
	}
	return s
}

// clientCSR is a kubelet client CSR for node, made by username a minute after created; a
// system:bootstrap:<id> username comes with the extra the token authenticator adds for the
// secret tokenSecret(id) returns.
func clientCSR(t *testing.T, name, username, node string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created.Add(time.Minute))},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			Username:   username, Groups: []string{"system:bootstrappers", "system:authenticated"},
		},
	}
	if id, ok := strings.CutPrefix(username, "system:bootstrap:"); ok {
		csr.Spec.Extra = map[string]certificatesv1.ExtraValue{"idplane.io/bootstrap-token-secret-uid": {"uid-" + id}}
	}
	return csr
}

func approved(csr *certificatesv1.CertificateSigningRequest) *certificatesv1.CertificateSigningRequest {
	csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
	return csr
}

func TestJudgeToken(t *testing.T) {
	bound := map[string]string{"idplane.io.node-name": "n1"}
	singleUse := map[string]string{"idplane.io.node-name": "n1", "idplane.io.single-use": "true"}
	deleting := metav1.NewTime(created)
	cases := []struct {
		name   string
		secret *corev1.Secret
		node   string // the CSR asks for system:node:<node>
		usedBy string
		reason string // "": approved
	}{
		{"unbound token, any node (upstream)", tokenSecret("abcdef", nil), "anything", "", ""},
		{"unbound token, a second node", tokenSecret("abcdef", nil), "n2", "other-csr", ""},
		{"bound token, its node", tokenSecret("abcdef", bound), "n1", "", ""},
		{"bound token, its node again", tokenSecret("abcdef", bound), "n1", "other-csr", ""},
		{"bound token, another node", tokenSecret("abcdef", bound), "n2", "", reasonTokenNodeMismatch},
		{"bound token, a node whose name extends it", tokenSecret("abcdef", bound), "n1.evil", "", reasonTokenNodeMismatch},
		{"single-use token, first certificate", tokenSecret("abcdef", singleUse), "n1", "", ""},
		{"single-use token, used already", tokenSecret("abcdef", singleUse), "n1", "other-csr", reasonTokenUsed},
		{"single-use token, another node", tokenSecret("abcdef", singleUse), "n2", "", reasonTokenNodeMismatch},
		{"token gone", nil, "n1", "", reasonTokenUnknown},
		{"token being deleted", func() *corev1.Secret {
			s := tokenSecret("abcdef", nil)
			s.DeletionTimestamp = &deleting
			return s
		}(), "n1", "", reasonTokenUnknown},
		{"secret of another type", func() *corev1.Secret {
			s := tokenSecret("abcdef", nil)
			s.Type = corev1.SecretTypeOpaque
			return s
		}(), "n1", "", reasonTokenUnknown},
		{"secret of another token id", tokenSecret("zzzzzz", nil), "n1", "", reasonTokenUnknown},
		{"token replaced since the CSR", func() *corev1.Secret {
			s := tokenSecret("abcdef", nil)
			s.UID = "uid-of-a-new-secret"
			return s
		}(), "n1", "", reasonTokenUnknown},
		{"malformed node name", tokenSecret("abcdef", map[string]string{"idplane.io.node-name": "N1"}), "N1", "", reasonTokenUnknown},
		{"single use without a node", tokenSecret("abcdef", map[string]string{"idplane.io.single-use": "true"}), "n1", "", reasonTokenUnknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := judgeToken("abcdef", "uid-abcdef", tc.secret, "system:node:"+tc.node, tc.usedBy)
			if v.allowed != (tc.reason == "") || v.reason != tc.reason {
				t.Fatalf("verdict %+v, want reason %q", v, tc.reason)
			}
			if !v.allowed && !strings.Contains(v.message, "abcdef") {
				t.Errorf("message %q does not name the token", v.message)
			}
		})
	}
}

// allowBootstrappers lets system:bootstrappers ask for any node's client certificate, as the
// default policy's nodeclient binding does.
var allowBootstrappers = authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	for _, g := range a.GetUser().GetGroups() {
		if g == "system:bootstrappers" && a.GetSubresource() == "nodeclient" {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
})

// The approver through a fake client: what each token's CSRs become, and the event on those
// left pending.
func TestBootstrapTokenBinding(t *testing.T) {
	bound := tokenSecret("bbbbbb", map[string]string{"idplane.io.node-name": "n1"})
	unbound := tokenSecret("uuuuuu", nil)
	single := tokenSecret("ssssss", map[string]string{"idplane.io.node-name": "n3", "idplane.io.single-use": "true"})
	cases := []struct {
		name     string
		csr      *certificatesv1.CertificateSigningRequest
		informer []runtime.Object // secrets in the approver's cache
		server   []runtime.Object // objects on the server beside the CSR
		approve  bool
		event    string // the event's reason and message hold this
	}{
		{"bound token, its node", clientCSR(t, "c", "system:bootstrap:bbbbbb", "n1"), []runtime.Object{bound}, []runtime.Object{bound}, true, ""},
		{"bound token, another node", clientCSR(t, "c", "system:bootstrap:bbbbbb", "n2"), []runtime.Object{bound}, []runtime.Object{bound},
			false, `BootstrapTokenNodeMismatch Left pending for a human to decide: bootstrap token bbbbbb may join only node "n1" (idplane.io.node-name), but the CSR asks for "system:node:n2"`},
		{"unbound token, any node", clientCSR(t, "c", "system:bootstrap:uuuuuu", "n2"), []runtime.Object{unbound}, []runtime.Object{unbound}, true, ""},
		{"token gone", clientCSR(t, "c", "system:bootstrap:gggggg", "n1"), nil, nil, false, "BootstrapTokenUnknown"},
		{"cache behind: the server is asked", clientCSR(t, "c", "system:bootstrap:bbbbbb", "n1"), nil, []runtime.Object{bound}, true, ""},
		{"cache behind: the server is asked, another node", clientCSR(t, "c", "system:bootstrap:bbbbbb", "n2"), nil, []runtime.Object{bound}, false, "BootstrapTokenNodeMismatch"},
		{"single-use token, first", clientCSR(t, "c", "system:bootstrap:ssssss", "n3"), []runtime.Object{single}, []runtime.Object{single}, true, ""},
		{"single-use token, second", clientCSR(t, "c", "system:bootstrap:ssssss", "n3"), []runtime.Object{single, approved(clientCSR(t, "first", "system:bootstrap:ssssss", "n3"))},
			[]runtime.Object{single}, false, `BootstrapTokenUsed Left pending for a human to decide: bootstrap token ssssss is single-use (idplane.io.single-use) and CSR "first" made with it is approved already`},
		{"single-use token, the first failed", clientCSR(t, "c", "system:bootstrap:ssssss", "n3"), []runtime.Object{single, func() *certificatesv1.CertificateSigningRequest {
			first := approved(clientCSR(t, "first", "system:bootstrap:ssssss", "n3"))
			first.Status.Conditions = append(first.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue})
			return first
		}()}, []runtime.Object{single}, true, ""},
		{"single-use token, an earlier token's CSR", clientCSR(t, "c", "system:bootstrap:ssssss", "n3"), []runtime.Object{single, func() *certificatesv1.CertificateSigningRequest {
			first := approved(clientCSR(t, "first", "system:bootstrap:ssssss", "n3"))
			first.Spec.Extra["idplane.io/bootstrap-token-secret-uid"] = certificatesv1.ExtraValue{"uid-of-an-earlier-secret"}
			return first
		}()}, []runtime.Object{single}, true, ""},
		{"the name of a bootstrap user from another authenticator, as upstream", func() *certificatesv1.CertificateSigningRequest {
			csr := clientCSR(t, "c", "system:bootstrap:gggggg", "n2")
			csr.Spec.Extra = nil
			return csr
		}(), nil, nil, true, ""},
		{"a node renewing is no token's business", func() *certificatesv1.CertificateSigningRequest {
			csr := clientCSR(t, "c", "system:node:n1", "n1")
			csr.Spec.Groups = []string{"system:nodes", "system:authenticated"}
			return csr
		}(), nil, nil, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(append([]runtime.Object{tc.csr}, tc.server...)...)
			factory := informers.NewSharedInformerFactory(client, 0)
			recorder := record.NewFakeRecorder(10)
			csrs := factory.Certificates().V1().CertificateSigningRequests()
			c, err := New(client, selfOrBootstrappers, csrs, Config{Secrets: factory.Core().V1().Secrets(), Recorder: recorder})
			if err != nil {
				t.Fatal(err)
			}
			defer c.queue.ShutDown()
			if err := csrs.Informer().GetStore().Add(tc.csr); err != nil {
				t.Fatal(err)
			}
			for _, o := range tc.informer {
				store := factory.Core().V1().Secrets().Informer().GetStore()
				if _, ok := o.(*certificatesv1.CertificateSigningRequest); ok {
					store = csrs.Informer().GetStore()
				}
				if err := store.Add(o); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.sync(context.Background(), tc.csr.Name); err != nil {
				t.Fatal(err)
			}
			if got := len(approvals(client)) == 1; got != tc.approve {
				t.Errorf("approved %v, want %v (actions %v)", got, tc.approve, client.Actions())
			}
			for _, a := range client.Actions() {
				if a.GetVerb() == "update" && a.GetSubresource() == "approval" && !tc.approve {
					t.Errorf("wrote an approval: %v", a)
				}
			}
			var events []string
			for len(recorder.Events) > 0 {
				events = append(events, <-recorder.Events)
			}
			if tc.event == "" {
				if len(events) != 0 {
					t.Errorf("events %q, want none", events)
				}
				return
			}
			if len(events) != 1 || !strings.HasPrefix(events[0], "Warning ") || !strings.Contains(events[0], tc.event) {
				t.Errorf("events %q, want one warning holding %q", events, tc.event)
			}
		})
	}
}

// selfOrBootstrappers is allowBootstrappers plus a node's selfnodeclient.
var selfOrBootstrappers = authorizer.AuthorizerFunc(func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetSubresource() == "selfnodeclient" && strings.HasPrefix(a.GetUser().GetName(), "system:node:") {
		return authorizer.DecisionAllow, "", nil
	}
	return allowBootstrappers(ctx, a)
})

// A failure to read the token's secret is retried, never taken for an unbound token.
func TestBootstrapTokenReadError(t *testing.T) {
	csr := clientCSR(t, "c", "system:bootstrap:bbbbbb", "n1")
	client := fake.NewClientset(csr)
	client.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd down")
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	csrs := factory.Certificates().V1().CertificateSigningRequests()
	c, err := New(client, allowBootstrappers, csrs, Config{Secrets: factory.Core().V1().Secrets(), Recorder: record.NewFakeRecorder(10)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.queue.ShutDown()
	if err := csrs.Informer().GetStore().Add(csr); err != nil {
		t.Fatal(err)
	}
	if err := c.sync(context.Background(), csr.Name); err == nil || !strings.Contains(err.Error(), "kube-system/bootstrap-token-bbbbbb") {
		t.Fatalf("sync: %v, want an error naming the secret", err)
	}
	if len(approvals(client)) != 0 {
		t.Error("approved without reading the token")
	}
}
