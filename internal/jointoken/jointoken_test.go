package jointoken

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	testclock "k8s.io/utils/clock/testing"

	"github.com/idplane/idplane/internal/pubkeypin"
)

var now = time.Date(2026, 11, 24, 12, 0, 0, 500, time.UTC)

var (
	idPattern     = regexp.MustCompile(`^[a-z0-9]{6}$`)
	secretPattern = regexp.MustCompile(`^[a-z0-9]{16}$`)
)

func TestCreate(t *testing.T) {
	cases := []struct {
		name       string
		ttl        time.Duration
		binding    Binding
		expiration string // "": none
		extra      map[string]string
	}{
		{"a day", 24 * time.Hour, Binding{}, "2026-11-25T12:00:00Z", nil},
		{"ten minutes", 10 * time.Minute, Binding{}, "2026-11-24T12:10:00Z", nil},
		{"never expires", 0, Binding{}, "", nil},
		{"bound to a node", time.Hour, Binding{NodeName: "node-a.example"}, "2026-11-24T13:00:00Z",
			map[string]string{"idplane.io.node-name": "node-a.example"}},
		{"bound, single use", time.Hour, Binding{NodeName: "node-a", SingleUse: true}, "2026-11-24T13:00:00Z",
			map[string]string{"idplane.io.node-name": "node-a", "idplane.io.single-use": "true"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			tok, err := Create(context.Background(), client, testclock.NewFakePassiveClock(now), tc.ttl, tc.binding)
			if err != nil {
				t.Fatal(err)
			}
			if !idPattern.MatchString(tok.ID) || !secretPattern.MatchString(tok.Secret) || tok.String() != tok.ID+"."+tok.Secret {
				t.Fatalf("token %q (id %q secret %q) is not of bootstrap form", tok.String(), tok.ID, tok.Secret)
			}
			s, err := client.CoreV1().Secrets("kube-system").Get(context.Background(), "bootstrap-token-"+tok.ID, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if s.Type != "bootstrap.kubernetes.io/token" {
				t.Errorf("type %q", s.Type)
			}
			want := map[string]string{
				"token-id": tok.ID, "token-secret": tok.Secret,
				"usage-bootstrap-authentication": "true", "usage-bootstrap-signing": "true",
				"description": Description,
			}
			if tc.expiration != "" {
				want["expiration"] = tc.expiration
			}
			for k, v := range tc.extra {
				want[k] = v
			}
			if len(s.Data) != len(want) {
				t.Errorf("data keys %d, want %d: %q", len(s.Data), len(want), s.Data)
			}
			for k, v := range want {
				if string(s.Data[k]) != v {
					t.Errorf("data[%s] = %q, want %q", k, s.Data[k], v)
				}
			}
			if got := tok.Expiration.IsZero(); got != (tc.expiration == "") {
				t.Errorf("Expiration %v", tok.Expiration)
			}
		})
	}
}

func TestCreateTokensDiffer(t *testing.T) {
	client := fake.NewClientset()
	seen := map[string]bool{}
	for range 20 {
		tok, err := Create(context.Background(), client, testclock.NewFakePassiveClock(now), time.Hour, Binding{})
		if err != nil {
			t.Fatal(err)
		}
		if seen[tok.ID] || seen[tok.Secret] {
			t.Fatalf("token %s repeats an earlier id or secret", tok)
		}
		seen[tok.ID], seen[tok.Secret] = true, true
	}
}

func TestCreateRetriesTakenIDs(t *testing.T) {
	client := fake.NewClientset()
	taken := 2
	client.PrependReactor("create", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if taken > 0 {
			taken--
			return true, nil, apierrors.NewAlreadyExists(corev1.Resource("secrets"), a.(k8stesting.CreateAction).GetObject().(*corev1.Secret).Name)
		}
		return false, nil, nil
	})
	tok, err := Create(context.Background(), client, testclock.NewFakePassiveClock(now), time.Hour, Binding{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Secrets("kube-system").Get(context.Background(), "bootstrap-token-"+tok.ID, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestCreateErrors(t *testing.T) {
	t.Run("ids always taken", func(t *testing.T) {
		client := fake.NewClientset()
		client.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewAlreadyExists(corev1.Resource("secrets"), "x")
		})
		if _, err := Create(context.Background(), client, testclock.NewFakePassiveClock(now), time.Hour, Binding{}); err == nil {
			t.Fatal("no error")
		}
	})
	t.Run("forbidden", func(t *testing.T) {
		client := fake.NewClientset()
		client.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(corev1.Resource("secrets"), "x", nil)
		})
		_, err := Create(context.Background(), client, testclock.NewFakePassiveClock(now), time.Hour, Binding{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "kube-system/bootstrap-token-") {
			t.Fatalf("error %v, want a forbidden naming the secret", err)
		}
	})
	for name, b := range map[string]Binding{
		"single use without a node": {SingleUse: true},
		"node name with a capital":  {NodeName: "Node-A"},
		"node name with a slash":    {NodeName: "a/b"},
	} {
		t.Run(name, func(t *testing.T) {
			client := fake.NewClientset()
			if _, err := Create(context.Background(), client, testclock.NewFakePassiveClock(now), time.Hour, b); err == nil {
				t.Fatal("no error")
			}
			if len(client.Actions()) != 0 {
				t.Errorf("wrote %v", client.Actions())
			}
		})
	}
	t.Run("negative ttl", func(t *testing.T) {
		client := fake.NewClientset()
		if _, err := Create(context.Background(), client, testclock.NewFakePassiveClock(now), -time.Second, Binding{}); err == nil {
			t.Fatal("no error")
		}
		if len(client.Actions()) != 0 {
			t.Errorf("wrote %v", client.Actions())
		}
	})
}

const caPEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func TestKubeconfig(t *testing.T) {
	data, err := Kubeconfig(Cluster{Server: "https://10.0.0.1:6443", CAPEM: []byte(caPEM)}, Token{ID: "abcdef", Secret: "0123456789abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil {
		t.Fatalf("no current context in\n%s", data)
	}
	cluster, user := cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo]
	if cluster == nil || cluster.Server != "https://10.0.0.1:6443" || string(cluster.CertificateAuthorityData) != caPEM || cluster.InsecureSkipTLSVerify {
		t.Errorf("cluster %+v", cluster)
	}
	if user == nil || user.Token != "abcdef.0123456789abcdef" || len(user.ClientCertificateData) > 0 || user.Username != "" {
		t.Errorf("user %+v", user)
	}
}

func writeKubeconfig(t *testing.T, cfg *clientcmdapi.Config) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "admin.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// fromFile is a kubeconfig named by --kubeconfig.
func fromFile(path string) clientcmd.ClientConfig {
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{})
}

