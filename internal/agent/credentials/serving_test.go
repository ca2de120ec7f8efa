package credentials

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate"
	clocktesting "k8s.io/utils/clock/testing"
)

func newTestRequester(t *testing.T, client kubernetes.Interface) *servingRequester {
	t.Helper()
	dir := t.TempDir()
	store, err := certificate.NewFileStore(servingPairPrefix, dir, dir, "", "")
	if err != nil {
		t.Fatal(err)
	}
	template := servingTemplate("node-a", "node-a.example", []net.IP{net.ParseIP("192.0.2.10")})
	r := newServingRequester(context.Background(), template, store, filepath.Join(dir, servingPairPrefix+"-pending.key"),
		func() (kubernetes.Interface, error) { return client, nil }, clocktesting.NewFakeClock(time.Now()))
	t.Cleanup(r.Stop)
	return r
}

// A CSR under the request's name that someone else filed, even with a copy of the node's own
// request, is not waited on: the key goes and the next attempt has a new name.
func TestServingRequestFiledBySomeoneElseIsNotReused(t *testing.T) {
	client := fake.NewClientset()
	r := newTestRequester(t, client)
	key, _, err := r.pendingKey()
	if err != nil {
		t.Fatal(err)
	}
	name, err := r.requestName(key)
	if err != nil {
		t.Fatal(err)
	}
	csrPEM, err := certutil.MakeCSRFromTemplate(key, r.template)
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.CertificatesV1().CertificateSigningRequests().Create(context.Background(), &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       certificatesv1.CertificateSigningRequestSpec{Request: csrPEM, SignerName: certificatesv1.KubeletServingSignerName, Username: "system:node:node-b"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	ok, err := r.RotateCerts()
	if ok || err == nil || !strings.Contains(err.Error(), `filed by "system:node:node-b"`) {
		t.Fatalf("RotateCerts on a CSR filed by another node = %v, %v; want a refusal naming it", ok, err)
	}
	if _, err := os.Stat(r.keyFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the key of the foreign request was kept (%v)", err)
	}
	next, _, err := r.pendingKey()
	if err != nil {
		t.Fatal(err)
	}
	if nextName, _ := r.requestName(next); nextName == name {
		t.Error("the next request has the same name")
	}
}

// The pending key is read back rather than made anew, owner-only, and a request's name
// depends on the key and on what it asks for.
func TestServingRequestNameAndKeyKept(t *testing.T) {
	client := fake.NewClientset()
	r := newTestRequester(t, client)
	key, data, err := r.pendingKey()
	if err != nil {
		t.Fatal(err)
	}
	again, dataAgain, err := r.pendingKey()
	if err != nil || string(data) != string(dataAgain) {
		t.Fatalf("the pending key changed between reads (err %v)", err)
	}
	if info, err := os.Stat(r.keyFile); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("pending key file %v (err %v), want mode 0600", info, err)
	}
	n1, _ := r.requestName(key)
	n2, _ := r.requestName(again)
	if n1 != n2 || !strings.HasPrefix(n1, "kubelet-serving-") {
		t.Errorf("names %q and %q for the same key", n1, n2)
	}
	other := &servingRequester{template: servingTemplate("node-a", "node-a.example", []net.IP{net.ParseIP("192.0.2.11")})}
	if n3, _ := other.requestName(key); n3 == n1 {
		t.Error("a request for other addresses has the same name")
	}
}
