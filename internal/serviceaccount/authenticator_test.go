package serviceaccount

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	apiserviceaccount "k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	clocktesting "k8s.io/utils/clock/testing"
)

const testIssuer = "https://idplane.test"

var testNow = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// objects is a Getter over fixed objects, keyed "kind/namespace/name".
type objects map[string]metav1.Object

func (o objects) get(kind, namespace, name string) (metav1.Object, error) {
	if obj, ok := o[kind+"/"+namespace+"/"+name]; ok {
		return obj, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: kind}, name)
}

func getAs[T any](o objects, kind, namespace, name string) (T, error) {
	obj, err := o.get(kind, namespace, name)
	if err != nil {
		var zero T
		return zero, err
	}
	return obj.(T), nil
}

func (o objects) ServiceAccount(_ context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	return getAs[*corev1.ServiceAccount](o, "serviceaccounts", ns, name)
}
func (o objects) Pod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	return getAs[*corev1.Pod](o, "pods", ns, name)
}
func (o objects) Secret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	return getAs[*corev1.Secret](o, "secrets", ns, name)
}
func (o objects) Node(_ context.Context, name string) (*corev1.Node, error) {
	return getAs[*corev1.Node](o, "nodes", "", name)
}

func meta(ns, name, uid string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}
}

var (
	testSA     = &corev1.ServiceAccount{ObjectMeta: meta("ns", "sa", "sa-uid")}
	testPod    = &corev1.Pod{ObjectMeta: meta("ns", "pod", "pod-uid"), Spec: corev1.PodSpec{NodeName: "node"}}
	testSecret = &corev1.Secret{ObjectMeta: meta("ns", "secret", "secret-uid")}
	testNode   = &corev1.Node{ObjectMeta: meta("", "node", "node-uid")}
)

func liveObjects() objects {
	return objects{
		"serviceaccounts/ns/sa": testSA,
		"pods/ns/pod":           testPod,
		"secrets/ns/secret":     testSecret,
		"nodes//node":           testNode,
	}
}

func ecKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

type fixture struct {
	keys   *Keys
	issuer *Issuer
	clock  *clocktesting.FakeClock
}

func newFixture(t testing.TB, signing crypto.Signer, extra ...crypto.PublicKey) fixture {
	keys, err := NewKeys(signing, extra...)
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(testNow)
	signer, err := keys.Signer()
	if err != nil {
		t.Fatal(err)
	}
	return fixture{keys: keys, issuer: NewIssuer(testIssuer, signer, clk), clock: clk}
}

func (f fixture) authenticator(o objects) *Authenticator {
	return NewAuthenticator(AuthenticatorConfig{
		Issuers: []string{"https://old.test", testIssuer}, Keys: f.keys,
		APIAudiences: authenticator.Audiences{testIssuer}, Getter: o, Clock: f.clock,
	})
}

