package apiserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// tokenClient is a client that authenticates with a bearer token only.
func tokenClient(t *testing.T, s *testServer, token string) kubernetes.Interface {
	t.Helper()
	cfg := rest.AnonymousClientConfig(s.config)
	cfg.BearerToken = token
	return kubernetes.NewForConfigOrDie(cfg)
}

func requestToken(c kubernetes.Interface, ns, sa string, spec authenticationv1.TokenRequestSpec) (*authenticationv1.TokenRequest, error) {
	return c.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), sa, &authenticationv1.TokenRequest{Spec: spec}, metav1.CreateOptions{})
}

func review(t *testing.T, c kubernetes.Interface, token string, audiences ...string) authenticationv1.TokenReviewStatus {
	t.Helper()
	r, err := c.AuthenticationV1().TokenReviews().Create(context.Background(), &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: audiences},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenReview: %v", err)
	}
	return r.Status
}

// claimsOf decodes a token's payload without verifying it.
func claimsOf(t *testing.T, token string) map[string]any { return jwtPart(t, token, 1) }

// tokenHeader decodes a token's header.
func tokenHeader(t *testing.T, token string) map[string]any { return jwtPart(t, token, 0) }

func jwtPart(t *testing.T, token string, i int) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a compact JWS: %q", token)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTokenRequestReviewAndRBAC(t *testing.T) {
	s := startTestServer(t, t.TempDir(), nil)
	ctx := context.Background()
	sa := ensureServiceAccount(t, s.client, "default", "bot")

	tr, err := requestToken(s.client, "default", "bot", authenticationv1.TokenRequestSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if left := time.Until(tr.Status.ExpirationTimestamp.Time); left < 59*time.Minute || left > time.Hour {
		t.Errorf("default token expires in %v, want an hour", left)
	}
	c := claimsOf(t, tr.Status.Token)
	if c["iss"] != s.URL || c["sub"] != "system:serviceaccount:default:bot" {
		t.Errorf("claims = %v", c)
	}

	st := review(t, s.client, tr.Status.Token)
	if !st.Authenticated || st.User.Username != "system:serviceaccount:default:bot" || st.User.UID != string(sa.UID) || st.Error != "" {
		t.Fatalf("review = %+v", st)
	}
	if len(st.Audiences) != 1 || st.Audiences[0] != s.URL {
		t.Errorf("review audiences = %v, want the API's", st.Audiences)
	}
	if st := review(t, s.client, tr.Status.Token, "vault"); st.Authenticated || !strings.Contains(st.Error, "audiences") {
		t.Errorf("review for another audience = %+v", st)
	}

	bot := tokenClient(t, s, tr.Status.Token)
	if _, err := bot.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("listing pods without a binding: %v, want 403", err)
	}
	mustCreate(t, s.client.RbacV1().RoleBindings("default").Create, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "bot-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "bot"}},
	})
	eventually(t, "the service account lists pods once bound to view", func() error {
		_, err := bot.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		return err
	})

	// Another audience's token is not good for the API.
	vault, err := requestToken(s.client, "default", "bot", authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tokenClient(t, s, vault.Status.Token).CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Errorf("a vault token against the API: %v, want 401", err)
	}
	if st := review(t, s.client, vault.Status.Token, "vault"); !st.Authenticated || st.Audiences[0] != "vault" {
		t.Errorf("review for vault = %+v", st)
	}
}

