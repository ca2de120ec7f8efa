package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idplane/idplane/internal/apiserver"
	"github.com/idplane/idplane/internal/pki"
)

// The simulator loads a server it did not start, given only its admin kubeconfig and client CA,
// and its nodes are idplane's agent: the pods' projected tokens land in the nodes' scratch roots,
// written by the agent's own volume code.
func TestLevelAgainstForeignServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and runs a level")
	}
	ctx, srv, o := startServer(t)
	files := pki.Files{Dir: filepath.Join(o.DataDir, "pki")}
	scratch := t.TempDir()
	cfg, err := parseFlags([]string{
		"-kubeconfig", srv.AdminKubeconfig, "-client-ca-cert", files.CACert(), "-client-ca-key", files.CAKey(),
		"-scratch-root", scratch, "-nodes", "2", "-pods-per-node", "2", "-namespaces", "2", "-service-accounts", "1",
		"-ramp", "0s", "-settle", "0s", "-duration", "3s", "-ready-timeout", "1m", "-setup-timeout", "1m",
		// Renewals every second, so the short window has lease updates to measure.
		"-lease-duration", "4s",
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runLevel(ctx, cfg, 2)
	if err != nil {
		t.Fatalf("runLevel: %v", err)
	}
	var out strings.Builder
	printLevel(&out, res)
	t.Log("\n" + out.String())
	if !strings.Contains(out.String(), "KiB per node") {
		t.Errorf("the report does not give the server's memory per node:\n%s", out.String())
	}
	if res.Ready != 2 || res.Nodes != 2 || res.Pods != 4 {
		t.Fatalf("ready %d of %d nodes, %d pods; want 2 of 2, 4 pods (verdict %q, errors %+v)", res.Ready, res.Nodes, res.Pods, res.Verdict, res.Errors)
	}
	if !strings.HasPrefix(res.Target, "https://127.0.0.1:") || res.Replicas != 0 {
		t.Errorf("target %q, replicas %d; want the foreign server's URL", res.Target, res.Replicas)
	}
	// Per node: its pods and its nodereadables, which idplane serves.
	if res.Watches != 4 {
		t.Errorf("open watches %d, want each node's pods and nodereadables", res.Watches)
	}
	kinds := func(ph phaseFigures) map[string]kindFigures {
		m := map[string]kindFigures{}
		for _, k := range ph.Kinds {
			m[k.Kind] = k
		}
		return m
	}
	startup := kinds(res.Startup)
	for _, k := range []string{"node create", "token request", "pod status", "pod watch", "nodereadable watch"} {
		if startup[k].Requests == 0 {
			t.Errorf("start-up has no %q requests: %+v", k, res.Startup.Kinds)
		}
	}
	if tr := startup["token request"]; tr.Requests < 4 || tr.P50Ms <= 0 || tr.P99Ms < tr.P50Ms {
		t.Errorf("token requests %+v, want at least one per pod with p50 <= p99", tr)
	}
	if lu := kinds(res.Steady)["lease update"]; lu.Requests == 0 || lu.RPS <= 0 {
		t.Errorf("steady lease updates %+v, want the agents' renewals", lu)
	}
	if res.ServerRSSPerNodeKiB == nil || res.ServerRSSPerWatchKiB == nil || len(res.Servers) != 1 || res.Servers[0].RSSMiB <= 0 {
		t.Errorf("server memory per node %v, per watch %v, servers %+v (%s); want them from /metrics", res.ServerRSSPerNodeKiB, res.ServerRSSPerWatchKiB, res.Servers, res.MemoryNote)
	}
	// The server shares this process with the agents, so the figure holds both sides: only that
	// it is measured, and the server counted the nodes' watches, is checked here.
	if h := res.Held; h == nil || h.ServerWatches < float64(res.Watches) || h.WatchesPerNode != float64(res.Watches)/2 || h.GoalRatio <= 1 ||
		!strings.Contains(out.String(), "server live memory held by the nodes' connections and watches") {
		t.Errorf("live memory held by the nodes: %+v (%s); want it measured, with at least the nodes' %d watches counted by the server", h, res.HeldNote, res.Watches)
	}
	if res.ClientRSSPerNodeKiB == nil || res.ClientIdleRSSMiB <= 0 || res.ClientGoroutines <= 0 || !strings.Contains(out.String(), "KiB per simulated node") {
		t.Errorf("the tool's own memory: idle %.0f MiB, per node %v KiB, %d goroutines; want all measured and reported", res.ClientIdleRSSMiB, res.ClientRSSPerNodeKiB, res.ClientGoroutines)
	}
	if res.Servers[0].CPUPercent != nil {
		t.Errorf("server CPU %v of a process the tool does not know", *res.Servers[0].CPUPercent)
	}

	tokens, _ := filepath.Glob(filepath.Join(scratch, "level-2", "*", "pods", "*", "volumes", "identity", "token"))
	if len(tokens) != 4 {
		t.Fatalf("identity tokens in the scratch root: %v, want one per pod", tokens)
	}
	for _, path := range tokens {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(string(b), ".")
		if len(parts) != 3 {
			t.Fatalf("%s is not a JWT", path)
		}
		payload, err := base64.RawURLEncoding.DecodeString(parts[1])
		if err != nil {
			t.Fatal(err)
		}
		var claims struct {
			Aud any    `json:"aud"`
			Sub string `json:"sub"`
		}
		if err := json.Unmarshal(payload, &claims); err != nil {
			t.Fatal(err)
		}
		// A single audience may be a string or a list of one.
		if (claims.Aud != tokenAudience && !slices.Equal(toStrings(claims.Aud), []string{tokenAudience})) || !strings.HasPrefix(claims.Sub, "system:serviceaccount:nodesim-") {
			t.Errorf("%s: audiences %v, subject %q", path, claims.Aud, claims.Sub)
		}
	}
}

// startServer starts an in-process server on an ephemeral port, stopped when the test ends, and
// returns a context that ends then too.
func startServer(t *testing.T) (context.Context, *apiserver.Server, *apiserver.Options) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	o := apiserver.NewOptions()
	o.DataDir = t.TempDir()
	o.SecurePort = 0
	srv, err := apiserver.Start(ctx, o)
	if err != nil {
		cancel()
		t.Fatalf("starting the server: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := srv.Wait(); err != nil {
			t.Errorf("server stopped with error: %v", err)
		}
	})
	// The fleet joins a ready server, so the figures do not include nodes asking discovery
	// again while the authorizers warm up (objects.DefaultWarmUp).
	if err := srv.WaitReady(ctx); err != nil {
		t.Fatalf("server not ready: %v", err)
	}
	return ctx, srv, o
}

func toStrings(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, e := range list {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}
