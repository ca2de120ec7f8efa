package main

import (
	"context"
	"crypto"
	"crypto/x509"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/idplane/idplane/bench/internal/promtext/promtexttest"
	"github.com/idplane/idplane/internal/agent/objects"
	"github.com/idplane/idplane/internal/pki"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T, c config)
	}{
		{name: "defaults", args: []string{"-idplane", "/bin/idplane"}, check: func(t *testing.T, c config) {
			if c.replicas != 1 || !slices.Equal(c.levels, []int{50, 100, 200}) || c.podsPerNode != 10 {
				t.Errorf("replicas %d, levels %v, pods per node %d", c.replicas, c.levels, c.podsPerNode)
			}
			if c.threshold != 100*time.Millisecond || c.leaseDuration != 40*time.Second || c.statusReport != 5*time.Minute {
				t.Errorf("threshold %s, lease %s, status report %s", c.threshold, c.leaseDuration, c.statusReport)
			}
			if c.gcPercent != 0 {
				t.Errorf("client GC percent %d, want 0 (the environment's GOGC)", c.gcPercent)
			}
		}},
		{name: "the tool's own GOGC", args: []string{"-idplane", "x", "-client-gc-percent", "400"}, check: func(t *testing.T, c config) {
			if c.gcPercent != 400 {
				t.Errorf("client GC percent %d", c.gcPercent)
			}
		}},
		{name: "negative GOGC", args: []string{"-idplane", "x", "-client-gc-percent", "-1"}, wantErr: "-client-gc-percent must not be negative"},
		{name: "levels and replicas", args: []string{"-idplane", "x", "-replicas", "3", "-nodes", "50, 400", "-pods-per-node", "30"}, check: func(t *testing.T, c config) {
			if c.replicas != 3 || !slices.Equal(c.levels, []int{50, 400}) || c.podsPerNode != 30 {
				t.Errorf("replicas %d, levels %v, pods per node %d", c.replicas, c.levels, c.podsPerNode)
			}
		}},
		{name: "no extra token", args: []string{"-idplane", "x", "-token-expiration", "0"}},
		{name: "binary required", args: nil, wantErr: "-idplane is required, or -kubeconfig"},
		{name: "foreign server", args: []string{"-kubeconfig", "k", "-client-ca-cert", "c", "-client-ca-key", "k"}, check: func(t *testing.T, c config) {
			if c.kubeconfig != "k" || c.clientCACert != "c" || c.clientCAKey != "k" || c.idplane != "" {
				t.Errorf("kubeconfig %q, client CA %q %q, idplane %q", c.kubeconfig, c.clientCACert, c.clientCAKey, c.idplane)
			}
		}},
		{name: "foreign server without its CA", args: []string{"-kubeconfig", "k", "-client-ca-cert", "c"}, wantErr: "needs -client-ca-cert and -client-ca-key"},
		{name: "start and load at once", args: []string{"-idplane", "x", "-kubeconfig", "k", "-client-ca-cert", "c", "-client-ca-key", "k"}, wantErr: "exclude each other"},
		{name: "client CA without a foreign server", args: []string{"-idplane", "x", "-client-ca-key", "k"}, wantErr: "go with -kubeconfig"},
		{name: "replicas of a foreign server", args: []string{"-kubeconfig", "k", "-client-ca-cert", "c", "-client-ca-key", "k", "-replicas", "3"}, wantErr: "not with -kubeconfig"},
		{name: "two replicas", args: []string{"-idplane", "x", "-replicas", "2"}, wantErr: "only 1 or 3"},
		{name: "bad level", args: []string{"-idplane", "x", "-nodes", "10,zero"}, wantErr: `"zero" is not a positive number`},
		{name: "token shorter than the API allows", args: []string{"-idplane", "x", "-token-expiration", "300"}, wantErr: "600 s to 2^32 s"},
		{name: "no pods", args: []string{"-idplane", "x", "-pods-per-node", "0"}, wantErr: "-pods-per-node must be at least 1"},
		{name: "zero window", args: []string{"-idplane", "x", "-duration", "0s"}, wantErr: "-duration must be positive"},
		{name: "lease too short to quarter", args: []string{"-idplane", "x", "-lease-duration", "2s"}, wantErr: "at least 4s"},
		{name: "profiles on loopback", args: []string{"-idplane", "x", "-pprof-addr", "127.0.0.1:0"}, check: func(t *testing.T, c config) {
			if c.pprofAddr != "127.0.0.1:0" {
				t.Errorf("pprof address %q", c.pprofAddr)
			}
		}},
		{name: "profiles on every interface", args: []string{"-idplane", "x", "-pprof-addr", ":6060"}, wantErr: "a loopback IP address only"},
		{name: "profiles on a host name", args: []string{"-idplane", "x", "-pprof-addr", "localhost:6060"}, wantErr: "a loopback IP address only"},
		{name: "profiles on a routable address", args: []string{"-idplane", "x", "-pprof-addr", "192.0.2.1:6060"}, wantErr: "a loopback IP address only"},
		{name: "profiles without a port", args: []string{"-idplane", "x", "-pprof-addr", "127.0.0.1"}, wantErr: "missing port"},
		{name: "stray argument", args: []string{"-idplane", "x", "extra"}, wantErr: "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseFlags(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseFlags(%q) error = %v, want one containing %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseFlags(%q): %v", tt.args, err)
			}
			if tt.check != nil {
				tt.check(t, c)
			}
		})
	}
}