func TestTokenRequestBadInput(t *testing.T) {
	s := startTestServer(t, t.TempDir(), nil)
	ensureServiceAccount(t, s.client, "default", "bot")
	pod, err := s.client.CoreV1().Pods("default").Create(context.Background(), newPod("p", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "bot" }), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	podRef := func(name string, uid types.UID) *authenticationv1.BoundObjectReference {
		return &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: name, UID: uid}
	}
	cases := []struct {
		name  string
		sa    string
		spec  authenticationv1.TokenRequestSpec
		check func(error) bool
		want  string
	}{
		{"too short", "bot", authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr[int64](10)}, apierrors.IsInvalid, "spec.expirationSeconds"},
		{"too long", "bot", authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr[int64](1 << 33)}, apierrors.IsInvalid, "spec.expirationSeconds"},
		{"empty audience", "bot", authenticationv1.TokenRequestSpec{Audiences: []string{""}}, apierrors.IsInvalid, "spec.audiences[0]"},
		{"unbindable kind", "bot", authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "x"}}, apierrors.IsInvalid, "spec.boundObjectRef.kind"},
		{"missing service account", "nobody", authenticationv1.TokenRequestSpec{}, apierrors.IsNotFound, `"nobody" not found`},
		{"missing pod", "bot", authenticationv1.TokenRequestSpec{BoundObjectRef: podRef("gone", "")}, apierrors.IsNotFound, `"gone" not found`},
		{"pod of another uid", "bot", authenticationv1.TokenRequestSpec{BoundObjectRef: podRef("p", "other-uid")}, apierrors.IsConflict, "does not match the UID in record"},
		{"pod of another service account", "default", authenticationv1.TokenRequestSpec{BoundObjectRef: podRef("p", "")}, apierrors.IsBadRequest, `runs as service account "bot"`},
	}
	ensureServiceAccount(t, s.client, "default", "default")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := requestToken(s.client, "default", tc.sa, tc.spec)
			if err == nil || !tc.check(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one naming %q", err, tc.want)
			}
		})
	}
	tr, err := requestToken(s.client, "default", "bot", authenticationv1.TokenRequestSpec{BoundObjectRef: podRef("p", "")})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Spec.BoundObjectRef.UID != pod.UID {
		t.Errorf("bound UID = %q, want the pod's %q filled in", tr.Spec.BoundObjectRef.UID, pod.UID)
	}
}

func TestBadTokensAreRefusedCleanly(t *testing.T) {
	s := startTestServer(t, t.TempDir(), nil)
	ensureServiceAccount(t, s.client, "default", "bot")
	good, err := requestToken(s.client, "default", "bot", authenticationv1.TokenRequestSpec{})
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(good.Status.Token, ".")
	noneHeader := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
	claims := claimsOf(t, good.Status.Token)
	pub, err := os.ReadFile(filepath.Join(s.dataDir, "pki", "sa.pub"))
	if err != nil {
		t.Fatal(err)
	}
	otherKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		// The classic confusion: the public key, which anyone may fetch, used as an HMAC secret.
		"HS256 keyed with the public key":    sign(t, jose.HS256, pub, tokenHeader(t, good.Status.Token)["kid"].(string), claims),
		"another key's kid":                  sign(t, jose.ES256, otherKey, "other", claims),
		"another key under the server's kid": sign(t, jose.ES256, otherKey, tokenHeader(t, good.Status.Token)["kid"].(string), claims),
		"garbage":                            "not-a-token",
		"truncated":                          good.Status.Token[:len(good.Status.Token)-20],
		"unsigned":                           parts[0] + "." + parts[1] + ".",
		"alg none":                           noneHeader + "." + parts[1] + ".",
		"over-long":                          parts[0] + "." + parts[1] + strings.Repeat("A", 17*1024) + "." + parts[2],
	}
	for name, token := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := tokenClient(t, s, token).CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{})
			if !apierrors.IsUnauthorized(err) {
				t.Errorf("request: %v, want 401", err)
			}
			if st := review(t, s.client, token); st.Authenticated || st.Error == "" {
				t.Errorf("review = %+v, want not authenticated, with an error", st)
			}
		})
	}
}

