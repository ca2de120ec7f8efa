package kubeconfig

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

var creds = Credentials{Server: "https://127.0.0.1:40001", CAPEM: []byte("ca"), CertPEM: []byte("cert"), KeyPEM: []byte("key")}

// TestUpdate: idplane's own entries are rewritten with the new URL and credentials; what a user
// added (kubectl config set-credentials, set-context, use-context) stays.
func TestUpdate(t *testing.T) {
	cases := []struct {
		name        string
		existing    string // "": no file
		wantCurrent string
		wantUsers   []string
	}{
		{"no file", "", "idplane", []string{"idplane"}},
		{"empty file", "\n", "idplane", []string{"idplane"}},
		{"idplane's own, stale URL, a chosen namespace", `
apiVersion: v1
kind: Config
clusters: [{name: idplane, cluster: {server: "https://127.0.0.1:39999"}}]
users: [{name: idplane, user: {token: stale}}]
contexts: [{name: idplane, context: {cluster: elsewhere, user: someone, namespace: team}}]
current-context: idplane
`, "idplane", []string{"idplane"}},
		{"a user's additions, current context theirs", `
apiVersion: v1
kind: Config
clusters: [{name: idplane, cluster: {server: "https://127.0.0.1:39999"}}]
users:
- {name: idplane, user: {token: stale}}
- {name: alice, user: {client-certificate: alice.crt, client-key: alice.key}}
contexts:
- {name: idplane, context: {cluster: idplane, user: idplane}}
- {name: alice, context: {cluster: idplane, user: alice, namespace: team}}
current-context: alice
preferences: {}
`, "alice", []string{"alice", "idplane"}},
		{"current context names nothing", `
apiVersion: v1
kind: Config
users: [{name: bob, user: {token: b}}]
current-context: gone
`, "idplane", []string{"bob", "idplane"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "admin.kubeconfig")
			if tc.existing != "" {
				if err := os.WriteFile(path, []byte(tc.existing), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := Update(path, "idplane", creds); err != nil {
				t.Fatalf("Update: %v", err)
			}
			cfg, err := clientcmd.LoadFromFile(path)
			if err != nil {
				t.Fatalf("reading the result: %v", err)
			}
			if cfg.CurrentContext != tc.wantCurrent {
				t.Errorf("current context %q, want %q", cfg.CurrentContext, tc.wantCurrent)
			}
			var users []string
			for name := range cfg.AuthInfos {
				users = append(users, name)
			}
			if strings.Join(sorted(users), ",") != strings.Join(tc.wantUsers, ",") {
				t.Errorf("users %v, want %v", sorted(users), tc.wantUsers)
			}
			if c := cfg.Clusters["idplane"]; c == nil || c.Server != creds.Server || string(c.CertificateAuthorityData) != "ca" {
				t.Errorf("cluster idplane = %+v, want the new server and CA", c)
			}
			if u := cfg.AuthInfos["idplane"]; u == nil || u.Token != "" || string(u.ClientCertificateData) != "cert" {
				t.Errorf("user idplane = %+v, want the client certificate alone", u)
			}
			if a := cfg.AuthInfos["alice"]; a != nil && (a.ClientCertificate != "alice.crt" || a.ClientKey != "alice.key") {
				t.Errorf("user alice changed: %+v (relative paths must stay as written)", a)
			}
			if c := cfg.Contexts["idplane"]; c == nil || c.Cluster != "idplane" || c.AuthInfo != "idplane" ||
				(strings.Contains(tc.name, "chosen namespace") && c.Namespace != "team") {
				t.Errorf("context idplane = %+v, want cluster and user idplane, the namespace kept", c)
			}
			if c := cfg.Contexts["alice"]; c != nil && c.Namespace != "team" {
				t.Errorf("context alice changed: %+v", c)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want 0600", fi.Mode().Perm())
			}
		})
	}
}

// TestUpdateUnreadable: a file that does not parse is left as it is, and the error names it.
func TestUpdateUnreadable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admin.kubeconfig")
	const garbage = "clusters: {not: [a list\n"
	if err := os.WriteFile(path, []byte(garbage), 0o600); err != nil {
		t.Fatal(err)
	}
	err := Update(path, "idplane", creds)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Update of an unreadable file: %v, want an error naming %s", err, path)
	}
	if got, _ := os.ReadFile(path); string(got) != garbage {
		t.Errorf("the unreadable file was changed to %q", got)
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