func TestPerNodeKiB(t *testing.T) {
	for _, tt := range []struct {
		growth int64
		nodes  int
		want   *float64
	}{
		{growth: 200 << 20, nodes: 100, want: ptr.To(2048.0)},
		{growth: -(1 << 20), nodes: 1, want: ptr.To(-1024.0)},
		{growth: 1 << 20, nodes: 0, want: nil},
	} {
		got := perNodeKiB(tt.growth, tt.nodes)
		if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
			t.Errorf("perNodeKiB(%d, %d) = %v, want %v", tt.growth, tt.nodes, got, tt.want)
		}
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		method, url, want string
	}{
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", "lease update"},
		{"GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", "lease get"},
		{"POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", "lease create"},
		{"POST", "/api/v1/nodes", "node create"},
		{"GET", "/api/v1/nodes/n1", "node get"},
		{"PATCH", "/api/v1/nodes/n1/status", "node status"},
		{"GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1&watch=true", "pod watch"},
		{"GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1", "pod list"},
		{"PATCH", "/api/v1/namespaces/a/pods/p/status", "pod status"},
		{"GET", "/api/v1/namespaces/a/secrets?fieldSelector=metadata.name%3Ds&watch=1", "secret watch"},
		{"GET", "/api/v1/namespaces/a/secrets/s", "secret get"},
		{"GET", "/api/v1/namespaces/a/configmaps?fieldSelector=metadata.name%3Dc", "configmap list"},
		{"POST", "/api/v1/namespaces/a/serviceaccounts/sa/token", "token request"},
		{"POST", "/apis/certificates.k8s.io/v1beta1/namespaces/a/podcertificaterequests", kindPodCertificateRequest},
		{"GET", "/apis/certificates.k8s.io/v1beta1/namespaces/a/podcertificaterequests?fieldSelector=spec.nodeName%3Dn1&watch=true", "podcertificaterequest watch"},
		{"GET", "/api/v1/namespaces/a", "other get"},
		{"GET", "/readyz", "other get"},
		{"POST", "/apis/authentication.k8s.io/v1/tokenreviews", "other post"},
		{"GET", "/api/v1/namespaces/a/pods/p/log", "other get"},
	}
	for _, tt := range tests {
		u, err := url.Parse(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := classify(tt.method, u); got != tt.want {
			t.Errorf("classify(%s %s) = %q, want %q", tt.method, tt.url, got, tt.want)
		}
	}
}

