package apiserver

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/idplane/idplane/internal/authn/jwt/jwttest"
	"github.com/idplane/idplane/internal/testing/testkeys"
)

// A JWT issuer section that does not validate refuses the start with the field at fault; one
// that claims this server's own service-account issuer would let an outside party's keys mint
// this server's identities, and is refused too.
func TestAuthenticationConfigJWTRefusedAtStart(t *testing.T) {
	const own = "https://idplane.example.com"
	jwtConfig := func(issuer, username string) string {
		return "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer:\n    url: " + issuer +
			"\n    audiences: [cluster-b]\n  claimMappings:\n    username:\n" + username
	}
	cases := []struct{ name, config, want string }{
		{"own issuer", jwtConfig(own, "      claim: sub\n      prefix: \"\"\n"),
			`jwt[0].issuer.url: Invalid value: "https://idplane.example.com": URL must not overlap with disallowed issuers`},
		{"CEL that does not compile", jwtConfig("https://cluster-a.example.com", "      expression: \"claims.sub +\"\n"),
			"jwt[0].claimMappings.username.expression: Invalid value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			o := NewOptions()
			o.DataDir, o.SecurePort = filepath.Join(dir, "data"), 0
			o.ServiceAccounts.Issuers = []string{own}
			o.AuthenticationConfigFile = writeFile(t, dir, "authn.yaml", tc.config)
			expectStartRefused(t, o, tc.want)
		})
	}
}

// --anonymous-auth beside a file: refused when the file has an anonymous section (which would
// say otherwise), applied when it has none, as upstream. The file's JWT issuer authenticates
// through the assembled server.
func TestAuthenticationConfigBesideAnonymousFlag(t *testing.T) {
	dir := t.TempDir()
	o := NewOptions()
	o.DataDir, o.SecurePort, o.AnonymousAuth = filepath.Join(dir, "refused"), 0, true
	o.AuthenticationConfigFile = writeFile(t, dir, "anonymous.yaml",
		"apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\nanonymous:\n  enabled: true\n")
	expectStartRefused(t, o, "anonymous: Forbidden: --anonymous-auth flag cannot be set when anonymous field is configured in authentication configuration file")

	issuer := jwttest.Start(t, testkeys.Key(t, testkeys.ECDSAP256))
	config := writeFile(t, dir, "jwt.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer:\n    url: "+issuer.URL+
		"\n    audiences: [idplane-test]\n    certificateAuthority: |\n      "+strings.ReplaceAll(strings.TrimSpace(issuer.CAPEM), "\n", "\n      ")+
		"\n  claimMappings:\n    username:\n      claim: sub\n      prefix: \"other:\"\n")
	ts := startTestServer(t, filepath.Join(dir, "data"), func(o *Options) {
		o.AnonymousAuth = true
		o.AuthenticationConfigFile = config
	})
	ctx := context.Background()
	anon := kubernetes.NewForConfigOrDie(rest.AnonymousClientConfig(ts.config))
	if _, err := anon.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "system:anonymous") {
		t.Errorf("anonymous list: got %v, want Forbidden for system:anonymous", err)
	}

	cfg := rest.AnonymousClientConfig(ts.config)
	cfg.BearerToken = issuer.PodToken(t, "team", "bot", "bot-1", "idplane-test", time.Hour)
	var review *authenticationv1.SelfSubjectReview
	// The issuer is discovered in the background from the start.
	eventually(t, "the JWT issuer's token authenticates", func() (err error) {
		review, err = kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		return err
	})
	if got := review.Status.UserInfo.Username; got != "other:system:serviceaccount:team:bot" {
		t.Errorf("username = %q", got)
	}
	// A bad token of the issuer is refused, not taken for anonymous.
	cfg.BearerToken = issuer.PodToken(t, "team", "bot", "bot-1", "another-audience", time.Hour)
	_, err := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if !apierrors.IsUnauthorized(err) {
		t.Errorf("token for another audience: %v, want 401", err)
	}
}
