package serviceaccount

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"syscall"
	"testing"
	"time"
)

// processCPU is the user+system CPU time the process has used: on a shared machine the CPU an
// operation costs varies far less than its wall time.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkToken measures signing and verifying one pod-bound token per key type, and verifying
// it again from the verified-token cache; verifying includes the object lookups, here from maps,
// as the authenticator's informers would answer.
func BenchmarkToken(b *testing.B) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	for _, k := range []struct {
		name string
		key  crypto.Signer
	}{{"ES256", ecKey(b)}, {"RS256", rsaKey}} {
		f := newFixture(b, k.key)
		binding := Binding{ServiceAccount: testSA, Pod: testPod, Node: testNode}
		req := TokenRequest{Binding: binding, Audiences: []string{testIssuer}, Lifetime: time.Hour}
		b.Run("sign/"+k.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := f.issuer.Issue(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
		tok := f.issue(b, binding)
		a := f.authenticator(liveObjects())
		ctx := context.Background()
		b.Run("verify/"+k.name, func(b *testing.B) {
			start := processCPU(b)
			for b.Loop() {
				if _, ok, err := a.AuthenticateToken(ctx, tok.Raw); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
			b.ReportMetric(float64((processCPU(b)-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
		// The same token again with the verified-token cache: the object lookups remain.
		cached := f.cachedAuthenticator(liveObjects(), 16)
		b.Run("verify-cached/"+k.name, func(b *testing.B) {
			for b.Loop() {
				if _, ok, err := cached.AuthenticateToken(ctx, tok.Raw); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
		})
	}
}
