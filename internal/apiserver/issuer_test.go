package apiserver

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idplane/idplane/internal/pki"
)

// TestDefaultIssuerIsRecorded: without --service-account-issuer the first start's URL is
// recorded beside the signing key and stays the issuer when the server comes back on another
// port; a flag wins and leaves the record alone.
func TestDefaultIssuerIsRecorded(t *testing.T) {
	o := NewOptions()
	o.DataDir = t.TempDir()
	files := pki.Files{Dir: filepath.Join(o.DataDir, "pki")}
	if _, err := pki.EnsureServiceAccountKey(files); err != nil {
		t.Fatal(err)
	}
	issuers := func(o *Options, url string) []string {
		t.Helper()
		ts, err := serviceAccountTokens(o, files, url)
		if err != nil {
			t.Fatalf("serviceAccountTokens(%s): %v", url, err)
		}
		return ts.issuers
	}
	const first, second = "https://127.0.0.1:40001", "https://127.0.0.1:40002"
	if got := issuers(o, first); !slices.Equal(got, []string{first}) {
		t.Fatalf("first start: issuers %v, want [%s]", got, first)
	}
	if got := issuers(o, second); !slices.Equal(got, []string{first}) {
		t.Errorf("restart on another port: issuers %v, want the recorded [%s]", got, first)
	}
	if ts, _ := serviceAccountTokens(o, files, second); !slices.Equal(ts.audiences, []string{first}) {
		t.Errorf("restart on another port: API audiences %v, want the recorded issuer", ts.audiences)
	}

	explicit := NewOptions()
	explicit.DataDir = o.DataDir
	explicit.ServiceAccounts.Issuers = []string{"https://idplane.example.com"}
	if got := issuers(explicit, second); !slices.Equal(got, explicit.ServiceAccounts.Issuers) {
		t.Errorf("with the flag: issuers %v, want %v", got, explicit.ServiceAccounts.Issuers)
	}
	if data, _ := os.ReadFile(filepath.Join(files.Dir, issuerFile)); strings.TrimSpace(string(data)) != first {
		t.Errorf("record after a start with the flag: %q, want %s", data, first)
	}

	if err := os.WriteFile(filepath.Join(files.Dir, issuerFile), []byte("\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := serviceAccountTokens(o, files, second); err == nil || !strings.Contains(err.Error(), issuerFile) {
		t.Errorf("empty record: %v, want an error naming the file", err)
	}
}
