package discovery

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cluster-bootstrap/token/jws"

	"github.com/idplane/idplane/internal/clusterinfo"
	"github.com/idplane/idplane/internal/pki"
	"github.com/idplane/idplane/internal/pubkeypin"
)

const (
	tokenID     = "abcdef"
	tokenSecret = "0123456789abcdef"
	token       = tokenID + "." + tokenSecret
)

func newCA(t *testing.T, name string) *pki.CA {
	t.Helper()
	ca, err := pki.EnsureCA(pki.Files{Dir: t.TempDir()}, name, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// signedClusterInfo is cluster-info naming server and ca, signed with secret.
func signedClusterInfo(t *testing.T, server string, ca *pki.CA, secret string) *corev1.ConfigMap {
	t.Helper()
	kc, err := clusterinfo.Kubeconfig(server, ca.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := jws.ComputeDetachedSignature(string(kc), tokenID, secret)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: clusterinfo.Namespace, Name: clusterinfo.Name},
		Data:       map[string]string{"kubeconfig": string(kc), clusterinfo.SignatureKey(tokenID): sig},
	}
}

// server serves, over TLS with a certificate of servingCA, the configmaps answer returns for
// the n-th request of cluster-info (n from 0); nil answers 404. It refuses requests with
// credentials, as discovery must not send any.
func server(t *testing.T, servingCA *pki.CA, answer func(n int, url string) *corev1.ConfigMap) *httptest.Server {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			t.Errorf("discovery sent credentials: %q", r.Header.Get("Authorization"))
		}
		if r.Method != http.MethodGet || r.URL.Path != clusterinfo.Path {
			http.Error(w, "unexpected request", http.StatusNotFound)
			return
		}
		cm := answer(int(n.Add(1)-1), "https://"+r.Host)
		if cm == nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: 404})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(cm)
	}))
	certPEM, keyPEM, err := pki.Issue(servingCA, pki.IssueRequest{
		CommonName: "test", IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, Validity: time.Hour, Now: time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func TestDiscover(t *testing.T) {
	clusterCA, otherCA := newCA(t, "cluster-ca"), newCA(t, "attacker-ca")
	pin := pubkeypin.Hash(clusterCA.Cert)
	cases := []struct {
		name string
		// servingCA is the CA of the certificate the server presents.
		servingCA *pki.CA
		answer    func(t *testing.T, n int, url string) *corev1.ConfigMap
		config    func(c *Config)
		wantErr   string
	}{
		{name: "signed, pinned CA, server of that CA", servingCA: clusterCA,
			answer: func(t *testing.T, _ int, url string) *corev1.ConfigMap {
				return signedClusterInfo(t, url, clusterCA, tokenSecret)
			}},
		{name: "waits for the signature and the configmap", servingCA: clusterCA,
			answer: func(t *testing.T, n int, url string) *corev1.ConfigMap {
				switch n {
				case 0:
					return nil
				case 1:
					cm := signedClusterInfo(t, url, clusterCA, tokenSecret)
					delete(cm.Data, clusterinfo.SignatureKey(tokenID))
					return cm
				}
				return signedClusterInfo(t, url, clusterCA, tokenSecret)
			}},
		{name: "a server presenting another CA, relaying the real cluster-info", servingCA: otherCA,
			answer: func(t *testing.T, _ int, url string) *corev1.ConfigMap {
				return signedClusterInfo(t, url, clusterCA, tokenSecret)
			},
			wantErr: "does not hold a certificate of the cluster's CA"},
		{name: "validly signed cluster-info whose CA is not the pinned one", servingCA: otherCA,
			answer: func(t *testing.T, _ int, url string) *corev1.ConfigMap {
				return signedClusterInfo(t, url, otherCA, tokenSecret)
			},
			wantErr: "matches none of the CA certificate hashes given"},
		{name: "signed with another secret", servingCA: otherCA,
			answer: func(t *testing.T, _ int, url string) *corev1.ConfigMap {
				return signedClusterInfo(t, url, otherCA, "ffffffffffffffff")
			},
			wantErr: "does not verify with the token"},
		{name: "kubeconfig swapped under the signature", servingCA: otherCA,
			answer: func(t *testing.T, _ int, url string) *corev1.ConfigMap {
				cm := signedClusterInfo(t, url, clusterCA, tokenSecret)
				cm.Data["kubeconfig"] = signedClusterInfo(t, url, otherCA, tokenSecret).Data["kubeconfig"]
				return cm
			},
			wantErr: "does not verify with the token"},
		{name: "cluster-info changed between the two reads", servingCA: clusterCA,
			answer: func(t *testing.T, n int, url string) *corev1.ConfigMap {
				if n == 0 {
					return signedClusterInfo(t, url, clusterCA, tokenSecret)
				}
				return signedClusterInfo(t, "https://elsewhere.example", clusterCA, tokenSecret)
			},
			wantErr: "differs from the signed one"},
		{name: "never signed: gives up at the timeout", servingCA: clusterCA,
			answer: func(t *testing.T, _ int, url string) *corev1.ConfigMap {
				cm := signedClusterInfo(t, url, clusterCA, tokenSecret)
				delete(cm.Data, clusterinfo.SignatureKey(tokenID))
				return cm
			},
			config:  func(c *Config) { c.Timeout = 1500 * time.Millisecond },
			wantErr: `no cluster-info signed with token "abcdef"`},
		{name: "unsafe skip accepts the CA a token holder signed", servingCA: otherCA,
			answer: func(t *testing.T, _ int, url string) *corev1.ConfigMap {
				return signedClusterInfo(t, url, otherCA, tokenSecret)
			},
			config: func(c *Config) { c.CACertHashes, c.UnsafeSkipCAVerification = nil, true }},
		{name: "unsafe skip still checks hashes given", servingCA: otherCA,
			answer: func(t *testing.T, _ int, url string) *corev1.ConfigMap {
				return signedClusterInfo(t, url, otherCA, tokenSecret)
			},
			config:  func(c *Config) { c.UnsafeSkipCAVerification = true },
			wantErr: "matches none"},
		{name: "unsafe skip still needs the signature", servingCA: otherCA,
			answer: func(t *testing.T, _ int, url string) *corev1.ConfigMap {
				return signedClusterInfo(t, url, otherCA, "ffffffffffffffff")
			},
			config:  func(c *Config) { c.CACertHashes, c.UnsafeSkipCAVerification = nil, true },
			wantErr: "does not verify with the token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := server(t, tc.servingCA, func(n int, url string) *corev1.ConfigMap { return tc.answer(t, n, url) })
			c := Config{Server: srv.URL, Token: token, CACertHashes: []string{pin}, Timeout: 30 * time.Second}
			if tc.config != nil {
				tc.config(&c)
			}
			got, err := Discover(context.Background(), c)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Discover err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Host != srv.URL || got.BearerToken != token || len(got.CAData) == 0 || got.Insecure {
				t.Errorf("Discover = host %q token %q CA %d bytes insecure %v; want the server, the token and the verified CA", got.Host, got.BearerToken, len(got.CAData), got.Insecure)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	pin := "sha256:" + strings.Repeat("ab", 32)
	cases := []struct {
		name    string
		config  Config
		wantErr string
	}{
		{"complete", Config{Server: "https://a", Token: token, CACertHashes: []string{pin}}, ""},
		{"skip without hashes", Config{Server: "https://a", Token: token, UnsafeSkipCAVerification: true}, ""},
		{"no hash, no skip", Config{Server: "https://a", Token: token}, "needs the hash of the cluster CA"},
		{"bad hash", Config{Server: "https://a", Token: token, CACertHashes: []string{"md5:00"}}, "unknown hash format"},
		{"bad token", Config{Server: "https://a", Token: "abc.def", CACertHashes: []string{pin}}, "bootstrap token"},
		{"no server", Config{Token: token, CACertHashes: []string{pin}}, "server URL is required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.config.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