func adminConfig(server string, ca []byte, caFile string) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca, CertificateAuthority: caFile}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "admin"}
	cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "x"
	return cfg
}

func TestLoadAdmin(t *testing.T) {
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, []byte(caPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{
		"embedded CA": writeKubeconfig(t, adminConfig("https://127.0.0.1:6443", []byte(caPEM), "")),
		"CA file":     writeKubeconfig(t, adminConfig("https://127.0.0.1:6443", nil, caFile)),
	} {
		t.Run(name, func(t *testing.T) {
			_, c, err := loadAdmin(fromFile(path))
			if err != nil {
				t.Fatal(err)
			}
			if c.Server != "https://127.0.0.1:6443" || string(c.CAPEM) != caPEM {
				t.Errorf("cluster %+v", c)
			}
		})
	}
}

func realCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, NotBefore: now, NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// Bad input is a clear error and writes nothing.
func TestIssueErrors(t *testing.T) {
	garbage := filepath.Join(t.TempDir(), "garbage")
	if err := os.WriteFile(garbage, []byte("{not yaml: ["), 0o600); err != nil {
		t.Fatal(err)
	}
	// A port nothing listens on: connection refused at once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "https://" + ln.Addr().String()
	ln.Close()
	cases := map[string]struct {
		path string
		want string
	}{
		"missing file":     {filepath.Join(t.TempDir(), "nope"), "no such file"},
		"not a kubeconfig": {garbage, "loading admin kubeconfig"},
		"no current context": {writeKubeconfig(t, func() *clientcmdapi.Config {
			c := adminConfig("https://127.0.0.1:1", []byte(caPEM), "")
			c.CurrentContext = ""
			return c
		}()), "admin kubeconfig"},
		"no CA":              {writeKubeconfig(t, adminConfig("https://127.0.0.1:1", nil, "")), "names no certificate authority"},
		"unreachable server": {writeKubeconfig(t, adminConfig(closed, realCA(t), "")), "creating bootstrap token secret"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := Issue(context.Background(), Request{Admin: fromFile(tc.path), TTL: time.Hour, Clock: testclock.NewFakePassiveClock(now)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if out != nil {
				t.Errorf("output %q with the error", out)
			}
		})
	}
}

// BindingOf reads what Create writes, and a malformed binding is an error, never "unbound".
func TestBindingOf(t *testing.T) {
	cases := []struct {
		name string
		data map[string]string
		want Binding
		err  string // "": none
	}{
		{"unbound", nil, Binding{}, ""},
		{"bound", map[string]string{NodeNameKey: "n1"}, Binding{NodeName: "n1"}, ""},
		{"bound, single use", map[string]string{NodeNameKey: "n1", SingleUseKey: "true"}, Binding{NodeName: "n1", SingleUse: true}, ""},
		{"empty node name", map[string]string{NodeNameKey: ""}, Binding{}, "is empty"},
		{"invalid node name", map[string]string{NodeNameKey: "n1 n2"}, Binding{}, "not a valid node name"},
		{"single use not true", map[string]string{NodeNameKey: "n1", SingleUseKey: "yes"}, Binding{}, `not "true"`},
		{"single use without a node", map[string]string{SingleUseKey: "true"}, Binding{}, "must be bound to a node"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := secretOf(Token{ID: "abcdef", Secret: "0123456789abcdef"}, Binding{})
			for k, v := range tc.data {
				s.Data[k] = []byte(v)
			}
			got, err := BindingOf(s)
			if tc.err == "" {
				if err != nil || got != tc.want {
					t.Fatalf("BindingOf = %+v, %v; want %+v", got, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "kube-system/bootstrap-token-abcdef") {
				t.Fatalf("error %v, want one naming the secret and containing %q", err, tc.err)
			}
		})
	}
}

// JoinCommand pins every CA of the bundle, so that a bundle in rotation verifies either.
func TestJoinCommand(t *testing.T) {
	first, second := realCA(t), realCA(t)
	tok := Token{ID: "abcdef", Secret: "0123456789abcdef"}
	pins := make([]string, 0, 2)
	for _, p := range [][]byte{first, second} {
		block, _ := pem.Decode(p)
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		pins = append(pins, pubkeypin.Hash(cert))
	}
	got, err := JoinCommand(Cluster{Server: "https://192.0.2.1:6443", CAPEM: append(append([]byte{}, first...), second...)}, tok, Binding{NodeName: "node-a"})
	if err != nil {
		t.Fatal(err)
	}
	want := "idplane agent --server https://192.0.2.1:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash " + pins[0] +
		" --discovery-token-ca-cert-hash " + pins[1] + " --node-name node-a\n"
	if got != want {
		t.Errorf("JoinCommand =\n%q\nwant\n%q", got, want)
	}
	if _, err := JoinCommand(Cluster{Server: "https://192.0.2.1:6443", CAPEM: []byte("not pem")}, tok, Binding{}); err == nil {
		t.Error("JoinCommand with a CA that is no certificate: no error")
	}
}
