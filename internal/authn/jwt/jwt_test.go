package jwt_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/apis/apiserver"
	authenticationcel "k8s.io/apiserver/pkg/authentication/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/idplane/idplane/internal/authn"
	"github.com/idplane/idplane/internal/authn/jwt"
	"github.com/idplane/idplane/internal/authn/jwt/jwttest"
	"github.com/idplane/idplane/internal/testing/testkeys"
)

// federationConfig is cluster B's configuration for cluster A's issuer, as the README shows it.
func federationConfig(issuerURL, caPEM string) string {
	return `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: ` + issuerURL + `
    audiences: [cluster-b]
    audienceMatchPolicy: MatchAny
    certificateAuthority: |
` + indent(caPEM, "      ") + `
  claimValidationRules:
  - expression: "int(claims.exp) - int(claims.iat) <= 3600"
    message: tokens of cluster A for cluster B live an hour at most
  claimMappings:
    username:
      claim: sub
      prefix: "cluster-a:"
    groups:
      expression: "['cluster-a:system:serviceaccounts', 'cluster-a:system:serviceaccounts:' + claims['kubernetes.io'].namespace]"
    uid:
      expression: "claims['kubernetes.io'].serviceaccount.uid"
    extra:
    - key: cluster-a.example.com/pod-name
      valueExpression: "has(claims['kubernetes.io'].pod) ? [claims['kubernetes.io'].pod.name] : []"
  userValidationRules:
  - expression: "!user.username.startsWith('system:')"
    message: usernames of cluster A never take a system name of this cluster
  - expression: "user.groups.all(g, !g.startsWith('system:'))"
    message: groups of cluster A never take a system group of this cluster
`
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return prefix + strings.Join(lines, "\n"+prefix)
}

// started returns an authenticator for config's issuers once they have been discovered.
func started(t testing.TB, config string) *jwt.Authenticator {
	t.Helper()
	compiler := authenticationcel.NewDefaultCompiler()
	c, err := authn.ParseConfig([]byte(config), compiler, []string{"https://cluster-b.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := jwt.New(nil, jwt.Options{Compiler: compiler, APIServerID: "cluster-b"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Update(ctx, c.JWT); err != nil {
		t.Fatal(err)
	}
	return a
}

func TestFederatedServiceAccountTokens(t *testing.T) {
	clusterA := jwttest.Start(t, testkeys.Key(t, testkeys.RSA))
	a := started(t, federationConfig(clusterA.URL, clusterA.CAPEM))
	// An issuer B has not configured: its tokens are not B's JWT authenticator's to judge.
	stranger := jwttest.Start(t, testkeys.Key(t, testkeys.ECDSAP256))
	strangers := func(t *testing.T) string {
		return stranger.PodToken(t, "team", "bot", "bot-1", "cluster-b", time.Hour)
	}

	now := clusterA.Clock.Now()
	cases := []struct {
		name string
		// issuedAgo sets cluster A's clock back before issuing.
		issuedAgo time.Duration
		lifetime  time.Duration
		audience  string
		token     func(*testing.T) string
		want      *user.DefaultInfo
		// wantErr empty and want nil: the token is not B's to judge (no error).
		wantErr string
	}{
		{name: "fresh token of a pod", lifetime: time.Hour, audience: "cluster-b", want: &user.DefaultInfo{
			Name:   "cluster-a:system:serviceaccount:team:bot",
			UID:    "uid-sa-bot",
			Groups: []string{"cluster-a:system:serviceaccounts", "cluster-a:system:serviceaccounts:team"},
			Extra:  map[string][]string{"cluster-a.example.com/pod-name": {"bot-1"}},
		}},
		// B cannot see A's pods: a token whose pod is gone keeps working until it expires.
		{name: "a minute before expiry", issuedAgo: 59 * time.Minute, lifetime: time.Hour, audience: "cluster-b", want: &user.DefaultInfo{
			Name:   "cluster-a:system:serviceaccount:team:bot",
			UID:    "uid-sa-bot",
			Groups: []string{"cluster-a:system:serviceaccounts", "cluster-a:system:serviceaccounts:team"},
			Extra:  map[string][]string{"cluster-a.example.com/pod-name": {"bot-1"}},
		}},
		{name: "expired a second ago", issuedAgo: time.Hour + time.Second, lifetime: time.Hour, audience: "cluster-b", wantErr: "token is expired"},
		{name: "ten-minute token, eleven minutes on", issuedAgo: 11 * time.Minute, lifetime: 10 * time.Minute, audience: "cluster-b", wantErr: "token is expired"},
		{name: "for another audience", lifetime: time.Hour, audience: "cluster-c", wantErr: "expected audience"},
		{name: "for A's own API", lifetime: time.Hour, audience: clusterA.URL, wantErr: "expected audience"},
		// A pod's token extended to a year (--service-account-extend-token-expiration) would
		// outlive its pod by that long on B: the claim rule refuses it.
		{name: "extended to a year", lifetime: 365 * 24 * time.Hour, audience: "cluster-b", wantErr: "tokens of cluster A for cluster B live an hour at most"},
		{name: "another issuer", token: strangers},
		{name: "not a JWT", token: func(*testing.T) string { return "abcdef.0123456789abcdef" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			token := ""
			if tc.token != nil {
				token = tc.token(t)
			} else {
				clusterA.Clock.SetTime(now.Add(-tc.issuedAgo))
				token = clusterA.PodToken(t, "team", "bot", "bot-1", tc.audience, tc.lifetime)
			}
			resp, ok, err := a.AuthenticateToken(context.Background(), token)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || ok {
					t.Fatalf("AuthenticateToken = %v, %v, want an error containing %q", ok, err, tc.wantErr)
				}
			case tc.want == nil:
				if ok || err != nil {
					t.Fatalf("AuthenticateToken = %v, %v, want not claimed", ok, err)
				}
			default:
				if !ok || err != nil {
					t.Fatalf("AuthenticateToken = %v, %v", ok, err)
				}
				// The library adds the token's ID, which audit logs show as the credential.
				got := resp.User.(*user.DefaultInfo)
				if id := got.Extra[user.CredentialIDKey]; len(id) != 1 || !strings.HasPrefix(id[0], "JTI=") {
					t.Errorf("credential ID = %q, want the token's JTI", id)
				}
				delete(got.Extra, user.CredentialIDKey)
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("user = %+v, want %+v", got, tc.want)
				}
			}
		})
	}
}

