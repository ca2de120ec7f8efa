package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/idplane/idplane/internal/serviceaccount/externalsigner/signertest"
)

// serveExternalSigner serves the Go test signer from the test process, on a short socket path
// the server process connects to.
func serveExternalSigner(t *testing.T) (*signertest.Signer, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "sig")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	signer, err := signertest.New()
	if err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "signer.sock")
	if err := signer.Serve(socket); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(signer.Stop)
	return signer, socket
}

// TestExternalSignerTokens runs the server with --service-account-signing-endpoint: kubectl's
// tokens are signed by the external signer, verify with the key set the server publishes and
// authenticate; with the signer gone, TokenRequest fails with a 500 within the request timeout
// while the tokens already issued keep authenticating.
func TestExternalSignerTokens(t *testing.T) {
	t.Parallel()
	signer, socket := serveExternalSigner(t)
	const requestTimeout = 30 * time.Second
	s := startServer(t, "--service-account-signing-endpoint", socket, "--request-timeout", requestTimeout.String())
	s.ensureServiceAccount(t, "default", "bot")

	token := strings.TrimSpace(s.kubectl(t, "create", "token", "bot"))
	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatalf("kubectl create token printed %q: %v", token, err)
	}
	if kid := jws.Signatures[0].Header.KeyID; kid != signer.CurrentKeyID() {
		t.Fatalf("token names key %q, want the signer's %q", kid, signer.CurrentKeyID())
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal([]byte(s.kubectl(t, "get", "--raw", "/openid/v1/jwks")), &set); err != nil {
		t.Fatal(err)
	}
	keys := set.Key(signer.CurrentKeyID())
	if len(keys) != 1 {
		t.Fatalf("the published key set does not hold the signer's key: %+v", set)
	}
	if _, err := jws.Verify(keys[0].Key); err != nil {
		t.Fatalf("token does not verify with the published key: %v", err)
	}
	asBot := s.tokenKubeconfig(t, token)
	whoami := func() (string, error) {
		return s.kubectlAs(asBot, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	}
	if out, err := whoami(); err != nil || out != "system:serviceaccount:default:bot" {
		t.Fatalf("kubectl auth whoami with the token: %q, %v", out, err)
	}

	signer.Stop()
	start := time.Now()
	out, err := s.kubectlErr("create", "token", "bot")
	if took := time.Since(start); took > requestTimeout {
		t.Fatalf("TokenRequest with the signer down took %v, beyond the request timeout", took)
	}
	if err == nil || !strings.Contains(out, "Internal error occurred") || !strings.Contains(out, "external signer") {
		t.Fatalf("kubectl create token with the signer down: %v\n%s", err, out)
	}
	if out, err := whoami(); err != nil || out != "system:serviceaccount:default:bot" {
		t.Fatalf("an issued token with the signer down: %q, %v", out, err)
	}
}

// TestExternalSignerMaximumRefused checks that the server refuses to start with a maximum token
// lifetime beyond the signer's, saying so.
func TestExternalSignerMaximumRefused(t *testing.T) {
	t.Parallel()
	_, socket := serveExternalSigner(t) // signs tokens of up to a day
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, idplaneBin, "server", "--data-dir", t.TempDir(), "--secure-port=0",
		"--service-account-signing-endpoint", socket, "--service-account-max-token-expiration", "48h").CombinedOutput()
	if exitCode(err) != 1 || !strings.Contains(string(out), "--service-account-max-token-expiration cannot be set longer than the token expiration supported by --service-account-signing-endpoint: 48h0m0s > 24h0m0s") {
		t.Fatalf("idplane server with a maximum beyond the signer's: %v\n%s", err, out)
	}
}
