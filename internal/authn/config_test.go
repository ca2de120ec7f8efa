package authn

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLoadConfigFile(t *testing.T) {
	const head = "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\n"
	cases := []struct {
		name, content string
		want          *Anonymous
		wantErr       string
	}{
		{"anonymous on listed paths", head + "anonymous:\n  enabled: true\n  conditions:\n  - path: /livez\n  - path: /openid/v1/jwks\n",
			&Anonymous{Enabled: true, Paths: []string{"/livez", "/openid/v1/jwks"}}, ""},
		{"anonymous everywhere", head + "anonymous:\n  enabled: true\n", &Anonymous{Enabled: true}, ""},
		{"anonymous off", head + "anonymous:\n  enabled: false\n", &Anonymous{}, ""},
		{"no anonymous section", head, nil, ""},
		{"v1beta1", "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: AuthenticationConfiguration\nanonymous:\n  enabled: true\n", &Anonymous{Enabled: true}, ""},
		{"conditions while off", head + "anonymous:\n  enabled: false\n  conditions:\n  - path: /livez\n", nil, "need anonymous.enabled: true"},
		{"empty path", head + "anonymous:\n  enabled: true\n  conditions:\n  - path: \"\"\n", nil, "conditions[0].path is required"},
		{"path twice", head + "anonymous:\n  enabled: true\n  conditions:\n  - path: /livez\n  - path: /livez\n", nil, "listed twice"},
		{"jwt issuers", head + "jwt:\n- issuer:\n    url: https://issuer.example.com\n    audiences: [a]\n  claimMappings:\n    username:\n      claim: sub\n      prefix: \"\"\n", nil, "jwt authenticators are not supported"},
		{"unknown field", head + "anonymous:\n  enabled: true\n  paths: [/livez]\n", nil, "decoding"},
		{"another kind", "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\n", nil, "not an AuthenticationConfiguration"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "authn.yaml")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := LoadConfigFile(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tc.want == nil) || (got != nil && (got.Enabled != tc.want.Enabled || !slices.Equal(got.Paths, tc.want.Paths))) {
				t.Errorf("LoadConfigFile = %+v, want %+v", got, tc.want)
			}
		})
	}
}
