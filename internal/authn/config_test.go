package authn

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	authenticationcel "k8s.io/apiserver/pkg/authentication/cel"
)

const configHead = "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\n"

// ownIssuer stands for the server's own service-account issuer in these tests.
const ownIssuer = "https://idplane.example.com"

// identityProviderConfig is the README's configuration for an OpenID Connect provider.
const identityProviderConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: https://idp.example.com
    audiences: [idplane]
  claimValidationRules:
  - expression: "claims.email_verified == true"
    message: the email address must be verified
  claimMappings:
    username:
      expression: "'idp:' + claims.email"
    groups:
      claim: groups
      prefix: "idp:"
    uid:
      claim: sub
  userValidationRules:
  - expression: "!user.username.startsWith('system:')"
    message: users of the identity provider never take a system name
  - expression: "user.groups.all(g, !g.startsWith('system:'))"
    message: groups of the identity provider never take a system group
`

func jwtIssuer(url, mappings string) string {
	return "jwt:\n- issuer:\n    url: " + url + "\n    audiences: [cluster-b]\n  claimMappings:\n" + mappings
}

func TestLoadConfigFile(t *testing.T) {
	subMapping := "    username:\n      claim: sub\n      prefix: \"\"\n"
	celMappings := "    username:\n      expression: \"'cluster-a:' + claims.sub\"\n" +
		"    groups:\n      expression: \"['cluster-a:' + claims['kubernetes.io'].namespace]\"\n" +
		"    uid:\n      expression: \"claims['kubernetes.io'].serviceaccount.uid\"\n" +
		"    extra:\n    - key: cluster-a.example.com/pod\n      valueExpression: \"has(claims['kubernetes.io'].pod) ? [claims['kubernetes.io'].pod.name] : []\"\n"
	cases := []struct {
		name, content string
		wantAnonymous *Anonymous
		wantIssuers   []string
		wantErr       string
	}{
		{"anonymous on listed paths", configHead + "anonymous:\n  enabled: true\n  conditions:\n  - path: /livez\n  - path: /openid/v1/jwks\n",
			&Anonymous{Enabled: true, Paths: []string{"/livez", "/openid/v1/jwks"}}, nil, ""},
		{"anonymous everywhere", configHead + "anonymous:\n  enabled: true\n", &Anonymous{Enabled: true}, nil, ""},
		{"anonymous off", configHead + "anonymous:\n  enabled: false\n", &Anonymous{}, nil, ""},
		{"no anonymous section", configHead, nil, nil, ""},
		{"v1beta1", "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: AuthenticationConfiguration\nanonymous:\n  enabled: true\n", &Anonymous{Enabled: true}, nil, ""},
		{"conditions while off", configHead + "anonymous:\n  enabled: false\n  conditions:\n  - path: /livez\n", nil, nil, "need anonymous.enabled: true"},
		{"empty path", configHead + "anonymous:\n  enabled: true\n  conditions:\n  - path: \"\"\n", nil, nil, "conditions[0].path is required"},
		{"path twice", configHead + "anonymous:\n  enabled: true\n  conditions:\n  - path: /livez\n  - path: /livez\n", nil, nil, "listed twice"},
		{"jwt issuer with a claim", configHead + jwtIssuer("https://issuer.example.com", subMapping), nil, []string{"https://issuer.example.com"}, ""},
		{"jwt issuer with CEL mappings and anonymous", configHead + jwtIssuer("https://cluster-a.example.com:6443", celMappings) + "anonymous:\n  enabled: true\n  conditions:\n  - path: /livez\n",
			&Anonymous{Enabled: true, Paths: []string{"/livez"}}, []string{"https://cluster-a.example.com:6443"}, ""},
		{"README's identity provider", identityProviderConfig, nil, []string{"https://idp.example.com"}, ""},
		{"email without email_verified", strings.Replace(identityProviderConfig, "claims.email_verified == true", "claims.sub != ''", 1), nil, nil,
			"claims.email_verified must be used in claimMappings.username.expression or claimMappings.extra[*].valueExpression or claimValidationRules[*].expression when claims.email is used in claimMappings.username.expression"},
		// The messages are the library's validation's, with their field paths.
		{"own issuer", configHead + jwtIssuer(ownIssuer, subMapping), nil, nil, `jwt[0].issuer.url: Invalid value: "https://idplane.example.com": URL must not overlap with disallowed issuers`},
		{"http issuer", configHead + jwtIssuer("http://issuer.example.com", subMapping), nil, nil, "jwt[0].issuer.url: Invalid value: \"http://issuer.example.com\": URL scheme must be https"},
		{"no username mapping", configHead + jwtIssuer("https://issuer.example.com", "    groups:\n      claim: groups\n      prefix: \"\"\n"), nil, nil, "jwt[0].claimMappings.username: Required value"},
		{"CEL that does not compile", configHead + jwtIssuer("https://issuer.example.com", "    username:\n      expression: \"claims.sub +\"\n"), nil, nil, "jwt[0].claimMappings.username.expression: Invalid value"},
		{"issuer twice", configHead + jwtIssuer("https://issuer.example.com", subMapping) + "- issuer:\n    url: https://issuer.example.com\n    audiences: [x]\n  claimMappings:\n" + subMapping,
			nil, nil, "jwt[1].issuer.url: Duplicate value"},
		{"egress selector", configHead + "jwt:\n- issuer:\n    url: https://issuer.example.com\n    audiences: [a]\n    egressSelectorType: cluster\n  claimMappings:\n" + subMapping,
			nil, nil, "jwt[0].issuer.egressSelectorType: Forbidden: idplane has no egress selector configuration"},
		{"unknown field", configHead + "anonymous:\n  enabled: true\n  paths: [/livez]\n", nil, nil, "decoding"},
		{"empty file", "", nil, nil, "empty authentication configuration"},
		{"another kind", "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\n", nil, nil, "not an AuthenticationConfiguration"},
	}
	compiler := authenticationcel.NewDefaultCompiler()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "authn.yaml")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := LoadConfigFile(path, compiler, []string{ownIssuer})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Anonymous, tc.wantAnonymous) {
				t.Errorf("anonymous = %+v, want %+v", got.Anonymous, tc.wantAnonymous)
			}
			var issuers []string
			for _, j := range got.JWT {
				issuers = append(issuers, j.Issuer.URL)
			}
			if !reflect.DeepEqual(issuers, tc.wantIssuers) {
				t.Errorf("issuers = %q, want %q", issuers, tc.wantIssuers)
			}
			if got.Data != tc.content {
				t.Error("Data is not the file's content")
			}
		})
	}
}

func TestLoadConfigFileMissing(t *testing.T) {
	_, err := LoadConfigFile(filepath.Join(t.TempDir(), "none.yaml"), authenticationcel.NewDefaultCompiler(), nil)
	if err == nil || !strings.Contains(err.Error(), "reading authentication configuration") {
		t.Fatalf("err = %v", err)
	}
}
