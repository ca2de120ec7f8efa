package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/idplane/idplane/internal/agent/credentials"
	"github.com/idplane/idplane/internal/agent/discovery"
	"github.com/idplane/idplane/internal/authz/rbac/bootstrap"
	"github.com/idplane/idplane/internal/clusterinfo"
	"github.com/idplane/idplane/internal/jointoken"
	"github.com/idplane/idplane/internal/pki"
	"github.com/idplane/idplane/internal/pubkeypin"
)

func getClusterInfo(c kubernetes.Interface) (*corev1.ConfigMap, error) {
	return c.CoreV1().ConfigMaps(clusterinfo.Namespace).Get(context.Background(), clusterinfo.Name, metav1.GetOptions{})
}

// anonymousClient reaches the server with no credentials, verifying it with the cluster CA.
func anonymousClient(ts *testServer) kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(rest.AnonymousClientConfig(ts.config))
}

func clusterCAPin(t *testing.T, ts *testServer) string {
	t.Helper()
	ca, err := pki.ParseCertificate(ts.config.CAData)
	if err != nil {
		t.Fatal(err)
	}
	return pubkeypin.Hash(ca)
}

// signedBy waits until cluster-info verifies with tok and returns what it names.
func signedBy(t *testing.T, ts *testServer, what string, tok jointoken.Token, check func(*corev1.ConfigMap, clusterinfo.Cluster) error) {
	t.Helper()
	eventually(t, what, func() error {
		cm, err := getClusterInfo(ts.client)
		if err != nil {
			return err
		}
		c, err := clusterinfo.Verify(cm, tok.ID, tok.Secret)
		if err != nil {
			return err
		}
		return check(cm, c)
	})
}

// TestClusterInfoSigning: the server publishes cluster-info with its URL and CA and signs it with
// each bootstrap token that may sign, not with one that may not; drops a deleted token's
// signature; updates the kubeconfig it published when its address changes; and re-signs, without
// undoing it, a kubeconfig an administrator wrote (as upstream's bootstrap signer e2e test does).
func TestClusterInfoSigning(t *testing.T) {
	dir := t.TempDir()
	ts := startTestServer(t, dir, nil)
	ctx := context.Background()
	notSigning := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-nosign", Namespace: metav1.NamespaceSystem},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		StringData: map[string]string{"token-id": "nosign", "token-secret": "0123456789abcdef", "usage-bootstrap-authentication": "true"},
	}
	mustCreate(t, ts.client.CoreV1().Secrets(metav1.NamespaceSystem).Create, notSigning)
	tok, err := jointoken.Create(ctx, ts.client, clock.RealClock{}, time.Hour, jointoken.Binding{})
	if err != nil {
		t.Fatal(err)
	}
	signedBy(t, ts, "cluster-info signed with the new token", tok, func(cm *corev1.ConfigMap, c clusterinfo.Cluster) error {
		if c.Server != ts.URL || string(c.CAPEM) != string(ts.config.CAData) {
			t.Fatalf("cluster-info names %s and CA %q, want %s and the cluster CA", c.Server, c.CAPEM, ts.URL)
		}
		// The signer saw the earlier secret in the same pass: no signature for it.
		if _, ok := cm.Data[clusterinfo.SignatureKey("nosign")]; ok {
			t.Fatal("cluster-info is signed with a token whose usage-bootstrap-signing is not true")
		}
		return nil
	})

	if err := ts.client.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, "bootstrap-token-"+tok.ID, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted token's signature removed", func() error {
		cm, err := getClusterInfo(ts.client)
		if err != nil {
			return err
		}
		if _, ok := cm.Data[clusterinfo.SignatureKey(tok.ID)]; ok {
			return errors.New("still signed")
		}
		return nil
	})

	// Restarted with another address to publish, the server updates its own kubeconfig.
	tok, err = jointoken.Create(ctx, ts.client, clock.RealClock{}, time.Hour, jointoken.Binding{})
	if err != nil {
		t.Fatal(err)
	}
	ts.stop()
	ts = startTestServer(t, dir, func(o *Options) { o.ClusterInfo.Server = "https://203.0.113.7:6443" })
	signedBy(t, ts, "cluster-info naming the new address", tok, func(_ *corev1.ConfigMap, c clusterinfo.Cluster) error {
		if c.Server != "https://203.0.113.7:6443" {
			return fmt.Errorf("names %s", c.Server)
		}
		return nil
	})

	// An administrator's kubeconfig is re-signed and kept.
	cm, err := getClusterInfo(ts.client)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(cm.Data[bootstrapapi.KubeConfigKey], "https://203.0.113.7:6443", "https://lb.example:443", 1)
	cm.Data[bootstrapapi.KubeConfigKey] = edited
	if _, err := ts.client.CoreV1().ConfigMaps(clusterinfo.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	signedBy(t, ts, "the edited kubeconfig signed", tok, func(cm *corev1.ConfigMap, c clusterinfo.Cluster) error {
		if c.Server != "https://lb.example:443" || cm.Data[bootstrapapi.KubeConfigKey] != edited {
			return fmt.Errorf("names %s", c.Server)
		}
		return nil
	})
}

