package authn

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	authenticationcel "k8s.io/apiserver/pkg/authentication/cel"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/idplane/idplane/internal/authn/jwt"
	"github.com/idplane/idplane/internal/authn/jwt/jwttest"
	"github.com/idplane/idplane/internal/testing/testkeys"
)

func issuerConfig(i *jwttest.Issuer, extra string) string {
	return configHead + "jwt:\n- issuer:\n    url: " + i.URL + "\n    audiences: [cluster-b]\n    certificateAuthority: |\n      " +
		strings.ReplaceAll(strings.TrimSpace(i.CAPEM), "\n", "\n      ") +
		"\n  claimMappings:\n    username:\n      claim: sub\n      prefix: \"cluster-a:\"\n" + extra
}

// reloadFixture is a server's start with an authentication configuration file: the file, what
// was loaded from it and the JWT authenticator serving it.
type reloadFixture struct {
	path     string
	jwt      *jwt.Authenticator
	reloader *Reloader
}

func startReloadFixture(t *testing.T, content string) *reloadFixture {
	t.Helper()
	path := filepath.Join(t.TempDir(), "authn.yaml")
	writeFile(t, path, content)
	compiler := authenticationcel.NewDefaultCompiler()
	initial, err := LoadConfigFile(path, compiler, []string{ownIssuer})
	if err != nil {
		t.Fatal(err)
	}
	a, err := jwt.New(initial.JWT, jwt.Options{Compiler: compiler, APIServerID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Stop)
	return &reloadFixture{path: path, jwt: a, reloader: NewReloader(path, initial, compiler, []string{ownIssuer}, "test", a)}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	// Written aside and renamed into place, as editors and config management do.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// reloads reads apiserver_authentication_config_controller_automatic_reloads_total{status}.
func reloads(t *testing.T, status string) float64 {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "apiserver_authentication_config_controller_automatic_reloads_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "status" && l.GetValue() == status {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func TestReloadRefusesBadFiles(t *testing.T) {
	clusterA := jwttest.Start(t, testkeys.Key(t, testkeys.RSA))
	clusterC := jwttest.Start(t, testkeys.Key(t, testkeys.ECDSAP256))
	anonymousPart := "anonymous:\n  enabled: true\n  conditions:\n  - path: /livez\n"
	f := startReloadFixture(t, issuerConfig(clusterA, anonymousPart))
	ctx := context.Background()

	cases := []struct {
		name, content string
		wantErr       string
	}{
		{"does not decode", "{", "decoding authentication configuration"},
		{"empty", "", "empty authentication configuration"},
		{"CEL that does not compile", issuerConfig(clusterC, "    groups:\n      expression: \"claims.groups +\"\n"+anonymousPart), "jwt[0].claimMappings.groups.expression: Invalid value"},
		{"this server's own issuer", strings.Replace(issuerConfig(clusterC, anonymousPart), clusterC.URL, ownIssuer, 1), "URL must not overlap with disallowed issuers"},
		{"anonymous changed", issuerConfig(clusterC, "anonymous:\n  enabled: true\n"), "anonymous: Forbidden: changed from initial configuration file"},
		{"anonymous removed", issuerConfig(clusterC, ""), "anonymous: Forbidden: changed from initial configuration file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			failures := reloads(t, "failure")
			writeFile(t, f.path, tc.content)
			applied, err := f.reloader.Reload(ctx)
			if applied || err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Reload = %v, %v, want refused with %q", applied, err, tc.wantErr)
			}
			if got := reloads(t, "failure"); got != failures+1 {
				t.Errorf("failure reloads = %v, want %v", got, failures+1)
			}
			if got := f.jwt.Issuers(); !reflect.DeepEqual(got, []string{clusterA.URL}) {
				t.Errorf("issuers after a refused file = %q, want A's still", got)
			}
			// Refused for good: the same content is not tried, nor counted, again.
			if applied, err := f.reloader.Reload(ctx); applied || err != nil {
				t.Errorf("second Reload of the same content = %v, %v", applied, err)
			}
		})
	}

	t.Run("missing file", func(t *testing.T) {
		if err := os.Remove(f.path); err != nil {
			t.Fatal(err)
		}
		if _, err := f.reloader.Reload(ctx); err == nil || !strings.Contains(err.Error(), "reading authentication configuration") {
			t.Fatalf("Reload of a missing file: %v", err)
		}
	})

	t.Run("valid file", func(t *testing.T) {
		successes := reloads(t, "success")
		writeFile(t, f.path, issuerConfig(clusterC, anonymousPart))
		if applied, err := f.reloader.Reload(ctx); !applied || err != nil {
			t.Fatalf("Reload = %v, %v", applied, err)
		}
		if got := f.jwt.Issuers(); !reflect.DeepEqual(got, []string{clusterC.URL}) {
			t.Errorf("issuers = %q, want C's", got)
		}
		if got := reloads(t, "success"); got != successes+1 {
			t.Errorf("success reloads = %v, want %v", got, successes+1)
		}
		token := clusterC.PodToken(t, "team", "bot", "bot-1", "cluster-b", time.Hour)
		resp, ok, err := f.jwt.AuthenticateToken(ctx, token)
		if !ok || resp.User.GetName() != "cluster-a:system:serviceaccount:team:bot" {
			t.Fatalf("C's token after the reload: %v, %v", resp, err)
		}
		// Touched, not changed: nothing to do.
		writeFile(t, f.path, issuerConfig(clusterC, anonymousPart))
		if applied, err := f.reloader.Reload(ctx); applied || err != nil {
			t.Errorf("Reload of an unchanged file = %v, %v", applied, err)
		}
	})
}

// Start picks a changed file up from the watch, without waiting for the minute's poll.
func TestReloaderStartWatchesFile(t *testing.T) {
	clusterA := jwttest.Start(t, testkeys.Key(t, testkeys.RSA))
	clusterC := jwttest.Start(t, testkeys.Key(t, testkeys.ECDSAP256))
	f := startReloadFixture(t, issuerConfig(clusterA, ""))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f.reloader.Start(ctx)

	writeFile(t, f.path, issuerConfig(clusterC, ""))
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return reflect.DeepEqual(f.jwt.Issuers(), []string{clusterC.URL}), nil
	})
	if err != nil {
		t.Fatalf("issuers still %q after the file changed: %v", f.jwt.Issuers(), err)
	}
}
