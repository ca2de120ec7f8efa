package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/idplane/idplane/internal/testing/etcdcluster"
)

// replicaRequestTimeout is the replicas' --request-timeout: short, so a request etcd cannot
// answer comes back as a 5xx within a few seconds.
const replicaRequestTimeout = 5 * time.Second

// unansweredAfter is how long the fault tests wait for an answer: the request timeout plus a
// margin for a loaded machine. A request still unanswered then is a server that hangs.
const unansweredAfter = replicaRequestTimeout + 5*time.Second

// TestReplicasOnEtcdCluster runs three `idplane server` replicas, sharing one pki/, on a
// three-member etcd cluster reached over mutual TLS, and checks that they act as one server, also
// while etcd members fail.
func TestReplicasOnEtcdCluster(t *testing.T) {
	// Not parallel: it runs three servers (every slot) and three etcd members, and it stops etcd
	// members on purpose, which a machine busy with other tests would only make slower to observe.
	if testing.Short() {
		t.Skip("starts an etcd cluster and idplane server processes; skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cluster, err := etcdcluster.Start(ctx, t.TempDir())
	if err != nil {
		t.Fatalf("starting the etcd cluster: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i := range etcdcluster.Size {
				t.Logf("etcd member %d log (last lines):\n%s", i, tailFile(cluster.LogPath(i), 20))
			}
		}
		cluster.Close()
	})

	args := []string{
		"--etcd-servers", strings.Join(cluster.Endpoints(), ","),
		"--etcd-cafile", cluster.CAFile, "--etcd-certfile", cluster.ClientCertFile, "--etcd-keyfile", cluster.ClientKeyFile,
		"--request-timeout", replicaRequestTimeout.String(),
		// One issuer for all, so a token one replica issues is valid at the others.
		"--service-account-issuer", "https://idplane.e2e.test",
		// A short lease, so that the replicas take over from a killed leader within seconds.
		"--leader-elect-lease-duration", leaseDuration.String(), "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms",
	}
	a := startServer(t, args...)
	replicas := []*server{a}
	for range 2 {
		dir := t.TempDir()
		copyDir(t, filepath.Join(a.dataDir, "pki"), filepath.Join(dir, "pki"))
		replicas = append(replicas, startServerIn(t, dir, args...))
	}
	b, c := replicas[1], replicas[2]

	t.Run("a write through one replica is read through the others", func(t *testing.T) {
		a.kubectl(t, "create", "configmap", "shared", "--from-literal=k=v1")
		for _, r := range []*server{b, c} {
			if got := r.kubectl(t, "get", "configmap", "shared", "-o", "jsonpath={.data.k}"); got != "v1" {
				t.Errorf("get through %s: data.k = %q, want v1", r.URL, got)
			}
			if got := r.kubectl(t, "get", "configmaps", "-o", "name"); !strings.Contains(got, "configmap/shared\n") {
				t.Errorf("list through %s misses configmap/shared:\n%s", r.URL, got)
			}
		}
	})

	t.Run("a watch through one replica sees writes through the others", func(t *testing.T) {
		c.kubectl(t, "create", "configmap", "watched", "--from-literal=k=v1")
		w := b.kubectlBackground(t, "get", "configmap", "watched", "--watch", "--output-watch-events",
			"-o", `jsonpath={.type} {.object.data.k}{"\n"}`)
		if got := w.next(t, 10*time.Second); got != "ADDED v1" {
			t.Fatalf("first watch line = %q, want ADDED v1", got)
		}
		for _, step := range []struct {
			through *server
			value   string
		}{{a, "v2"}, {c, "v3"}} {
			step.through.kubectl(t, "patch", "configmap", "watched", "-p", `{"data":{"k":"`+step.value+`"}}`)
			if got, want := w.next(t, 10*time.Second), "MODIFIED "+step.value; got != want {
				t.Fatalf("watch line after the patch through %s = %q, want %q", step.through.URL, got, want)
			}
		}
		w.stop()
	})

	t.Run("a token one replica issues authenticates at the others", func(t *testing.T) {
		a.ensureServiceAccount(t, "default", "default")
		token := strings.TrimSpace(a.kubectl(t, "create", "token", "default"))
		for _, r := range []*server{b, c} {
			kubeconfig := r.tokenKubeconfig(t, token)
			eventually(t, 10*time.Second, func() error {
				out, err := r.kubectlAs(kubeconfig, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
				if err != nil || out != "system:serviceaccount:default:default" {
					return fmt.Errorf("whoami through %s: %q, %v", r.URL, out, err)
				}
				return nil
			})
		}
	})

	a.ensureServiceAccount(t, "default", "default")
	a.kubectl(t, "create", "secret", "generic", "node-secret", "--from-literal=p=x")
	nodes := newNodeAccess(t, replicas)
	t.Run("every replica authorizes a node by the same pods", func(t *testing.T) {
		for _, r := range replicas {
			if err := nodes.denied(r)(); err != nil {
				t.Errorf("before any pod uses it: %v", err)
			}
		}
		nodes.followPod(t, "uses-secret", a, a)
	})

	if !t.Run("etcd member failures", func(t *testing.T) {
		testEtcdFaults(t, ctx, cluster, replicas)
	}) {
		return
	}

	t.Run("after the failures every replica authorizes a node by the same pods", func(t *testing.T) {
		nodes.followPod(t, "uses-secret-again", b, c)
	})

	var killed *server
	t.Run("a killed controller leader is replaced and CSRs still get signed", func(t *testing.T) {
		killed = testKilledLeader(t, replicas)
	})
	t.Run("a killed replica leaves the kubernetes Service's endpoints", func(t *testing.T) {
		testKilledReplicaLeavesEndpoints(t, killed, replicas)
	})
}

// leaseDuration is the replicas' --leader-elect-lease-duration.
const leaseDuration = 4 * time.Second

// testKilledLeader kills -9 the replica holding the controllers' Lease, so that it cannot release
// it, and checks that another replica takes the lease and signs a CSR created after the kill. It
// returns the killed replica.
func testKilledLeader(t *testing.T, replicas []*server) *server {
	var holder string
	eventually(t, 30*time.Second, func() error {
		out, err := replicas[0].kubectlErr("get", "lease", "-n", "kube-system", "idplane-controllers", "-o", "jsonpath={.spec.holderIdentity}")
		if err != nil || out == "" {
			return fmt.Errorf("no leader yet: %v %q", err, out)
		}
		holder = out
		return nil
	})
	leader := -1
	for i, r := range replicas {
		log, err := os.ReadFile(r.logPath)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(log), `identity="`+holder+`"`) {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatalf("no replica's log names the lease holder %q", holder)
	}
	replicas[leader].kill()
	killed := replicas[leader]
	survivor := replicas[(leader+1)%len(replicas)]

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "after-the-leader"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	survivor.kubectl(t, "create", "-f", manifest(t, fmt.Sprintf(`apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: after-the-leader}
spec:
  request: %s
  signerName: kubernetes.io/kube-apiserver-client
  usages: ["digital signature", "client auth"]
`, base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})))))
	survivor.kubectl(t, "certificate", "approve", "after-the-leader")
	// The lease runs out leaseDuration after the leader's last renewal; the margin is for a loaded
	// machine, not for the takeover.
	eventually(t, leaseDuration+20*time.Second, func() error {
		out := survivor.kubectl(t, "get", "csr", "after-the-leader", "-o", "jsonpath={.status.certificate}")
		if out == "" {
			return errors.New("the CSR is approved but not signed")
		}
		return nil
	})
	// Right after the previous subtest's quorum loss, a second replica may still believe it leads
	// (client-go's leader election stops a leader only when its renewal fails) and sign the CSR
	// before the killed replica's lease runs out; the lease must still pass to a survivor within it.
	eventually(t, leaseDuration+20*time.Second, func() error {
		out := survivor.kubectl(t, "get", "lease", "-n", "kube-system", "idplane-controllers", "-o", "jsonpath={.spec.holderIdentity}")
		if out == holder || out == "" {
			return fmt.Errorf("the lease is held by %q, want a surviving replica (the killed one was %q)", out, holder)
		}
		return nil
	})
	return killed
}

