package jwt_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idplane/idplane/internal/authn/jwt/jwttest"
	"github.com/idplane/idplane/internal/testing/testkeys"
)

// BenchmarkAuthenticateToken is the cost of one JWT authentication once the issuer's keys are
// cached (every request but the first): signature, claims, mappings. No token cache sits in
// front, so every request pays it.
func BenchmarkAuthenticateToken(b *testing.B) {
	for _, key := range []string{testkeys.RSA, testkeys.ECDSAP256} {
		issuer := jwttest.Start(b, testkeys.Key(b, key))
		configs := map[string]string{
			// The README's federation configuration: CEL groups, uid, extra and two rules.
			"CEL mappings": federationConfig(issuer.URL, issuer.CAPEM),
			"claim only": `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: ` + issuer.URL + `
    audiences: [cluster-b]
    certificateAuthority: |
` + indent(issuer.CAPEM, "      ") + `
  claimMappings:
    username:
      claim: sub
      prefix: "cluster-a:"
`,
		}
		for _, name := range []string{"claim only", "CEL mappings"} {
			b.Run(strings.ReplaceAll(key, " ", "")+"/"+strings.ReplaceAll(name, " ", "-"), func(b *testing.B) {
				a := started(b, configs[name])
				token := issuer.PodToken(b, "team", "bot", "bot-1", "cluster-b", time.Hour)
				ctx := context.Background()
				if _, ok, err := a.AuthenticateToken(ctx, token); !ok {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, ok, err := a.AuthenticateToken(ctx, token); !ok {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