// TestClusterInfoAnonymous: anonymous clients may GET cluster-info and do nothing else.
func TestClusterInfoAnonymous(t *testing.T) {
	ts := startTestServer(t, t.TempDir(), nil)
	ctx := context.Background()
	mustCreate(t, ts.client.CoreV1().ConfigMaps(clusterinfo.Namespace).Create, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other"}})
	mustCreate(t, ts.client.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: clusterinfo.Name}})
	anon := anonymousClient(ts)
	eventually(t, "anonymous GET of cluster-info", func() error {
		_, err := getClusterInfo(anon)
		return err
	})
	role, err := ts.client.RbacV1().Roles(clusterinfo.Namespace).Get(ctx, bootstrap.ClusterInfoViewer, metav1.GetOptions{})
	if err != nil || len(role.Rules) != 1 || len(role.Rules[0].Verbs) != 1 || role.Rules[0].Verbs[0] != "get" {
		t.Errorf("role %s: %+v, %v; want get alone", bootstrap.ClusterInfoViewer, role, err)
	}

	cms := anon.CoreV1().ConfigMaps(clusterinfo.Namespace)
	abuses := []struct {
		name string
		do   func() error
	}{
		{"get another configmap of kube-public", func() error {
			_, err := cms.Get(ctx, "other", metav1.GetOptions{})
			return err
		}},
		{"get cluster-info of another namespace", func() error {
			_, err := anon.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, clusterinfo.Name, metav1.GetOptions{})
			return err
		}},
		{"list configmaps of kube-public", func() error {
			_, err := cms.List(ctx, metav1.ListOptions{})
			return err
		}},
		{"list cluster-info by field selector", func() error {
			_, err := cms.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + clusterinfo.Name})
			return err
		}},
		{"watch cluster-info", func() error {
			w, err := cms.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + clusterinfo.Name})
			if err == nil {
				w.Stop()
			}
			return err
		}},
		{"update cluster-info", func() error {
			cm, err := getClusterInfo(ts.client)
			if err != nil {
				t.Fatal(err)
			}
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
			return err
		}},
		{"patch cluster-info", func() error {
			_, err := cms.Patch(ctx, clusterinfo.Name, types.MergePatchType, []byte(`{"data":{"kubeconfig":"x"}}`), metav1.PatchOptions{})
			return err
		}},
		{"delete cluster-info", func() error {
			return cms.Delete(ctx, clusterinfo.Name, metav1.DeleteOptions{})
		}},
		{"create a configmap in kube-public", func() error {
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "planted"}}, metav1.CreateOptions{})
			return err
		}},
		{"get a secret", func() error {
			_, err := anon.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, "bootstrap-token-abcdef", metav1.GetOptions{})
			return err
		}},
		{"get cluster-info with a bad token", func() error {
			_, err := getClusterInfo(tokenClient(t, ts, "abcdef.0123456789abcdef"))
			return err
		}},
	}
	for _, a := range abuses {
		t.Run(a.name, func(t *testing.T) {
			// Refused at authentication: the anonymous path is GET of the one URL alone.
			if err := a.do(); !apierrors.IsUnauthorized(err) {
				t.Errorf("got %v, want 401", err)
			}
		})
	}
	if cm, err := getClusterInfo(ts.client); err != nil || cm.Data["kubeconfig"] == "x" {
		t.Errorf("cluster-info after the abuses: %v, %v", cm, err)
	}
}

// TestClusterInfoAnonymousSettings: the flag turns the anonymous GET off; on, it adds to the
// paths an AuthenticationConfiguration opens rather than replacing them; --cluster-info-server
// names the published address.
func TestClusterInfoAnonymousSettings(t *testing.T) {
	t.Run("off", func(t *testing.T) {
		ts := startTestServer(t, t.TempDir(), func(o *Options) { o.ClusterInfo.Anonymous = false })
		eventually(t, "cluster-info published", func() error {
			_, err := getClusterInfo(ts.client)
			return err
		})
		if _, err := getClusterInfo(anonymousClient(ts)); !apierrors.IsUnauthorized(err) {
			t.Errorf("anonymous GET with --anonymous-cluster-info=false: %v, want 401", err)
		}
		if _, err := ts.client.RbacV1().Roles(clusterinfo.Namespace).Get(context.Background(), bootstrap.ClusterInfoViewer, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("role %s with the flag off: %v, want none", bootstrap.ClusterInfoViewer, err)
		}
	})
	t.Run("merged with a configuration file", func(t *testing.T) {
		dir := t.TempDir()
		config := writeFile(t, dir, "authn.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\n"+
			"anonymous:\n  enabled: true\n  conditions:\n  - path: /livez\n")
		ts := startTestServer(t, filepath.Join(dir, "data"), func(o *Options) {
			o.AuthenticationConfigFile = config
			o.ClusterInfo.Server = "https://203.0.113.5:6443"
		})
		anon := anonymousClient(ts)
		eventually(t, "anonymous GET of cluster-info", func() error {
			cm, err := getClusterInfo(anon)
			if err != nil {
				return err
			}
			c, err := clusterinfo.Parse([]byte(cm.Data["kubeconfig"]))
			if err == nil && c.Server != "https://203.0.113.5:6443" {
				return fmt.Errorf("published server %s", c.Server)
			}
			return err
		})
		httpClient, err := rest.HTTPClientFor(rest.AnonymousClientConfig(ts.config))
		if err != nil {
			t.Fatal(err)
		}
		for path, want := range map[string]int{"/livez": http.StatusOK, "/readyz": http.StatusUnauthorized} {
			resp, err := httpClient.Get(ts.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("anonymous GET %s: %d, want %d", path, resp.StatusCode, want)
			}
		}
	})
}