func TestPlan(t *testing.T) {
	for _, shared := range []int{0, 2} {
		p := plan{nodes: 7, podsPerNode: 3, namespaces: 4, serviceAccounts: 2, sharedObjects: shared, tokenExpiration: 600}
		objects := map[string][]string{}
		for ns := range p.namespaces {
			objects[p.namespace(ns)] = p.objectNames(ns)
		}
		perNamespace := map[string]int{}
		names := map[string]bool{}
		for node := range p.nodes {
			namespaces := map[string]bool{}
			for j := range p.podsPerNode {
				pp := p.pod(node, j)
				if pp.Node != p.nodeName(node) {
					t.Errorf("shared=%d: pod %s is on %s, want %s", shared, pp.Name, pp.Node, p.nodeName(node))
				}
				if names[pp.Namespace+"/"+pp.Name] {
					t.Errorf("shared=%d: pod %s/%s planned twice", shared, pp.Namespace, pp.Name)
				}
				names[pp.Namespace+"/"+pp.Name] = true
				perNamespace[pp.Namespace]++
				namespaces[pp.Namespace] = true
				if !slices.Contains(objects[pp.Namespace], pp.Secret) || !slices.Contains(objects[pp.Namespace], pp.ConfigMap) {
					t.Errorf("shared=%d: pod %s reads %s/%s, not among the objects %v of %s", shared, pp.Name, pp.Secret, pp.ConfigMap, objects[pp.Namespace], pp.Namespace)
				}
				if !slices.Contains([]string{p.serviceAccount(0), p.serviceAccount(1)}, pp.ServiceAccount) {
					t.Errorf("shared=%d: pod %s runs as %s, not a planned service account", shared, pp.Name, pp.ServiceAccount)
				}
			}
			if len(namespaces) != min(p.podsPerNode, p.namespaces) {
				t.Errorf("shared=%d: node %d has pods in %d namespaces, want them spread over %d", shared, node, len(namespaces), min(p.podsPerNode, p.namespaces))
			}
		}
		total := 0
		for ns := range p.namespaces {
			n := perNamespace[p.namespace(ns)]
			total += n
			if n != p.podsInNamespace(ns) {
				t.Errorf("shared=%d: namespace %d holds %d pods, podsInNamespace says %d", shared, ns, n, p.podsInNamespace(ns))
			}
			want := n
			if shared > 0 {
				want = min(shared, n)
			}
			if len(objects[p.namespace(ns)]) != want {
				t.Errorf("shared=%d: namespace %d has %d objects, want %d", shared, ns, len(objects[p.namespace(ns)]), want)
			}
		}
		if total != p.pods() {
			t.Errorf("shared=%d: %d pods planned, want %d", shared, total, p.pods())
		}
	}
}

// The pod as admission leaves it: the planned volumes plus kube-api-access.
func TestPodObjectsAndTokens(t *testing.T) {
	p := plan{nodes: 1, podsPerNode: 1, namespaces: 1, serviceAccounts: 1, tokenExpiration: 600}
	pp := p.pod(0, 0)
	pod := p.podObject(pp)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "kube-api-access-x", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
		},
	}}})
	wantObjects := []objects.Ref{
		{Kind: objects.Secret, Namespace: pp.Namespace, Name: pp.Secret},
		{Kind: objects.ConfigMap, Namespace: pp.Namespace, Name: pp.ConfigMap},
		{Kind: objects.ConfigMap, Namespace: pp.Namespace, Name: "kube-root-ca.crt"},
	}
	if got := objects.PodRefs(pod); !slices.Equal(got, wantObjects) {
		t.Errorf("objects.PodRefs = %v, want %v", got, wantObjects)
	}
	identity := pod.Spec.Volumes[2].Projected.Sources[0].ServiceAccountToken
	if identity == nil || identity.Audience != tokenAudience || *identity.ExpirationSeconds != 600 {
		t.Errorf("identity volume = %+v, want the 600 s %s token", pod.Spec.Volumes[2], tokenAudience)
	}
	p.tokenExpiration = 0
	if got := p.podObject(pp).Spec.Volumes; len(got) != 2 {
		t.Errorf("without -token-expiration the pod has volumes %+v", got)
	}
}

