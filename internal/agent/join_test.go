package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/idplane/idplane/internal/agent/discovery"
)

// TestRunRefusesJoinSettings: a way to join the agent cannot use is refused before anything is
// written or asked of a server.
func TestRunRefusesJoinSettings(t *testing.T) {
	const token = "abcdef.0123456789abcdef"
	cases := []struct {
		name   string
		config Config
		want   string
	}{
		{"a bootstrap kubeconfig and a token", Config{BootstrapKubeconfig: "bootstrap.kubeconfig",
			Discovery: &discovery.Config{Server: "https://192.0.2.1:6443", Token: token, UnsafeSkipCAVerification: true}}, "exclude each other"},
		{"a token without the CA hash", Config{Discovery: &discovery.Config{Server: "https://192.0.2.1:6443", Token: token}}, "needs the hash of the cluster CA"},
		{"a token without a server", Config{Discovery: &discovery.Config{Token: token, CACertHashes: []string{"sha256:" + strings.Repeat("ab", 32)}}}, "server URL is required"},
		{"a hash without a token", Config{Discovery: &discovery.Config{Server: "https://192.0.2.1:6443", CACertHashes: []string{"sha256:" + strings.Repeat("ab", 32)}}}, "bootstrap token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.config.NodeName, tc.config.RootDir = "node-a", t.TempDir()
			err := Run(context.Background(), tc.config)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