func sign(t *testing.T, alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestBoundTokensDieWithTheirObject(t *testing.T) {
	s := startTestServer(t, t.TempDir(), nil)
	ctx := context.Background()
	core := s.client.CoreV1()
	ensureServiceAccount(t, s.client, "default", "bot")
	node, err := core.Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := core.Pods("default").Create(ctx, newPod("p", onNode("n1"), func(p *corev1.Pod) { p.Spec.ServiceAccountName = "bot" }), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secret, err := core.Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bound := func(kind, name string) string {
		t.Helper()
		tr, err := requestToken(s.client, "default", "bot", authenticationv1.TokenRequestSpec{
			BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: kind, Name: name},
		})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	podToken, secretToken, nodeToken := bound("Pod", "p"), bound("Secret", "s"), bound("Node", "n1")

	st := review(t, s.client, podToken)
	if !st.Authenticated {
		t.Fatalf("pod token: %+v", st)
	}
	for key, want := range map[string]string{
		"authentication.kubernetes.io/pod-name": "p", "authentication.kubernetes.io/pod-uid": string(pod.UID),
		"authentication.kubernetes.io/node-name": "n1", "authentication.kubernetes.io/node-uid": string(node.UID),
	} {
		if got := st.User.Extra[key]; len(got) != 1 || got[0] != want {
			t.Errorf("extra %s = %v, want %s", key, got, want)
		}
	}
	if jti, _ := claimsOf(t, podToken)["jti"].(string); st.User.Extra["authentication.kubernetes.io/credential-id"][0] != "JTI="+jti {
		t.Errorf("credential id = %v, want JTI=%s", st.User.Extra["authentication.kubernetes.io/credential-id"], jti)
	}

	refused := func(token, want string) {
		t.Helper()
		eventually(t, "token refused: "+want, func() error {
			if st := review(t, s.client, token); st.Authenticated || !strings.Contains(st.Error, want) {
				return fmt.Errorf("review = %+v", st)
			}
			return nil
		})
	}
	if err := core.Pods("default").Delete(ctx, "p", *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	refused(podToken, "pod default/p")
	if st := review(t, s.client, secretToken); !st.Authenticated {
		t.Errorf("secret token died with the pod: %+v", st)
	}
	if err := core.Secrets("default").Delete(ctx, secret.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	refused(secretToken, "secret default/s")
	if err := core.Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	refused(nodeToken, "node n1")

	plain, err := requestToken(s.client, "default", "bot", authenticationv1.TokenRequestSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if err := core.ServiceAccounts("default").Delete(ctx, "bot", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ensureServiceAccount(t, s.client, "default", "bot")
	refused(plain.Status.Token, "deleted and recreated")
}

func TestTokenLifetimes(t *testing.T) {
	s := startTestServer(t, t.TempDir(), func(o *Options) { o.ServiceAccounts.MaxTokenExpiration = 2 * time.Hour })
	ensureServiceAccount(t, s.client, "default", "bot")
	if _, err := s.client.CoreV1().Pods("default").Create(context.Background(), newPod("p", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "bot" }), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	podRef := &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "p"}
	cases := []struct {
		name      string
		spec      authenticationv1.TokenRequestSpec
		lifetime  time.Duration
		warnAfter time.Duration
	}{
		{"capped by the maximum", authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr[int64](10 * 3600)}, 2 * time.Hour, 0},
		{"injected pod token extended to a year, beyond the maximum", authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr[int64](3607), BoundObjectRef: podRef}, 365 * 24 * time.Hour, 3607 * time.Second},
		{"same lifetime for another audience is not extended", authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr[int64](3607), BoundObjectRef: podRef, Audiences: []string{"vault"}}, 3607 * time.Second, 0},
		{"same lifetime unbound is not extended", authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr[int64](3607)}, 3607 * time.Second, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := requestToken(s.client, "default", "bot", tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			c := claimsOf(t, tr.Status.Token)
			iat := time.Unix(int64(c["iat"].(float64)), 0)
			if got := time.Unix(int64(c["exp"].(float64)), 0).Sub(iat); got != tc.lifetime {
				t.Errorf("lifetime = %v, want %v", got, tc.lifetime)
			}
			if !tr.Status.ExpirationTimestamp.Time.Equal(iat.Add(tc.lifetime)) {
				t.Errorf("expirationTimestamp = %v, want %v", tr.Status.ExpirationTimestamp, iat.Add(tc.lifetime))
			}
			warn, _ := c["kubernetes.io"].(map[string]any)["warnafter"].(float64)
			if got := time.Duration(0); warn != 0 {
				got = time.Unix(int64(warn), 0).Sub(iat)
				if got != tc.warnAfter {
					t.Errorf("warnafter after %v, want %v", got, tc.warnAfter)
				}
			} else if tc.warnAfter != 0 {
				t.Errorf("no warnafter claim, want one after %v", tc.warnAfter)
			}
		})
	}
}

// writeRSAKey writes a 2048-bit RSA key as PEM and returns its path.
func writeRSAKey(t *testing.T, dir, name string) (string, *rsa.PrivateKey) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	data := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, key
}

