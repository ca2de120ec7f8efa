package serviceaccount

import (
	"bytes"
	"context"
	"flag"
	"os"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
	"k8s.io/klog/v2"
)

// TestUnknownIssuerIsLogged: a token of another issuer (say, of a server that has since moved)
// is not an error, so the request's log says only "invalid bearer token"; at -v=2 the
// authenticator says why it did not take the token.
func TestUnknownIssuerIsLogged(t *testing.T) {
	var buf bytes.Buffer
	flags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(flags)
	set := func(name, value string) {
		if err := flags.Set(name, value); err != nil {
			t.Fatal(err)
		}
	}
	set("logtostderr", "false")
	set("v", "2")
	klog.SetOutput(&buf)
	t.Cleanup(func() {
		set("v", "0")
		set("logtostderr", "true")
		klog.SetOutput(os.Stderr)
	})

	f := newFixture(t, ecKey(t))
	const moved = "https://127.0.0.1:40001"
	raw := signRaw(t, f.keys.Signing, f.keys.signingKey().ID, jose.ES256, bound(moved, []string{testIssuer}, testNow))
	resp, ok, err := f.authenticator(liveObjects()).AuthenticateToken(context.Background(), raw)
	if resp != nil || ok || err != nil {
		t.Fatalf("token of another issuer: %v, %v, %v; want no answer and no error", resp, ok, err)
	}
	klog.Flush()
	for _, want := range []string{"issuer is not accepted", `issuer="` + moved + `"`, testIssuer} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log %q lacks %q", buf.String(), want)
		}
	}
}
