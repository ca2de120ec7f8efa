package clusterinfo

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/cluster-bootstrap/token/jws"

	"github.com/idplane/idplane/internal/pki"
)

const tokenID, tokenSecret = "abcdef", "0123456789abcdef"

func testKubeconfig(t *testing.T) (string, *pki.CA) {
	t.Helper()
	ca, err := pki.EnsureCA(pki.Files{Dir: t.TempDir()}, "test-ca", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	kc, err := Kubeconfig("https://10.1.2.3:6443", ca.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	return string(kc), ca
}

func signed(t *testing.T, kubeconfig, id, secret string) *corev1.ConfigMap {
	t.Helper()
	sig, err := jws.ComputeDetachedSignature(kubeconfig, id, secret)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.ConfigMap{Data: map[string]string{bootstrapapi.KubeConfigKey: kubeconfig, SignatureKey(id): sig}}
}

func TestVerify(t *testing.T) {
	kc, ca := testKubeconfig(t)
	other, _ := testKubeconfig(t)
	cases := []struct {
		name       string
		cm         *corev1.ConfigMap
		wantErr    string
		notSignedY bool
	}{
		{"signed with the token", signed(t, kc, tokenID, tokenSecret), "", false},
		{"no kubeconfig", &corev1.ConfigMap{Data: map[string]string{}}, "has no kubeconfig", true},
		{"no signature for the token", signed(t, kc, "zzzzzz", tokenSecret), `no signature for token id "abcdef"`, true},
		{"signed with another secret", signed(t, kc, tokenID, "ffffffffffffffff"), "does not verify with the token", false},
		{"kubeconfig replaced after signing", func() *corev1.ConfigMap {
			cm := signed(t, kc, tokenID, tokenSecret)
			cm.Data[bootstrapapi.KubeConfigKey] = other
			return cm
		}(), "does not verify with the token", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Verify(tc.cm, tokenID, tokenSecret)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Verify err = %v, want one containing %q", err, tc.wantErr)
				}
				if errors.Is(err, ErrNotSigned) != tc.notSignedY {
					t.Errorf("errors.Is(err, ErrNotSigned) = %v, want %v", !tc.notSignedY, tc.notSignedY)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Server != "https://10.1.2.3:6443" || string(got.CAPEM) != string(ca.CertPEM) || len(got.CAs) != 1 || !got.CAs[0].Equal(ca.Cert) {
				t.Errorf("Verify = %+v, want the server and CA signed", got)
			}
		})
	}
}

func TestParse(t *testing.T) {
	cases := []struct{ name, kubeconfig, wantErr string }{
		{"not yaml", "{", "parsing"},
		{"two clusters, no context", "apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster: {server: https://a}\n- name: b\n  cluster: {server: https://b}\n", "names 2 clusters"},
		{"no server", "apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster: {certificate-authority-data: Zm9v}\n", "no server"},
		{"no CA", "apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster: {server: https://a}\n", "no certificate-authority-data"},
		{"CA not a certificate", "apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster: {server: https://a, certificate-authority-data: Zm9v}\n", "certificate-authority-data"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse([]byte(tc.kubeconfig)); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Parse err = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