// TestOIDCDiscoveryVerifiesTokens has a standard OIDC library verify idplane's tokens from the
// issuer URL alone, fetched without credentials, with an RSA signing key and an older key still
// accepted.
func TestOIDCDiscoveryVerifiesTokens(t *testing.T) {
	dir := t.TempDir()
	keyFile, _ := writeRSAKey(t, dir, "rsa.key")
	oldKeyFile, _ := writeRSAKey(t, dir, "old.key")
	authnConfig := filepath.Join(dir, "authn.yaml")
	err := os.WriteFile(authnConfig, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
anonymous:
  enabled: true
  conditions:
  - path: /livez
  - path: /readyz
  - path: /healthz
  - path: /.well-known/openid-configuration
  - path: /openid/v1/jwks
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	s := startTestServer(t, filepath.Join(dir, "data"), func(o *Options) {
		o.ServiceAccounts.SigningKeyFile = keyFile
		o.ServiceAccounts.KeyFiles = []string{oldKeyFile}
		o.AuthenticationConfigFile = authnConfig
	})
	ctx := context.Background()
	// Relying parties are anonymous: let them read discovery, as upstream's docs advise.
	mustCreate(t, s.client.RbacV1().ClusterRoleBindings().Create, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "oidc-reviewer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:service-account-issuer-discovery"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:unauthenticated"}},
	})
	ensureServiceAccount(t, s.client, "default", "bot")
	tr, err := requestToken(s.client, "default", "bot", authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}})
	if err != nil {
		t.Fatal(err)
	}
	if h := tokenHeader(t, tr.Status.Token); h["alg"] != "RS256" || h["kid"] == "" {
		t.Errorf("token header = %v, want RS256 with a kid", h)
	}

	anonymous, err := rest.HTTPClientFor(rest.AnonymousClientConfig(s.config))
	if err != nil {
		t.Fatal(err)
	}
	var provider *oidc.Provider
	eventually(t, "anonymous OIDC discovery", func() error {
		provider, err = oidc.NewProvider(oidc.ClientContext(ctx, anonymous), s.URL)
		return err
	})
	idToken, err := provider.Verifier(&oidc.Config{ClientID: "vault"}).Verify(oidc.ClientContext(ctx, anonymous), tr.Status.Token)
	if err != nil {
		t.Fatalf("go-oidc refused idplane's token: %v", err)
	}
	if idToken.Subject != "system:serviceaccount:default:bot" {
		t.Errorf("subject = %q", idToken.Subject)
	}
	if _, err := provider.Verifier(&oidc.Config{ClientID: "elsewhere"}).Verify(oidc.ClientContext(ctx, anonymous), tr.Status.Token); err == nil {
		t.Error("go-oidc accepted the token for another audience")
	}

	var jwks struct {
		Keys []struct{ Kid, Alg string }
	}
	resp, err := anonymous.Get(s.URL + "/openid/v1/jwks")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&jwks); err != nil {
		t.Fatal(err)
	}
	if len(jwks.Keys) != 2 {
		t.Errorf("JWKS has %d keys, want the signing key and the older one", len(jwks.Keys))
	}

	// Anonymous reaches only the listed paths.
	for path, want := range map[string]int{"/livez": http.StatusOK, "/api/v1/namespaces": http.StatusUnauthorized, "/version": http.StatusUnauthorized} {
		resp, err := anonymous.Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("anonymous GET %s = %d, want %d", path, resp.StatusCode, want)
		}
	}
}

