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
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/idplane/idplane/internal/serviceaccount"
)

// BenchmarkTokenReviewFresh reviews tokens the server has never seen, each once, as
// bench/tokenload's TokenReview phase does: the verified-token cache never answers, so every
// review pays the signature check. The tokens are signed in the benchmark with the server's own
// key (not through TokenRequest, whose RSA signature would dwarf the review), in batches kept out
// of the figures. One client over HTTPS with the admin certificate; run with -cpu 1 and read
// cpu-µs/op, which counts the server and the client together.
func BenchmarkTokenReviewFresh(b *testing.B) {
	for _, tc := range []struct {
		name string
		key  func() (any, error)
	}{
		{"ES256", func() (any, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }},
		{"RS256-2048", func() (any, error) { return rsa.GenerateKey(rand.Reader, 2048) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			key, err := tc.key()
			if err != nil {
				b.Fatal(err)
			}
			benchmarkTokenReviewFresh(b, writeKey(b, key))
		})
	}
}

// writeKey writes key as a PKCS#8 PEM file the server can sign with.
func writeKey(b *testing.B, key any) string {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		b.Fatal(err)
	}
	file := filepath.Join(b.TempDir(), "sa.key")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		b.Fatal(err)
	}
	return file
}

func benchmarkTokenReviewFresh(b *testing.B, keyFile string) {
	ctx := context.Background()
	client := startBenchServer(b, func(o *Options) {
		o.FlowControl.EnablePriorityAndFairness = *benchAPF
		o.ServiceAccounts.SigningKeyFile = keyFile
	}).client
	sa := ensureServiceAccount(b, client, "default", "tokenreview-bench")
	// The server's issuer and audiences, as a token it issued names them.
	tr, err := client.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	iss, aud := tokenIssuerAndAudiences(b, tr.Status.Token)
	keys, err := serviceaccount.LoadKeys(keyFile, nil)
	if err != nil {
		b.Fatal(err)
	}
	signer, err := keys.Signer()
	if err != nil {
		b.Fatal(err)
	}
	issuer := serviceaccount.NewIssuer(iss, signer, clock.RealClock{})
	mint := func(n int) []string {
		tokens := make([]string, n)
		for i := range tokens {
			t, err := issuer.Issue(ctx, serviceaccount.TokenRequest{
				Binding: serviceaccount.Binding{ServiceAccount: sa}, Audiences: aud, Lifetime: time.Hour,
			})
			if err != nil {
				b.Fatal(err)
			}
			tokens[i] = t.Raw
		}
		return tokens
	}

	var tokens []string
	var cpu time.Duration
	start := processCPU(b)
	for b.Loop() {
		if len(tokens) == 0 {
			b.StopTimer()
			cpu += processCPU(b) - start
			tokens = mint(512)
			start = processCPU(b)
			b.StartTimer()
		}
		r, err := client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: tokens[0]},
		}, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if !r.Status.Authenticated {
			b.Fatalf("review = %+v", r.Status)
		}
		tokens = tokens[1:]
	}
	cpu += processCPU(b) - start
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
}

// tokenIssuerAndAudiences reads, without verifying, a JWT's "iss" and "aud".
func tokenIssuerAndAudiences(b *testing.B, raw string) (string, []string) {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		b.Fatalf("token has %d parts", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		b.Fatal(err)
	}
	var claims struct {
		Iss string       `json:"iss"`
		Aud jwt.Audience `json:"aud"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		b.Fatal(err)
	}
	return claims.Iss, claims.Aud
}