// A token that names B's configured issuer but is signed with another key is refused.
func TestForgedIssuerRefused(t *testing.T) {
	clusterA := jwttest.Start(t, testkeys.Key(t, testkeys.RSA))
	a := started(t, federationConfig(clusterA.URL, clusterA.CAPEM))
	token := clusterA.PodToken(t, "team", "bot", "bot-1", "cluster-b", time.Hour)
	parts := strings.Split(token, ".")
	other := jwttest.Start(t, testkeys.Key(t, testkeys.ECDSAP256)).PodToken(t, "team", "bot", "bot-1", "cluster-b", time.Hour)
	// A's header and claims, another key's signature.
	forged := parts[0] + "." + parts[1] + "." + strings.Split(other, ".")[2]
	if _, ok, err := a.AuthenticateToken(context.Background(), forged); ok || err == nil {
		t.Fatalf("forged token: ok=%v err=%v", ok, err)
	}
}

func TestUpdate(t *testing.T) {
	clusterA := jwttest.Start(t, testkeys.Key(t, testkeys.RSA))
	clusterC := jwttest.Start(t, testkeys.Key(t, testkeys.ECDSAP256))
	compiler := authenticationcel.NewDefaultCompiler()
	parse := func(config string) []apiserver.JWTAuthenticator {
		c, err := authn.ParseConfig([]byte(config), compiler, nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.JWT
	}
	a, err := jwt.New(parse(federationConfig(clusterA.URL, clusterA.CAPEM)), jwt.Options{Compiler: compiler, APIServerID: "cluster-b"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Stop)
	tokenA := clusterA.PodToken(t, "team", "bot", "bot-1", "cluster-b", time.Hour)
	tokenC := clusterC.PodToken(t, "team", "bot", "bot-1", "cluster-b", time.Hour)
	authenticates := func(token string) (bool, error) {
		_, ok, err := a.AuthenticateToken(context.Background(), token)
		return ok, err
	}

	// An issuer that cannot be discovered is not swapped in; the current set keeps serving.
	down := jwttest.Start(t, testkeys.Key(t, testkeys.ECDSAP256))
	down.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err = a.Update(ctx, parse(federationConfig(down.URL, down.CAPEM)))
	if err == nil || !strings.Contains(err.Error(), "not ready") || !strings.Contains(err.Error(), down.URL) {
		t.Fatalf("Update to an issuer that is down: %v", err)
	}
	if got := a.Issuers(); !reflect.DeepEqual(got, []string{clusterA.URL}) {
		t.Fatalf("issuers after a refused update = %q", got)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if ok, _ := authenticates(tokenA); !ok {
		// Discovery at New is in the background: wait for it through an Update to the same set.
		if err := a.Update(ctx, parse(federationConfig(clusterA.URL, clusterA.CAPEM))); err != nil {
			t.Fatal(err)
		}
		if ok, err := authenticates(tokenA); !ok {
			t.Fatalf("cluster A's token after a refused update: %v", err)
		}
	}

	// Replaced by C: A's tokens are no longer claimed, C's are.
	if err := a.Update(ctx, parse(federationConfig(clusterC.URL, clusterC.CAPEM))); err != nil {
		t.Fatal(err)
	}
	if ok, err := authenticates(tokenA); ok || err != nil {
		t.Errorf("cluster A's token after A was removed: ok=%v err=%v, want not claimed", ok, err)
	}
	if ok, err := authenticates(tokenC); !ok {
		t.Errorf("cluster C's token: %v", err)
	}
	// A's key-set fetches are no longer reported; C's are.
	if fetches := jwksFetches(t); fetches[issuerHash(clusterA)] || !fetches[issuerHash(clusterC)] {
		t.Errorf("JWKS fetch series by issuer hash = %v, want C's and not A's", fetches)
	}

	a.Stop()
	if err := a.Update(ctx, nil); err == nil {
		t.Error("Update after Stop succeeded")
	}
}

// The library's metrics are registered and record, per issuer (by the hash of its URL): each
// JWKS fetch's result and the latency of each authentication by result.
func TestMetrics(t *testing.T) {
	clusterA := jwttest.Start(t, testkeys.Key(t, testkeys.RSA))
	troubled := jwttest.Start(t, testkeys.Key(t, testkeys.ECDSAP256))
	a := started(t, federationConfig(clusterA.URL, clusterA.CAPEM)+
		"- issuer:\n    url: "+troubled.URL+"\n    audiences: [cluster-b]\n    certificateAuthority: |\n"+indent(troubled.CAPEM, "      ")+
		"\n  claimMappings:\n    username:\n      claim: sub\n      prefix: \"troubled:\"\n")
	ctx := context.Background()
	if _, ok, err := a.AuthenticateToken(ctx, clusterA.PodToken(t, "team", "bot", "bot-1", "cluster-b", time.Hour)); !ok {
		t.Fatal(err)
	}
	if _, ok, _ := a.AuthenticateToken(ctx, clusterA.PodToken(t, "team", "bot", "bot-1", "elsewhere", time.Hour)); ok {
		t.Fatal("token for another audience accepted")
	}
	// Discovered, but its key set is down: its tokens cannot be verified.
	troubled.KeysDown(true)
	if _, ok, err := a.AuthenticateToken(ctx, troubled.PodToken(t, "team", "bot", "bot-1", "cluster-b", time.Hour)); ok || err == nil || !strings.Contains(err.Error(), "fetching keys") {
		t.Fatalf("token of an issuer whose keys are down: ok=%v err=%v", ok, err)
	}

	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			found[fmt.Sprintf("%s{%s,%s}", f.GetName(), labels["jwt_issuer_hash"], labels["result"])] = true
		}
	}
	hash := issuerHash
	for _, want := range []string{
		"apiserver_authentication_jwt_authenticator_jwks_fetch_last_timestamp_seconds{" + hash(clusterA) + ",success}",
		"apiserver_authentication_jwt_authenticator_latency_seconds{" + hash(clusterA) + ",success}",
		"apiserver_authentication_jwt_authenticator_latency_seconds{" + hash(clusterA) + ",failure}",
		"apiserver_authentication_jwt_authenticator_jwks_fetch_last_timestamp_seconds{" + hash(troubled) + ",failure}",
		"apiserver_authentication_jwt_authenticator_latency_seconds{" + hash(troubled) + ",failure}",
	} {
		if !found[want] {
			t.Errorf("no %s", want)
		}
	}
	if found["apiserver_authentication_jwt_authenticator_jwks_fetch_last_timestamp_seconds{"+hash(troubled)+",success}"] {
		t.Error("a JWKS fetch of the issuer whose keys are down counted as a success")
	}
}

// The issuer fields beyond the URL, each as the library reads it.
func TestIssuerOptions(t *testing.T) {
	const selfHosted = "https://cluster-a.example.com"
	hidden := jwttest.StartNamed(t, testkeys.Key(t, testkeys.ECDSAP256), selfHosted)
	plain := jwttest.Start(t, testkeys.Key(t, testkeys.RSA))
	issuer := func(i *jwttest.Issuer, more string) string {
		return configHeadJWT + "- issuer:\n    url: " + i.Name + "\n    certificateAuthority: |\n" + indent(i.CAPEM, "      ") + "\n" + more
	}
	subMapping := "  claimMappings:\n    username:\n      claim: sub\n      prefix: \"\"\n"
	cases := []struct {
		name, config string
		issuer       *jwttest.Issuer
		account      string
		audience     string
		wantErr      string
	}{
		// Discovery fetched from another address; "iss" and discovery's issuer are the URL.
		{name: "discoveryURL", config: issuer(hidden, "    discoveryURL: "+hidden.URL+"/.well-known/openid-configuration\n    audiences: [cluster-b]\n"+subMapping),
			issuer: hidden, account: "bot", audience: "cluster-b"},
		{name: "any of two audiences", config: issuer(plain, "    audiences: [cluster-b, cluster-b-alt]\n    audienceMatchPolicy: MatchAny\n"+subMapping),
			issuer: plain, account: "bot", audience: "cluster-b-alt"},
		{name: "none of two audiences", config: issuer(plain, "    audiences: [cluster-b, cluster-b-alt]\n    audienceMatchPolicy: MatchAny\n"+subMapping),
			issuer: plain, account: "bot", audience: "cluster-c", wantErr: "expected audience"},
		{name: "required claim holds", config: issuer(plain, "    audiences: [cluster-b]\n  claimValidationRules:\n  - claim: sub\n    requiredValue: system:serviceaccount:team:bot\n"+subMapping),
			issuer: plain, account: "bot", audience: "cluster-b"},
		{name: "required claim differs", config: issuer(plain, "    audiences: [cluster-b]\n  claimValidationRules:\n  - claim: sub\n    requiredValue: system:serviceaccount:team:bot\n"+subMapping),
			issuer: plain, account: "intruder", audience: "cluster-b", wantErr: "required claim sub value does not match"},
		// A group mapping that an issuer's claims could steer into a system group is stopped by
		// the README's group rule.
		{name: "group rule", config: issuer(plain, "    audiences: [cluster-b]\n  claimMappings:\n    username:\n      claim: sub\n      prefix: \"cluster-a:\"\n"+
			"    groups:\n      expression: \"['system:masters']\"\n  userValidationRules:\n  - expression: \"user.groups.all(g, !g.startsWith('system:'))\"\n    message: groups of cluster A never take a system group of this cluster\n"),
			issuer: plain, account: "bot", audience: "cluster-b", wantErr: "groups of cluster A never take a system group"},
		{name: "user rule", config: issuer(plain, "    audiences: [cluster-b]\n"+subMapping+"  userValidationRules:\n  - expression: \"!user.username.startsWith('system:')\"\n    message: no system users\n"),
			issuer: plain, account: "bot", audience: "cluster-b", wantErr: "no system users"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := started(t, tc.config)
			token := tc.issuer.PodToken(t, "team", tc.account, "pod-1", tc.audience, time.Hour)
			resp, ok, err := a.AuthenticateToken(context.Background(), token)
			if tc.wantErr != "" {
				if ok || err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("AuthenticateToken = %v, %v, want an error containing %q", ok, err, tc.wantErr)
				}
				return
			}
			if !ok || err != nil || resp.User.GetName() != "system:serviceaccount:team:"+tc.account {
				t.Fatalf("AuthenticateToken = %v, %v, %v", resp, ok, err)
			}
		})
	}
}

const configHeadJWT = "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n"

// issuerHash is the library's label for issuer i.
func issuerHash(i *jwttest.Issuer) string {
	return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(i.Name)))
}

// jwksFetches are the issuer hashes with a JWKS fetch series on /metrics.
func jwksFetches(t *testing.T) map[string]bool {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	hashes := map[string]bool{}
	for _, f := range families {
		if f.GetName() != "apiserver_authentication_jwt_authenticator_jwks_fetch_last_timestamp_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "jwt_issuer_hash" {
					hashes[l.GetValue()] = true
				}
			}
		}
	}
	return hashes
}