func TestNodeTokenAudiences(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	ensureServiceAccount(t, s.client, "default", "bot")
	pod, err := s.client.CoreV1().Pods("default").Create(ctx, newPod("p", onNode("n1"), func(p *corev1.Pod) {
		p.Spec.ServiceAccountName = "bot"
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "vault", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", Audience: "vault"}}},
		}}})
	}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n1 := nodeClient(t, s, "n1")
	spec := func(audience string) authenticationv1.TokenRequestSpec {
		return authenticationv1.TokenRequestSpec{Audiences: []string{audience}, BoundObjectRef: &authenticationv1.BoundObjectReference{
			APIVersion: "v1", Kind: "Pod", Name: "p", UID: pod.UID,
		}}
	}
	eventually(t, "the node gets the token its pod's volume names", func() error {
		_, err := requestToken(n1, "default", "bot", spec("vault"))
		return err
	})
	_, err = requestToken(n1, "default", "bot", spec("elsewhere"))
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `audience "elsewhere"`) || !strings.Contains(err.Error(), "default/p") {
		t.Errorf("token for an audience the pod never names: %v, want 403 naming the audience and the pod", err)
	}
	if _, err := requestToken(nodeClient(t, s, "n2"), "default", "bot", spec("vault")); !apierrors.IsForbidden(err) {
		t.Errorf("another node asking for the pod's token: %v, want 403", err)
	}

	// The volume ServiceAccount admission injected asks for a token for the API and for the CA
	// bundle of kube-root-ca.crt: the node may fetch both, another node neither.
	if _, err := requestToken(n1, "default", "bot", spec(s.URL)); err != nil {
		t.Errorf("token for the injected volume's audience (the API's): %v", err)
	}
	eventually(t, "the node reads kube-root-ca.crt for its pod's volume", func() error {
		_, err := n1.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err
	})
	if _, err := nodeClient(t, s, "n2").CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("a node without pods in default read kube-root-ca.crt: %v, want 403", err)
	}
}

func TestLegacyTokenSecrets(t *testing.T) {
	s := startTestServer(t, t.TempDir(), nil)
	ctx := context.Background()
	secrets := s.client.CoreV1().Secrets("default")
	sa := ensureServiceAccount(t, s.client, "default", "legacy")
	mustCreate(t, secrets.Create, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "legacy-token", Annotations: map[string]string{corev1.ServiceAccountNameKey: "legacy"}},
		Type:       corev1.SecretTypeServiceAccountToken,
	})
	var token string
	eventually(t, "the tokens controller fills the secret", func() error {
		secret, err := secrets.Get(ctx, "legacy-token", metav1.GetOptions{})
		if err != nil {
			return err
		}
		token = string(secret.Data[corev1.ServiceAccountTokenKey])
		if token == "" || len(secret.Data[corev1.ServiceAccountRootCAKey]) == 0 || string(secret.Data[corev1.ServiceAccountNamespaceKey]) != "default" {
			return fmt.Errorf("secret data has keys %v", secret.Data)
		}
		if secret.Annotations[corev1.ServiceAccountUIDKey] != string(sa.UID) {
			return fmt.Errorf("uid annotation %q", secret.Annotations[corev1.ServiceAccountUIDKey])
		}
		return nil
	})
	if iss := claimsOf(t, token)["iss"]; iss != "kubernetes/serviceaccount" {
		t.Errorf("legacy token issuer = %v", iss)
	}
	who, err := tokenClient(t, s, token).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("legacy token refused while its secret exists: %v", err)
	}
	if who.Status.UserInfo.Username != "system:serviceaccount:default:legacy" {
		t.Errorf("whoami = %+v", who.Status.UserInfo)
	}
	if err := secrets.Delete(ctx, "legacy-token", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the legacy token dies with its secret", func() error {
		if st := review(t, s.client, token); st.Authenticated || !strings.Contains(st.Error, "secret default/legacy-token") {
			return fmt.Errorf("review = %+v", st)
		}
		return nil
	})

	// A secret of an account that is deleted goes with it.
	mustCreate(t, secrets.Create, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "legacy-token-2", Annotations: map[string]string{corev1.ServiceAccountNameKey: "legacy"}},
		Type:       corev1.SecretTypeServiceAccountToken,
	})
	eventually(t, "the second secret is filled", func() error {
		secret, err := secrets.Get(ctx, "legacy-token-2", metav1.GetOptions{})
		if err == nil && len(secret.Data[corev1.ServiceAccountTokenKey]) == 0 {
			return fmt.Errorf("not filled yet")
		}
		return err
	})
	if err := s.client.CoreV1().ServiceAccounts("default").Delete(ctx, "legacy", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the secret of the deleted account is deleted", func() error {
		if _, err := secrets.Get(ctx, "legacy-token-2", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("secret still there: %v", err)
		}
		return nil
	})
}