func (f fixture) issue(t testing.TB, b Binding, audiences ...string) Token {
	if len(audiences) == 0 {
		audiences = []string{testIssuer}
	}
	tok, err := f.issuer.Issue(context.Background(), TokenRequest{Binding: b, Audiences: audiences, Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// decodeClaims returns the token's payload as generic JSON.
func decodeClaims(t *testing.T, raw string) map[string]any {
	t.Helper()
	payload, err := base64.RawURLEncoding.DecodeString(strings.Split(raw, ".")[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(payload, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestIssuedClaims(t *testing.T) {
	f := newFixture(t, ecKey(t))
	cases := []struct {
		name      string
		binding   Binding
		warnAfter time.Duration
		want      map[string]any
	}{
		{"unbound", Binding{ServiceAccount: testSA}, 0, map[string]any{
			"namespace": "ns", "serviceaccount": map[string]any{"name": "sa", "uid": "sa-uid"},
		}},
		{"pod with its node", Binding{ServiceAccount: testSA, Pod: testPod, Node: testNode}, 0, map[string]any{
			"namespace": "ns", "serviceaccount": map[string]any{"name": "sa", "uid": "sa-uid"},
			"pod": map[string]any{"name": "pod", "uid": "pod-uid"}, "node": map[string]any{"name": "node", "uid": "node-uid"},
		}},
		{"secret", Binding{ServiceAccount: testSA, Secret: testSecret}, 0, map[string]any{
			"namespace": "ns", "serviceaccount": map[string]any{"name": "sa", "uid": "sa-uid"},
			"secret": map[string]any{"name": "secret", "uid": "secret-uid"},
		}},
		{"node", Binding{ServiceAccount: testSA, Node: testNode}, 0, map[string]any{
			"namespace": "ns", "serviceaccount": map[string]any{"name": "sa", "uid": "sa-uid"},
			"node": map[string]any{"name": "node", "uid": "node-uid"},
		}},
		{"warnafter", Binding{ServiceAccount: testSA}, 3607 * time.Second, map[string]any{
			"namespace": "ns", "serviceaccount": map[string]any{"name": "sa", "uid": "sa-uid"},
			"warnafter": float64(testNow.Add(3607 * time.Second).Unix()),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := f.issuer.Issue(context.Background(), TokenRequest{Binding: tc.binding, Audiences: []string{"a", "b"}, Lifetime: time.Hour, WarnAfter: tc.warnAfter})
			if err != nil {
				t.Fatal(err)
			}
			c := decodeClaims(t, tok.Raw)
			now := float64(testNow.Unix())
			for claim, want := range map[string]any{
				"iss": testIssuer, "sub": "system:serviceaccount:ns:sa", "aud": []any{"a", "b"},
				"iat": now, "nbf": now, "exp": now + 3600, "jti": tok.ID,
			} {
				if got, _ := json.Marshal(c[claim]); string(got) != mustJSON(t, want) {
					t.Errorf("%s = %s, want %s", claim, got, mustJSON(t, want))
				}
			}
			if got := mustJSON(t, c["kubernetes.io"]); got != mustJSON(t, tc.want) {
				t.Errorf("kubernetes.io = %s, want %s", got, mustJSON(t, tc.want))
			}
			if !tok.Expires.Equal(testNow.Add(time.Hour)) {
				t.Errorf("Expires = %v", tok.Expires)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAuthenticateBound(t *testing.T) {
	f := newFixture(t, ecKey(t))
	podToken := f.issue(t, Binding{ServiceAccount: testSA, Pod: testPod, Node: testNode})
	resp, ok, err := f.authenticator(liveObjects()).AuthenticateToken(context.Background(), podToken.Raw)
	if err != nil || !ok {
		t.Fatalf("AuthenticateToken = %v, %v", ok, err)
	}
	want := &user.DefaultInfo{
		Name: "system:serviceaccount:ns:sa", UID: "sa-uid",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns"},
		Extra: map[string][]string{
			apiserviceaccount.PodNameKey: {"pod"}, apiserviceaccount.PodUIDKey: {"pod-uid"},
			apiserviceaccount.NodeNameKey: {"node"}, apiserviceaccount.NodeUIDKey: {"node-uid"},
			user.CredentialIDKey: {"JTI=" + podToken.ID},
		},
	}
	if mustJSON(t, resp.User) != mustJSON(t, want) {
		t.Errorf("user = %s, want %s", mustJSON(t, resp.User), mustJSON(t, want))
	}
	if !resp.Audiences.Has(testIssuer) || len(resp.Audiences) != 1 {
		t.Errorf("audiences = %v", resp.Audiences)
	}
}

// TestAuthenticateRejects lists every reason a bound token of an accepted issuer is refused.
func TestAuthenticateRejects(t *testing.T) {
	f := newFixture(t, ecKey(t))
	other := newFixture(t, ecKey(t))
	withPod := Binding{ServiceAccount: testSA, Pod: testPod, Node: testNode}
	without := func(key string) objects { o := liveObjects(); delete(o, key); return o }
	replaced := func(key string, obj metav1.Object) objects { o := liveObjects(); o[key] = obj; return o }
	deleting := func(key string) objects {
		o := liveObjects()
		now := metav1.NewTime(testNow)
		switch obj := o[key].(type) {
		case *corev1.Pod:
			c := obj.DeepCopy()
			c.DeletionTimestamp = &now
			o[key] = c
		case *corev1.Secret:
			c := obj.DeepCopy()
			c.DeletionTimestamp = &now
			o[key] = c
		case *corev1.Node:
			c := obj.DeepCopy()
			c.DeletionTimestamp = &now
			o[key] = c
		}
		return o
	}
	cases := []struct {
		name    string
		token   func() string
		objects objects
		ctx     context.Context
		wantErr string
	}{
		{"bad signature", func() string { return forgeSignature(t, f.issue(t, withPod).Raw, other) }, nil, nil, "signature is invalid"},
		{"signed by an unknown key without a kid", func() string {
			return signRaw(t, other.keys.Signing, "", jose.ES256, bound(testIssuer, []string{testIssuer}, testNow))
		}, nil, nil, "signature is invalid"},
		{"unknown kid", func() string { return other.issue(t, withPod).Raw }, nil, nil, "not an accepted key"},
		{"unknown issuer", func() string { return "" }, nil, nil, ""},
		{"wrong audience", func() string { return f.issue(t, withPod, "vault").Raw }, nil, nil, "match none of the accepted audiences"},
		{"wrong audience for the review", func() string { return f.issue(t, withPod).Raw }, nil,
			authenticator.WithAudiences(context.Background(), authenticator.Audiences{"vault"}), "match none"},
		{"expired", func() string {
			tok := f.issue(t, withPod)
			f.clock.SetTime(testNow.Add(time.Hour + 2*clockSkew))
			return tok.Raw
		}, nil, nil, "has expired"},
		{"not yet valid", func() string {
			f.clock.SetTime(testNow.Add(time.Hour))
			tok := f.issue(t, withPod)
			f.clock.SetTime(testNow)
			return tok.Raw
		}, nil, nil, "not valid yet"},
		{"no expiry", func() string {
			c := bound(testIssuer, []string{testIssuer}, testNow)
			delete(c, "exp")
			return signRaw(t, f.keys.Signing, f.keys.signingKey().ID, jose.ES256, c)
		}, nil, nil, "no expiry"},
		{"subject of another account", func() string {
			c := bound(testIssuer, []string{testIssuer}, testNow)
			c["sub"] = "system:serviceaccount:ns:admin"
			return signRaw(t, f.keys.Signing, f.keys.signingKey().ID, jose.ES256, c)
		}, nil, nil, "does not match its service account"},
		{"no kubernetes.io claim", func() string {
			c := bound(testIssuer, []string{testIssuer}, testNow)
			delete(c, "kubernetes.io")
			return signRaw(t, f.keys.Signing, f.keys.signingKey().ID, jose.ES256, c)
		}, nil, nil, "no kubernetes.io claim"},
		{"service account deleted", func() string { return f.issue(t, withPod).Raw }, without("serviceaccounts/ns/sa"), nil, "service account ns/sa referenced by the token has been deleted"},
		{"service account recreated", func() string { return f.issue(t, withPod).Raw },
			replaced("serviceaccounts/ns/sa", &corev1.ServiceAccount{ObjectMeta: meta("ns", "sa", "new-uid")}), nil, "deleted and recreated"},
		{"bound pod deleted", func() string { return f.issue(t, withPod).Raw }, without("pods/ns/pod"), nil, "pod ns/pod referenced by the token has been deleted"},
		{"bound pod recreated", func() string { return f.issue(t, withPod).Raw },
			replaced("pods/ns/pod", &corev1.Pod{ObjectMeta: meta("ns", "pod", "new-uid")}), nil, "deleted and recreated"},
		{"bound pod being deleted", func() string { return f.issue(t, withPod).Raw }, deleting("pods/ns/pod"), nil, "is being deleted"},
		{"bound secret deleted", func() string { return f.issue(t, Binding{ServiceAccount: testSA, Secret: testSecret}).Raw }, without("secrets/ns/secret"), nil, "secret ns/secret referenced by the token has been deleted"},
		{"bound secret being deleted", func() string { return f.issue(t, Binding{ServiceAccount: testSA, Secret: testSecret}).Raw }, deleting("secrets/ns/secret"), nil, "is being deleted"},
		{"bound node deleted", func() string { return f.issue(t, Binding{ServiceAccount: testSA, Node: testNode}).Raw }, without("nodes//node"), nil, "node node referenced by the token has been deleted"},
		{"bound node recreated", func() string { return f.issue(t, Binding{ServiceAccount: testSA, Node: testNode}).Raw },
			replaced("nodes//node", &corev1.Node{ObjectMeta: meta("", "node", "new-uid")}), nil, "deleted and recreated"},
		{"alg none", func() string {
			return unsigned(t, "none", bound(testIssuer, []string{testIssuer}, testNow))
		}, nil, nil, "malformed service account token"},
		{"HS256 keyed with the public key", func() string {
			secret, err := f.keys.signingKey().Key.(*ecdsa.PublicKey).Bytes()
			if err != nil {
				t.Fatal(err)
			}
			return signRaw(t, secret, f.keys.signingKey().ID, jose.HS256, bound(testIssuer, []string{testIssuer}, testNow))
		}, nil, nil, "malformed service account token"},
		{"unsigned", func() string {
			tok := f.issue(t, withPod).Raw
			return tok[:strings.LastIndex(tok, ".")+1]
		}, nil, nil, "signature is invalid"},
		{"over-long", func() string {
			c := bound(testIssuer, []string{testIssuer}, testNow)
			c["pad"] = strings.Repeat("x", MaxTokenLength)
			return signRaw(t, f.keys.Signing, f.keys.signingKey().ID, jose.ES256, c)
		}, nil, nil, "more than 16384"},
		// The claims are decoded once, as go-jose's jwt package decodes them.
		{"claims of the wrong type", func() string {
			c := bound(testIssuer, []string{testIssuer}, testNow)
			c["exp"] = "tomorrow"
			return signRaw(t, f.keys.Signing, f.keys.signingKey().ID, jose.ES256, c)
		}, nil, nil, "claims do not decode"},
		{"another issuer's claims of other types", func() string {
			c := bound("https://idp.example", []string{testIssuer}, testNow)
			c["exp"], c["kubernetes.io"] = "tomorrow", "x"
			return signRaw(t, f.keys.Signing, f.keys.signingKey().ID, jose.ES256, c)
		}, nil, nil, ""},
		{"another issuer's token in an algorithm not ours", func() string {
			return signRaw(t, []byte("0123456789abcdef0123456789abcdef"), "", jose.HS256, bound("https://idp.example", []string{testIssuer}, testNow))
		}, nil, nil, ""},
		{"issuer claim in other letter case", func() string {
			c := bound(testIssuer, []string{testIssuer}, testNow)
			delete(c, "iss")
			c["ISS"] = testIssuer
			return signRaw(t, f.keys.Signing, f.keys.signingKey().ID, jose.ES256, c)
		}, nil, nil, ""},
		// An identity provider's long token is the JWT issuers' to judge, after this authenticator.
		{"over-long, another issuer's", func() string {
			c := bound("https://idp.example", []string{testIssuer}, testNow)
			c["groups"] = strings.Repeat("g", MaxTokenLength)
			return signRaw(t, f.keys.Signing, f.keys.signingKey().ID, jose.ES256, c)
		}, nil, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.clock.SetTime(testNow)
			raw := tc.token()
			if tc.name == "unknown issuer" {
				raw = signRaw(t, f.keys.Signing, f.keys.signingKey().ID, jose.ES256, bound("https://elsewhere", []string{testIssuer}, testNow))
			}
			o := tc.objects
			if o == nil {
				o = liveObjects()
			}
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			resp, ok, err := f.authenticator(o).AuthenticateToken(ctx, raw)
			if ok || resp != nil {
				t.Fatalf("authenticated as %v", resp.User)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("err = %v, want none: the token is not the authenticator's business", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// bound returns the claims of a pod-bound token of testSA as generic JSON.
func bound(iss string, aud []string, now time.Time) map[string]any {
	return map[string]any{
		"iss": iss, "sub": "system:serviceaccount:ns:sa", "aud": aud,
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(), "jti": "id",
		"kubernetes.io": map[string]any{
			"namespace":      "ns",
			"serviceaccount": map[string]any{"name": "sa", "uid": "sa-uid"},
			"pod":            map[string]any{"name": "pod", "uid": "pod-uid"},
		},
	}
}

func signRaw(t testing.TB, key any, kid string, alg jose.SignatureAlgorithm, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func unsigned(t testing.TB, alg string, claims map[string]any) string {
	t.Helper()
	header, _ := json.Marshal(map[string]string{"alg": alg, "typ": "JWT"})
	payload, _ := json.Marshal(claims)
	return base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(payload) + "."
}

// forgeSignature keeps raw's header and claims and puts another key's signature on them.
func forgeSignature(t testing.TB, raw string, other fixture) string {
	t.Helper()
	parts := strings.Split(raw, ".")
	forged := other.issue(t, Binding{ServiceAccount: testSA})
	return parts[0] + "." + parts[1] + "." + strings.Split(forged.Raw, ".")[2]
}

func TestRotation(t *testing.T) {
	oldKey := ecKey(t)
	old := newFixture(t, oldKey)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	current := newFixture(t, rsaKey, oldKey.Public())
	current.clock = old.clock
	a := current.authenticator(liveObjects())
	for name, tok := range map[string]string{
		"signed by the old key": old.issue(t, Binding{ServiceAccount: testSA}).Raw,
		"signed by the new key": current.issue(t, Binding{ServiceAccount: testSA}).Raw,
	} {
		if _, ok, err := a.AuthenticateToken(context.Background(), tok); !ok || err != nil {
			t.Errorf("%s: %v, %v", name, ok, err)
		}
	}
	if alg := current.keys.signingKey().Algorithm; alg != jose.RS256 {
		t.Errorf("RSA key signs with %s", alg)
	}
}

func TestLegacyTokens(t *testing.T) {
	f := newFixture(t, ecKey(t))
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa-token", UID: "tok-uid", Annotations: map[string]string{
			corev1.ServiceAccountNameKey: "sa", corev1.ServiceAccountUIDKey: "sa-uid",
		}},
		Type: corev1.SecretTypeServiceAccountToken,
	}
	raw, err := f.issuer.IssueLegacy(context.Background(), testSA, secret)
	if err != nil {
		t.Fatal(err)
	}
	withSecret := func(mutate func(*corev1.Secret)) objects {
		o := liveObjects()
		s := secret.DeepCopy()
		s.Data = map[string][]byte{corev1.ServiceAccountTokenKey: []byte(raw)}
		if mutate != nil {
			mutate(s)
		}
		o["secrets/ns/sa-token"] = s
		return o
	}
	cases := []struct {
		name    string
		objects objects
		ctx     context.Context
		wantErr string
	}{
		{"held by its secret", withSecret(nil), context.Background(), ""},
		{"secret deleted", liveObjects(), context.Background(), "secret ns/sa-token referenced by the token has been deleted"},
		{"secret holds another token", withSecret(func(s *corev1.Secret) { s.Data["token"] = []byte("other") }), context.Background(), "no longer matches"},
		{"secret of another account", withSecret(func(s *corev1.Secret) { s.Annotations[corev1.ServiceAccountNameKey] = "other" }), context.Background(), "does not hold a token"},
		{"service account recreated", func() objects {
			o := withSecret(nil)
			o["serviceaccounts/ns/sa"] = &corev1.ServiceAccount{ObjectMeta: meta("ns", "sa", "new-uid")}
			return o
		}(), context.Background(), "deleted and recreated"},
		{"review for another audience", withSecret(nil), authenticator.WithAudiences(context.Background(), authenticator.Audiences{"vault"}), "match none"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, ok, err := f.authenticator(tc.objects).AuthenticateToken(tc.ctx, raw)
			if tc.wantErr == "" {
				if err != nil || !ok || resp.User.GetName() != "system:serviceaccount:ns:sa" {
					t.Fatalf("AuthenticateToken = %v, %v, %v", resp, ok, err)
				}
				return
			}
			if ok || err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("AuthenticateToken = %v, %v, want error %q", ok, err, tc.wantErr)
			}
		})
	}
}

func FuzzAuthenticateToken(f *testing.F) {
	fx := newFixture(f, ecKey(f))
	a := fx.authenticator(liveObjects())
	valid := fx.issue(f, Binding{ServiceAccount: testSA, Pod: testPod})
	f.Add(valid.Raw)
	f.Add(valid.Raw[:len(valid.Raw)/2])
	f.Add(unsigned(f, "none", bound(testIssuer, []string{testIssuer}, testNow)))
	f.Add("a.b.c")
	f.Add("")
	f.Fuzz(func(t *testing.T, raw string) {
		resp, ok, err := a.AuthenticateToken(context.Background(), raw)
		if ok && (err != nil || resp == nil) {
			t.Fatalf("authenticated with an error: %v", err)
		}
		if ok && !samePayload(raw, valid.Raw) {
			// Only the issued claims carry a valid signature: accepting other claims is a forgery.
			t.Fatalf("accepted claims that were never issued: %q", raw)
		}
	})
}

// samePayload compares the decoded claims of two compact tokens: base64 lets several encodings
// stand for the same bytes.
func samePayload(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	if len(pa) != 3 || len(pb) != 3 {
		return false
	}
	da, errA := base64.RawURLEncoding.DecodeString(pa[1])
	db, errB := base64.RawURLEncoding.DecodeString(pb[1])
	return errA == nil && errB == nil && string(da) == string(db)
}