// nodeAccess asks replicas whether node node-n may read the secret node-secret.
type nodeAccess struct {
	replicas []*server
	// The replicas share the CA, so each one's kubeconfig for the node carries a certificate all
	// of them accept.
	kubeconfigs map[*server]string
}

func newNodeAccess(t *testing.T, replicas []*server) *nodeAccess {
	n := &nodeAccess{replicas: replicas, kubeconfigs: map[*server]string{}}
	for _, r := range replicas {
		n.kubeconfigs[r] = r.userKubeconfig(t, "system:node:node-n", "system:nodes")
	}
	return n
}

func (n *nodeAccess) read(r *server) (string, error) {
	return r.kubectlAs(n.kubeconfigs[r], "get", "secret", "node-secret", "-o", "jsonpath={.data.p}")
}

func (n *nodeAccess) allowed(r *server) func() error {
	return func() error {
		if out, err := n.read(r); err != nil || out != "eA==" {
			return fmt.Errorf("node-n reading node-secret through %s: %q, %v", r.URL, out, err)
		}
		return nil
	}
}

func (n *nodeAccess) denied(r *server) func() error {
	return func() error {
		if out, err := n.read(r); err == nil || !strings.Contains(out, "forbidden") {
			return fmt.Errorf("node-n reading node-secret through %s: %q, %v; want forbidden", r.URL, out, err)
		}
		return nil
	}
}

