package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/idplane/idplane/internal/jointoken"
	"github.com/idplane/idplane/internal/pubkeypin"
)

// secretSink is an API server that accepts secret creations in kube-system and keeps them.
type secretSink struct {
	*httptest.Server
	mu      sync.Mutex
	created []*corev1.Secret
}

func newSecretSink(t *testing.T) *secretSink {
	s := &secretSink{}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/v1/namespaces/kube-system/secrets" {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, &corev1.Secret{})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		secret := obj.(*corev1.Secret)
		s.mu.Lock()
		s.created = append(s.created, secret)
		s.mu.Unlock()
		w.Header().Set("Content-Type", runtime.ContentTypeJSON)
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(secret)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *secretSink) secrets() []*corev1.Secret {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*corev1.Secret(nil), s.created...)
}

// TestTokenCreate: the flags go into the token's secret, bad ones are refused before anything is
// written, and standard output is the bootstrap kubeconfig alone, whatever the flags.
func TestTokenCreate(t *testing.T) {
	cases := []struct {
		name string
		args []string
		data map[string]string // idplane keys the secret holds
		err  string            // "": none
		join bool              // the output is the join command
	}{
		{"unbound, as upstream", nil, map[string]string{}, "", false},
		{"bound to a node", []string{"--node-name", "node-a"}, map[string]string{"idplane.io.node-name": "node-a"}, "", false},
		{"bound, single use", []string{"--node-name", "node-a", "--single-use"},
			map[string]string{"idplane.io.node-name": "node-a", "idplane.io.single-use": "true"}, "", false},
		{"single use without a node", []string{"--single-use"}, nil, "single-use token must be bound to a node", false},
		{"not a node name", []string{"--node-name", "Node_A"}, nil, `node name "Node_A" is not a valid node name`, false},
		{"join command", []string{"--print-join-command"}, map[string]string{}, "", true},
		{"join command, bound", []string{"--print-join-command", "--node-name", "node-a"}, map[string]string{"idplane.io.node-name": "node-a"}, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sink := newSecretSink(t)
			caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: sink.Certificate().Raw})
			cfg := clientcmdapi.NewConfig()
			cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: sink.URL, CertificateAuthorityData: caPEM}
			cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "admin"}
			cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
			cfg.CurrentContext = "x"
			admin := filepath.Join(t.TempDir(), "admin.kubeconfig")
			if err := clientcmd.WriteToFile(*cfg, admin); err != nil {
				t.Fatal(err)
			}

			cmd := tokenCreateCommand()
			// As under main's root command, which prints the error alone.
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			var stdout, stderr bytes.Buffer
			cmd.SetOut(&stdout)
			cmd.SetErr(&stderr)
			cmd.SetArgs(append([]string{"--kubeconfig", admin}, tc.args...))
			err := cmd.ExecuteContext(context.Background())
			created := sink.secrets()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				if len(created) != 0 || stdout.Len() != 0 {
					t.Errorf("refused, yet created %d secrets and printed %q", len(created), stdout.String())
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\nstderr: %s", err, stderr.String())
			}
			if len(created) != 1 {
				t.Fatalf("created %d secrets, want 1", len(created))
			}
			s := created[0]
			for _, k := range []string{jointoken.NodeNameKey, jointoken.SingleUseKey} {
				if got, want := s.Data[k], tc.data[k]; string(got) != want {
					t.Errorf("data[%s] = %q, want %q", k, got, want)
				}
			}
			tok := jointoken.Token{ID: string(s.Data["token-id"]), Secret: string(s.Data["token-secret"])}
			if tc.join {
				want := "idplane agent --server " + sink.URL + " --token " + tok.String() + " --discovery-token-ca-cert-hash " + pubkeypin.Hash(sink.Certificate())
				if n := tc.data[jointoken.NodeNameKey]; n != "" {
					want += " --node-name " + n
				}
				if stdout.String() != want+"\n" {
					t.Errorf("stdout %q, want the join command %q", stdout.String(), want)
				}
				return
			}
			want, err := jointoken.Kubeconfig(jointoken.Cluster{Server: sink.URL, CAPEM: caPEM}, tok)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(stdout.Bytes(), want) {
				t.Errorf("stdout\n%s\nwant exactly the bootstrap kubeconfig\n%s", stdout.String(), want)
			}
		})
	}
}
