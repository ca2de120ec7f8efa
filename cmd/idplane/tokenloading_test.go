package main

import (
	"bytes"
	"context"
	"encoding/pem"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestTokenCreateFindsKubeconfigAsKubectl: the admin kubeconfig is found as kubectl finds one:
// --kubeconfig, else $KUBECONFIG, else ~/.kube/config; --context picks a context; with none the
// error says what to pass. Never ./idplane-data/admin.kubeconfig relative to wherever it runs.
func TestTokenCreateFindsKubeconfigAsKubectl(t *testing.T) {
	sink := newSecretSink(t)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: sink.Certificate().Raw})
	// Context "sink" reaches the test server; the current context "elsewhere" reaches nothing.
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["sink"] = &clientcmdapi.Cluster{Server: sink.URL, CertificateAuthorityData: caPEM}
	cfg.Clusters["elsewhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1", CertificateAuthorityData: caPEM}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "admin"}
	cfg.Contexts["sink"] = &clientcmdapi.Context{Cluster: "sink", AuthInfo: "u"}
	cfg.Contexts["elsewhere"] = &clientcmdapi.Context{Cluster: "elsewhere", AuthInfo: "u"}
	cfg.CurrentContext = "sink"
	admin := filepath.Join(t.TempDir(), "admin.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, admin); err != nil {
		t.Fatal(err)
	}
	cfg.CurrentContext = "elsewhere"
	elsewhere := filepath.Join(t.TempDir(), "elsewhere.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, elsewhere); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir() // no .kube/config
	t.Setenv("HOME", home)
	t.Chdir(t.TempDir()) // no idplane-data either

	cases := []struct {
		name       string
		kubeconfig string // $KUBECONFIG
		args       []string
		err        string // "": a token is created
	}{
		{"$KUBECONFIG", admin, nil, ""},
		{"$KUBECONFIG, a list", filepath.Join(home, "missing") + string(filepath.ListSeparator) + admin, nil, ""},
		{"--kubeconfig wins over $KUBECONFIG", elsewhere, []string{"--kubeconfig", admin}, ""},
		{"--context", elsewhere, []string{"--context", "sink"}, ""},
		{"current context unreachable", elsewhere, nil, "creating bootstrap token secret"},
		{"nothing found", "", nil, "pass --kubeconfig or set KUBECONFIG"},
		{"--kubeconfig missing", "", []string{"--kubeconfig", filepath.Join(home, "missing")}, "missing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.kubeconfig)
			before := len(sink.secrets())
			cmd := tokenCreateCommand()
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			var stdout bytes.Buffer
			cmd.SetOut(&stdout)
			cmd.SetErr(&bytes.Buffer{})
			cmd.SetArgs(append(tc.args, "--ttl", "1m"))
			err := cmd.ExecuteContext(context.Background())
			created := len(sink.secrets()) - before
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				if created != 0 || stdout.Len() != 0 {
					t.Errorf("failed, yet created %d secrets and printed %q", created, stdout.String())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if created != 1 {
				t.Fatalf("created %d secrets, want 1", created)
			}
			out, err := clientcmd.Load(stdout.Bytes())
			if err != nil {
				t.Fatalf("output is not a kubeconfig: %v", err)
			}
			if c := out.Clusters[out.Contexts[out.CurrentContext].Cluster]; c == nil || c.Server != sink.URL {
				t.Errorf("bootstrap kubeconfig names %+v, want the server %s", c, sink.URL)
			}
		})
	}
}
