package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/idplane/idplane/internal/serviceaccount/externalsigner/signertest"
)

// serveTestSigner serves a test external signer on a short socket path.
func serveTestSigner(t *testing.T) (*signertest.Signer, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "sig")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	signer, err := signertest.New()
	if err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "signer.sock")
	if err := signer.Serve(socket); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(signer.Stop)
	return signer, socket
}

// publishedKeys fetches the server's JWKS.
func publishedKeys(t *testing.T, ts *testServer) jose.JSONWebKeySet {
	t.Helper()
	raw, err := ts.client.CoreV1().RESTClient().Get().AbsPath("/openid/v1/jwks").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("GET /openid/v1/jwks: %v", err)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(raw, &set); err != nil {
		t.Fatal(err)
	}
	return set
}

// verifyWithPublished checks that the token verifies with the key of the published set it names.
func verifyWithPublished(t *testing.T, set jose.JSONWebKeySet, token string) string {
	t.Helper()
	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	kid := jws.Signatures[0].Header.KeyID
	keys := set.Key(kid)
	if len(keys) != 1 {
		t.Fatalf("the published key set has %d keys named %q", len(keys), kid)
	}
	if _, err := jws.Verify(keys[0].Key); err != nil {
		t.Fatalf("token does not verify with the published key %q: %v", kid, err)
	}
	return kid
}

// TestExternalSigner issues tokens through an external signer: signed by its key, verified with
// the keys it publishes (one excluded from discovery still verifies but is not published),
// lifetimes capped by its maximum, and when it goes away TokenRequest fails with a 500 while
// the tokens already issued keep authenticating.
func TestExternalSigner(t *testing.T) {
	signer, socket := serveTestSigner(t)
	signer.Lock()
	signer.MaxTokenExpirationSeconds = 2 * 3600
	signer.Unlock()
	dir := t.TempDir()
	ts := startTestServer(t, dir, func(o *Options) { o.ServiceAccounts.SigningEndpoint = socket })
	if _, err := os.Stat(filepath.Join(dir, "pki", "sa.key")); !os.IsNotExist(err) {
		t.Errorf("a local signing key was made beside the external signer: %v", err)
	}
	ensureServiceAccount(t, ts.client, "default", "bot")

	tr, err := requestToken(ts.client, "default", "bot", authenticationv1.TokenRequestSpec{})
	if err != nil {
		t.Fatal(err)
	}
	first := signer.CurrentKeyID()
	if kid := verifyWithPublished(t, publishedKeys(t, ts), tr.Status.Token); kid != first {
		t.Fatalf("token signed by %q, want the signer's key %q", kid, first)
	}
	if got := review(t, ts.client, tr.Status.Token); !got.Authenticated || got.User.Username != "system:serviceaccount:default:bot" {
		t.Fatalf("review of the signer's token: %+v", got)
	}

	// The maximum defaults to the signer's: longer requests are shortened to 2 hours.
	long, err := requestToken(ts.client, "default", "bot", authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr[int64](5 * 3600)})
	if err != nil {
		t.Fatal(err)
	}
	c := claimsOf(t, long.Status.Token)
	if lifetime := c["exp"].(float64) - c["iat"].(float64); lifetime != 2*3600 {
		t.Fatalf("a 5-hour request got a token for %vs, want the signer's maximum 7200s", lifetime)
	}

	// Rotation: the old key is kept for verification only. New tokens use the new key, fetched
	// when the signer first names it; the published set drops the excluded key; the old token
	// still authenticates.
	second, err := signer.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	signer.Exclude(first)
	tr2, err := requestToken(ts.client, "default", "bot", authenticationv1.TokenRequestSpec{})
	if err != nil {
		t.Fatalf("token after rotation: %v", err)
	}
	set := publishedKeys(t, ts)
	if kid := verifyWithPublished(t, set, tr2.Status.Token); kid != second {
		t.Fatalf("token after rotation signed by %q, want %q", kid, second)
	}
	if len(set.Key(first)) != 0 {
		t.Fatal("a key excluded from discovery is published")
	}
	if got := review(t, ts.client, tr.Status.Token); !got.Authenticated {
		t.Fatalf("a token of the key kept for verification no longer authenticates: %+v", got)
	}

	// Legacy token secrets are signed by the signer too.
	mustCreate(t, ts.client.CoreV1().Secrets("default").Create, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bot-legacy", Annotations: map[string]string{corev1.ServiceAccountNameKey: "bot"}},
		Type:       corev1.SecretTypeServiceAccountToken,
	})
	var legacy string
	eventually(t, "the tokens controller fills the secret", func() error {
		secret, err := ts.client.CoreV1().Secrets("default").Get(context.Background(), "bot-legacy", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if legacy = string(secret.Data[corev1.ServiceAccountTokenKey]); legacy == "" {
			return errors.New("not filled yet")
		}
		return nil
	})
	if kid := verifyWithPublished(t, publishedKeys(t, ts), legacy); kid != second {
		t.Fatalf("legacy token signed by %q, want %q", kid, second)
	}
	if got := review(t, ts.client, legacy); !got.Authenticated || got.User.Username != "system:serviceaccount:default:bot" {
		t.Fatalf("review of the signer's legacy token: %+v", got)
	}

	// The signer goes away: TokenRequest answers 500 within the signer call's timeout, and the
	// tokens already issued keep authenticating with the keys already fetched.
	signer.Stop()
	start := time.Now()
	_, err = requestToken(ts.client, "default", "bot", authenticationv1.TokenRequestSpec{})
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "external signer") {
		t.Fatalf("TokenRequest with the signer down: %v; want a 500 naming the external signer", err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("TokenRequest with the signer down took %v", took)
	}
	bot := tokenClient(t, ts, tr2.Status.Token)
	review, err := bot.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || review.Status.UserInfo.Username != "system:serviceaccount:default:bot" {
		t.Fatalf("an issued token with the signer down: %v, %+v", err, review)
	}
}

func TestExternalSignerRefusedAtStart(t *testing.T) {
	signer, socket := serveTestSigner(t)
	signer.Lock()
	signer.MaxTokenExpirationSeconds = 2 * 3600
	signer.Unlock()
	keyFile := writeFile(t, t.TempDir(), "sa.pub", "unused")
	for _, tc := range []struct {
		name      string
		configure func(*Options)
		want      string
	}{
		{"maximum beyond the signer's", func(o *Options) { o.ServiceAccounts.MaxTokenExpiration = 3 * time.Hour },
			"--service-account-max-token-expiration cannot be set longer than the token expiration supported by --service-account-signing-endpoint: 3h0m0s > 2h0m0s"},
		{"with a signing key", func(o *Options) { o.ServiceAccounts.SigningKeyFile = keyFile },
			"--service-account-signing-endpoint and --service-account-signing-key-file are mutually exclusive"},
		{"with verification keys", func(o *Options) { o.ServiceAccounts.KeyFiles = []string{keyFile} },
			"--service-account-signing-endpoint and --service-account-key-file are mutually exclusive"},
		{"no signer", func(o *Options) { o.ServiceAccounts.SigningEndpoint = filepath.Join(t.TempDir(), "absent.sock") },
			"--service-account-signing-endpoint: external signer socket: stat"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			o.DataDir, o.SecurePort, o.ServiceAccounts.SigningEndpoint = t.TempDir(), 0, socket
			tc.configure(o)
			expectStartRefused(t, o, tc.want)
		})
	}
}