// TestJoinByTokenAndHash: a node with only a token and the CA's hash gets its client certificate
// through discovery; a wrong hash is refused before any request with the token.
func TestJoinByTokenAndHash(t *testing.T) {
	ts := startTestServer(t, t.TempDir(), nil)
	ctx := context.Background()
	tok, err := jointoken.Create(ctx, ts.client, clock.RealClock{}, time.Hour, jointoken.Binding{NodeName: "node-j"})
	if err != nil {
		t.Fatal(err)
	}
	wrong := discovery.Config{Server: ts.URL, Token: tok.String(), CACertHashes: []string{"sha256:" + strings.Repeat("00", 32)}, Timeout: 20 * time.Second}
	if _, err := discovery.Discover(ctx, wrong); err == nil || !strings.Contains(err.Error(), "matches none of the CA certificate hashes") {
		t.Errorf("discovery with a wrong hash: %v, want refused", err)
	}
	join := discovery.Config{Server: ts.URL, Token: tok.String(), CACertHashes: []string{clusterCAPin(t, ts)}, Timeout: 20 * time.Second}
	root := filepath.Join(t.TempDir(), "agent")
	id := startIdentity(t, credentials.Config{
		RootDir: root, NodeName: "node-j",
		Discover: func(ctx context.Context) (*rest.Config, error) { return discovery.Discover(ctx, join) },
		Clock:    clocktesting.NewFakeClock(time.Now()),
	})
	if u := whoami(t, id.RESTConfig()); !isNode(u, "node-j") {
		t.Errorf("the joined node authenticates as %+v", u)
	}
	id.Stop()

	// Restarted with its certificate still good, the node does not discover again: the token
	// may be gone by then.
	id = startIdentity(t, credentials.Config{
		RootDir: root, NodeName: "node-j",
		Discover: func(context.Context) (*rest.Config, error) {
			t.Error("discovery ran at a restart with a valid certificate")
			return nil, errors.New("unexpected discovery")
		},
		Clock: clocktesting.NewFakeClock(time.Now()),
	})
	if u := whoami(t, id.RESTConfig()); !isNode(u, "node-j") {
		t.Errorf("the restarted node authenticates as %+v", u)
	}
}

func TestClusterInfoOptionsValidate(t *testing.T) {
	cases := []struct{ server, wantErr string }{
		{"", ""},
		{"https://lb.example:6443", ""},
		{"http://lb.example:6443", "must be an https URL"},
		{"lb.example:6443", "must be an https URL"},
		{"https://", "must be an https URL"},
	}
	for _, tc := range cases {
		o := NewOptions()
		o.ClusterInfo.Server = tc.server
		err := o.Validate()
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("--cluster-info-server %q: Validate = %v, want %q", tc.server, err, tc.wantErr)
		}
	}
}

// TestClusterInfoServer: joining nodes are told the advertised address, not the loopback address
// the admin kubeconfig names when the server binds every address; the flag wins over both.
func TestClusterInfoServer(t *testing.T) {
	for _, tc := range []struct {
		name              string
		bind, advertise   string
		flag, admin, want string
	}{
		{name: "loopback bind", bind: "127.0.0.1", admin: "https://127.0.0.1:6443", want: "https://127.0.0.1:6443"},
		{name: "every address, advertised", bind: "0.0.0.0", advertise: "192.0.2.10", admin: "https://127.0.0.1:6443", want: "https://192.0.2.10:6443"},
		{name: "IPv6 advertised", bind: "::", advertise: "2001:db8::10", admin: "https://127.0.0.1:7443", want: "https://[2001:db8::10]:7443"},
		{name: "flag", bind: "0.0.0.0", advertise: "192.0.2.10", flag: "https://idplane.example:443", admin: "https://127.0.0.1:6443", want: "https://idplane.example:443"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			o.BindAddress = net.ParseIP(tc.bind)
			if tc.advertise != "" {
				o.AdvertiseAddress = net.ParseIP(tc.advertise)
			}
			o.ClusterInfo.Server = tc.flag
			got, err := clusterInfoServer(o, tc.admin)
			if err != nil || got != tc.want {
				t.Errorf("clusterInfoServer = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