func TestNodeCertificate(t *testing.T) {
	now := time.Now()
	ca, err := pki.EnsureCA(pki.Files{Dir: t.TempDir()}, "test-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := nodeCertificate(ca, "node-7", now)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pki.ParseCertificate(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "system:node:node-7" || !slices.Equal(cert.Subject.Organization, []string{"system:nodes"}) {
		t.Errorf("subject %v, want CN=system:node:node-7, O=system:nodes", cert.Subject)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, CurrentTime: now}); err != nil {
		t.Errorf("the CA does not verify the node's certificate for client auth: %v", err)
	}
	key, err := pki.ParseKey(keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !key.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(cert.PublicKey) {
		t.Error("the key does not match the certificate")
	}
}

// TestScrapeRSS pins what a user sees of a foreign server's RSS; bench/internal/promtext has the
// parser's own table.
func TestScrapeRSS(t *testing.T) {
	tests := []struct {
		name, body string
		status     int
		want       int64
		wantErr    string
	}{
		{name: "gauge among others", body: "# HELP process_resident_memory_bytes Resident memory size in bytes.\n# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes_max 1\nprocess_resident_memory_bytes 1.48135936e+08\ngo_goroutines 12\n", want: 148135936},
		{name: "absent", body: "go_goroutines 12\n", wantErr: "/metrics has no process_resident_memory_bytes"},
		{name: "garbled", body: "process_resident_memory_bytes lots\n", wantErr: `parsing process_resident_memory_bytes in /metrics (line 1): expected float as value, got "lots"`},
		{name: "refused", status: http.StatusForbidden, body: "forbidden\n", wantErr: "reading /metrics"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := scrapeRSS(context.Background(), promtexttest.Client(t, tt.status, tt.body))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("scrapeRSS error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("scrapeRSS = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

// fakeServer answers every request with the status its path asks for.
type fakeServer struct{}

func (fakeServer) RoundTrip(req *http.Request) (*http.Response, error) {
	code := http.StatusOK
	if strings.HasSuffix(req.URL.Path, "/missing") {
		code = http.StatusNotFound
	}
	return &http.Response{StatusCode: code, Status: http.StatusText(code), Body: io.NopCloser(strings.NewReader("{}")), Request: req}, nil
}

func TestTransportRecords(t *testing.T) {
	rec := newRecorder()
	rec.setPhase(phaseSteady)
	tr := &transport{next: fakeServer{}, rec: rec}
	do := func(ctx context.Context, method, path string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, "https://127.0.0.1"+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	ctx := context.Background()
	do(ctx, "GET", "/api/v1/namespaces/a/secrets/s")
	do(ctx, "GET", "/api/v1/namespaces/a/secrets/missing")
	do(ctx, "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/missing")
	do(ctx, "GET", "/api/v1/namespaces/a/secrets?watch=true")
	rec.setPhase(phaseDone)
	do(ctx, "GET", "/api/v1/nodes/n")

	all, kinds := rec.summary(phaseSteady, time.Second)
	byKind := map[string]kindFigures{}
	for _, k := range kinds {
		byKind[k.Kind] = k
	}
	if got := byKind["secret get"]; got.Requests != 2 || got.Errors != 1 || !strings.Contains(got.FirstErr, "Not Found: GET /api/v1/namespaces/a/secrets/missing") {
		t.Errorf("secret get = %+v, want 2 requests, 1 error naming the request", got)
	}
	if got := byKind["lease get"]; got.Requests != 1 || got.Errors != 0 {
		t.Errorf("lease get = %+v, want its expected 404 counted as a success", got)
	}
	if got := byKind["secret watch"]; !got.Watch || got.Requests != 1 {
		t.Errorf("secret watch = %+v, want one watch", got)
	}
	if _, ok := byKind["node get"]; ok {
		t.Error("a request after the steady phase was filed under it")
	}
	if all.Requests != 3 || all.Errors != 1 || all.RPS != 3 {
		t.Errorf("all = %+v, want the 3 requests that are not watches and their error", all)
	}
	if errs := rec.errorsSeen(); len(errs) != 1 || errs[0].Message != "secret get: HTTP Not Found" || errs[0].Count != 1 {
		t.Errorf("distinct errors = %+v", errs)
	}
}

func TestVerdict(t *testing.T) {
	kinds := func(ks ...kindFigures) phaseFigures {
		return phaseFigures{All: kindFigures{Kind: "all", Requests: 10}, Kinds: ks}
	}
	tests := []struct {
		name   string
		steady phaseFigures
		pass   bool
		reason string
	}{
		{name: "fast", steady: kinds(kindFigures{Kind: "lease update", P99Ms: 20}), pass: true},
		{name: "a slow kind fails", steady: kinds(kindFigures{Kind: "lease update", P99Ms: 20}, kindFigures{Kind: "token request", P99Ms: 100}), reason: "token request p99 100.0 ms"},
		{name: "slow watches do not count", steady: kinds(kindFigures{Kind: "pod watch", Watch: true, P99Ms: 500}), pass: true},
		{name: "errors fail, also of watches", steady: kinds(kindFigures{Kind: "pod watch", Watch: true, Errors: 2}), reason: "2 errors in pod watch"},
		{name: "no requests fail", steady: phaseFigures{}, reason: "no requests"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pass, reason := verdict(tt.steady, 100*time.Millisecond)
			if pass != tt.pass || !strings.Contains(reason, tt.reason) {
				t.Errorf("verdict = %t, %q; want %t, containing %q", pass, reason, tt.pass, tt.reason)
			}
		})
	}
}

func TestSlowSeconds(t *testing.T) {
	rec := newRecorder()
	rec.setPhase(phaseSteady)
	begin := time.Now()
	rec.observe("lease update", 5*time.Millisecond, failure{})
	rec.observe("lease update", 300*time.Millisecond, failure{})
	rec.observe("token request", 2*time.Second, failure{})
	rec.observe("pod watch", time.Second, failure{})
	got := rec.slow(phaseSteady, begin, 100*time.Millisecond)
	if len(got) != 1 || got[0].Second != 0 || got[0].Requests != 2 || got[0].Kinds["lease update"] != 1 || got[0].Kinds["token request"] != 1 {
		t.Errorf("slow = %+v, want the two slow requests that are not watches in second 0", got)
	}
	if got := rec.slow(phaseSteady, begin, 5*time.Second); len(got) != 0 {
		t.Errorf("slow above 5 s = %+v, want none", got)
	}
}

// Readiness counts only the level's own nodes: on a foreign server other levels' names remain.
func TestPlanOwnsNode(t *testing.T) {
	p := plan{prefix: "nodesim-abc123", nodes: 3}
	for node, want := range map[string]bool{
		"nodesim-abc123-00000": true, "nodesim-abc123-00002": true,
		"nodesim-abc123-00003": false, "nodesim-00000": false, "nodesim-ffffff-00001": false,
		"nodesim-abc123-1": false, "": false,
	} {
		if got := p.ownsNode(node); got != want {
			t.Errorf("ownsNode(%q) = %t, want %t", node, got, want)
		}
	}
	if got := (plan{nodes: 1}).nodeName(0); got != "nodesim-00000" {
		t.Errorf("default node name %q, want nodesim-00000", got)
	}
}