// followPod creates, through one replica, a pod on node-n that uses node-secret, waits until
// every replica lets the node read the secret, deletes the pod through another replica and waits
// until every replica refuses again.
func (n *nodeAccess) followPod(t *testing.T, pod string, createThrough, deleteThrough *server) {
	t.Helper()
	createThrough.kubectl(t, "apply", "-f", manifest(t, `apiVersion: v1
kind: Pod
metadata: {name: `+pod+`}
spec:
  nodeName: node-n
  containers:
  - name: c
    image: nginx:1.27
    env: [{name: P, valueFrom: {secretKeyRef: {name: node-secret, key: p}}}]
`))
	for _, r := range n.replicas {
		eventually(t, 15*time.Second, n.allowed(r))
	}
	deleteThrough.kubectl(t, "delete", "pod", pod, "--grace-period=0", "--force")
	for _, r := range n.replicas {
		eventually(t, 15*time.Second, n.denied(r))
	}
}

// testEtcdFaults stops one etcd member, then a second, then brings both back, and checks what the
// replicas answer meanwhile. No wrong answer means: a create answered 201 is stored from then on
// and intact; a write is never acknowledged while etcd has no quorum; and a read that succeeds
// shows every acknowledged write (a read of an object shows its last acknowledged value, or a
// value whose write was not acknowledged but which the store did take, as the end state shows).
func testEtcdFaults(t *testing.T, ctx context.Context, cluster *etcdcluster.Cluster, replicas []*server) {
	const ns = "faults"
	replicas[0].kubectl(t, "create", "namespace", ns)
	clients := make([]*apiClient, len(replicas))
	for i, r := range replicas {
		clients[i] = newAPIClient(t, r, unansweredAfter)
	}
	l := newLedger()
	create := func(i int, name string) error {
		code, err := l.create(clients[i], ns, name)
		if code != http.StatusCreated {
			return fmt.Errorf("creating %s through replica %d: %v", name, i, err)
		}
		return nil
	}
	setMarker := func(v string) (int, error) {
		code, body, err := clients[0].do(http.MethodPatch, "/api/v1/namespaces/"+ns+"/configmaps/marker",
			"application/merge-patch+json", map[string]any{"data": map[string]string{"v": v}})
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("HTTP %d: %s", code, body)
		}
		return code, err
	}
	for i := range clients {
		if err := create(i, fmt.Sprintf("healthy-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	replicas[0].kubectl(t, "create", "configmap", "marker", "-n", ns, "--from-literal=v=1")

	// One member down, and the leader, so the others must elect a new one. Once they have, and a
	// write through a replica got through, every later one does.
	leader, err := cluster.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.Stop(leader, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cluster.WaitHealthy(ctx); err != nil {
		t.Fatalf("the two members left elect no leader: %v", err)
	}
	for i := range clients {
		attempt := 0
		eventually(t, 30*time.Second, func() error {
			attempt++
			return create(i, fmt.Sprintf("failover-%d-%d", i, attempt))
		})
	}
	for round := range 3 {
		for i := range clients {
			if err := create(i, fmt.Sprintf("one-down-%d-%d", i, round)); err != nil {
				t.Errorf("with one etcd member down: %v", err)
			}
		}
	}
	if _, err := setMarker("2"); err != nil {
		t.Fatalf("updating the marker with one etcd member down: %v", err)
	}

	// Two members down: no quorum. Every replica must answer every request, with a 5xx for writes.
	// (A member stopped cleanly would wait for the replicas' watches to end, for seconds.)
	second := (leader + 1) % etcdcluster.Size
	if err := cluster.Stop(second, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		reads   []string // marker values successful reads returned
		answers []string
		wg      sync.WaitGroup
	)
	answered := func(what string, i int, code int, err error) bool {
		if code == 0 {
			t.Errorf("%s through replica %d without quorum: no answer within %v (request timeout %v): %v", what, i, unansweredAfter, replicaRequestTimeout, err)
			return false
		}
		mu.Lock()
		answers = append(answers, fmt.Sprintf("%s through replica %d: %d", what, i, code))
		mu.Unlock()
		return true
	}
	for i, cl := range clients {
		wg.Go(func() {
			name := fmt.Sprintf("no-quorum-%d", i)
			if code, err := l.create(cl, ns, name); answered("creating "+name, i, code, err) && code < 500 {
				t.Errorf("creating %s through replica %d without quorum: HTTP %d, want a 5xx", name, i, code)
			}
		})
		if i == 0 {
			wg.Go(func() {
				if code, err := setMarker("3"); answered("updating the marker", i, code, err) && code < 500 {
					t.Errorf("updating the marker through replica %d without quorum: HTTP %d, want a 5xx", i, code)
				}
			})
		}
		wg.Go(func() {
			code, body, err := cl.do(http.MethodGet, "/api/v1/namespaces/"+ns+"/configmaps/marker", "", nil)
			switch {
			case !answered("reading the marker", i, code, err), code >= 500:
			case code == http.StatusOK:
				var cm corev1.ConfigMap
				if err := json.Unmarshal(body, &cm); err != nil {
					t.Errorf("decoding the marker read through replica %d: %v", i, err)
					return
				}
				mu.Lock()
				reads = append(reads, cm.Data["v"])
				mu.Unlock()
			default:
				t.Errorf("reading the marker through replica %d without quorum: HTTP %d: %s", i, code, body)
			}
		})
		wg.Go(func() {
			// The creates acknowledged before the list began must all be in it.
			acked := l.ackedNames()
			code, items, err := listConfigMaps(cl, ns)
			switch {
			case !answered("listing config maps", i, code, err), code >= 500:
			case err != nil:
				t.Errorf("listing config maps through replica %d without quorum: %v", i, err)
			default:
				for _, p := range l.check(items, acked) {
					t.Errorf("a list through replica %d without quorum succeeded with a wrong answer: %s", i, p)
				}
			}
		})
	}
	wg.Wait()
	slices.Sort(answers)
	t.Logf("answers without quorum:\n%s", strings.Join(answers, "\n"))

	// Both members back: service resumes, with everything acknowledged in place.
	if err := cluster.Restart(ctx, leader, second); err != nil {
		t.Fatal(err)
	}
	for i := range clients {
		attempt := 0
		eventually(t, 30*time.Second, func() error {
			attempt++
			return create(i, fmt.Sprintf("restored-%d-%d", i, attempt))
		})
	}
	final := ""
	for i, cl := range clients {
		l.verify(t, cl, ns, fmt.Sprintf("through replica %d after the restore", i))
		code, body, err := cl.do(http.MethodGet, "/api/v1/namespaces/"+ns+"/configmaps/marker", "", nil)
		if err != nil || code != http.StatusOK {
			t.Fatalf("reading the marker through replica %d after the restore: HTTP %d, %v", i, code, err)
		}
		var cm corev1.ConfigMap
		if err := json.Unmarshal(body, &cm); err != nil {
			t.Fatalf("decoding the marker: %v", err)
		}
		if v := cm.Data["v"]; (v != "2" && v != "3") || (final != "" && v != final) {
			t.Errorf("marker through replica %d after the restore = %q (before: %q), want the acknowledged 2 or the unacknowledged 3, the same everywhere", i, v, final)
		} else {
			final = v
		}
	}
	for _, v := range reads {
		if v != "2" && v != final {
			t.Errorf("a read without quorum returned marker %q; the last acknowledged value is 2 and the stored one %q", v, final)
		}
	}
	t.Logf("without quorum, %d of %d marker reads succeeded", len(reads), len(clients))
}

// copyDir copies the regular files of src into dst, keeping their modes.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatalf("reading %s: %v", src, err)
	}
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if !info.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}
