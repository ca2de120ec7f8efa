package jwt_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idplane/idplane/internal/authn/jwt/jwttest"
	"github.com/idplane/idplane/internal/testing/testkeys"
)

// FuzzAuthenticateToken: whatever a client sends, the authenticator does not crash, and the only
// identity it ever answers is the one the issuer signed; an altered token is refused.
func FuzzAuthenticateToken(f *testing.F) {
	issuer := jwttest.Start(f, testkeys.Key(f, testkeys.RSA))
	a := started(f, federationConfig(issuer.URL, issuer.CAPEM))
	valid := issuer.PodToken(f, "team", "bot", "bot-1", "cluster-b", time.Hour)
	parts := strings.Split(valid, ".")
	f.Add(valid)
	f.Add(parts[0] + "." + parts[1] + ".")
	f.Add(parts[0] + ".e30." + parts[2])
	f.Add("eyJhbGciOiJub25lIn0." + parts[1] + ".")
	f.Add("")
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, token string) {
		resp, ok, err := a.AuthenticateToken(ctx, token)
		if !ok {
			return
		}
		if err != nil || resp.User.GetName() != "cluster-a:system:serviceaccount:team:bot" {
			t.Fatalf("accepted %q as %+v (err %v)", token, resp.User, err)
		}
	})
}
