package apiserver

import (
	"path/filepath"
	"testing"
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
