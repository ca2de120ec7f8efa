package apiserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// Short lease settings so that a test sees a hand-over quickly; client-go needs
// renew > 1.2 × retry and lease > renew.
const (
	testLeaseDuration = 2 * time.Second
	testRenewDeadline = 1500 * time.Millisecond
	testRetryPeriod   = 300 * time.Millisecond
)

// startSharedEtcd runs an etcd outside any server, as the etcd of an installation with several
// replicas is: stopping one replica must not stop the store of the others. It is the embedded
// etcd the server would start, in its own directory.
func startSharedEtcd(t *testing.T) string {
	t.Helper()
	etcd, err := startEmbeddedEtcd(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Registered before the servers' clean-ups, so it stops after them.
	t.Cleanup(etcd.Close)
	return etcd.clientURL
}

// replicaOptions are what replicas must agree on beyond the store: one token issuer, so that a
// token one issues the others accept, and short lease settings for the test.
func replicaOptions(etcdURL string) func(*Options) {
	return func(o *Options) {
		o.EtcdServers = []string{etcdURL}
		o.ServiceAccounts.Issuers = []string{"https://idplane.test"}
		o.LeaderElection.LeaseDuration.Duration = testLeaseDuration
		o.LeaderElection.RenewDeadline.Duration = testRenewDeadline
		o.LeaderElection.RetryPeriod.Duration = testRetryPeriod
	}
}

// startReplica starts a server on etcdURL whose data directory holds a copy of from's pki/
// (nil: new keys): the CA, serving certificate and service-account key are shared.
func startReplica(t *testing.T, etcdURL string, from *testServer) *testServer {
	t.Helper()
	dir := t.TempDir()
	if from != nil {
		if err := os.CopyFS(filepath.Join(dir, "pki"), os.DirFS(filepath.Join(from.dataDir, "pki"))); err != nil {
			t.Fatalf("copying pki/: %v", err)
		}
	}
	return startTestServer(t, dir, replicaOptions(etcdURL))
}

func leaseHolder(t *testing.T, client kubernetes.Interface) string {
	t.Helper()
	lease, err := client.CoordinationV1().Leases(metav1.NamespaceSystem).Get(context.Background(), "idplane-controllers", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the controllers' lease: %v", err)
	}
	return holderOf(lease)
}

func holderOf(lease *coordinationv1.Lease) string {
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// waitLeader returns the replica named in the lease once one is.
func waitLeader(t *testing.T, replicas ...*testServer) (leader *testServer, others []*testServer) {
	t.Helper()
	eventually(t, "a replica holds the controllers' lease", func() error {
		holder := leaseHolder(t, replicas[0].client)
		leader, others = nil, nil
		for _, r := range replicas {
			if r.identity == holder {
				leader = r
			} else {
				others = append(others, r)
			}
		}
		if leader == nil {
			return fmt.Errorf("the lease names %q, no replica", holder)
		}
		return nil
	})
	return leader, others
}

// signThrough creates and approves a kube-apiserver-client CSR through replica r and waits until
// it carries a certificate, read through r.
func signThrough(t *testing.T, r *testServer, name string) {
	t.Helper()
	ctx := context.Background()
	csrs := r.client.CertificatesV1().CertificateSigningRequests()
	if _, err := csrs.Create(ctx, newCSR(name, certificatesv1.KubeAPIServerClientSignerName, csrPEM(t, name)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := csrs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		current.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test"}}
		_, err = csrs.UpdateApproval(ctx, name, current, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the leader signs "+name, func() error {
		got, err := csrs.Get(ctx, name, metav1.GetOptions{})
		if err == nil && len(got.Status.Certificate) == 0 {
			return fmt.Errorf("not signed yet: %+v", got.Status.Conditions)
		}
		return err
	})
}

// nodeMayRead reports each replica's decision on node1 reading secret s-1.
func nodeMayRead(t *testing.T, replicas ...*testServer) []bool {
	t.Helper()
	var decisions []bool
	for _, r := range replicas {
		review, err := r.client.AuthorizationV1().SubjectAccessReviews().Create(context.Background(),
			sarFor("system:node:node1", []string{"system:nodes"}, "default", "get", "secrets", "s-1"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		decisions = append(decisions, review.Status.Allowed)
	}
	return decisions
}

func TestReplicasShareOneStoreAndOneLeader(t *testing.T) {
	etcdURL := startSharedEtcd(t)
	a := startReplica(t, etcdURL, nil)
	b := startReplica(t, etcdURL, a)
	ctx := context.Background()

	leader, others := waitLeader(t, a, b)
	follower := others[0]
	if holder := leaseHolder(t, follower.client); holder != leader.identity {
		t.Fatalf("the replicas disagree on the lease: %q and %q", leader.identity, holder)
	}

	// Both replicas serve writes; the one leader's controllers answer them.
	signThrough(t, a, "through-a")
	signThrough(t, b, "through-b")

	// Each replica authorizes nodes from its own graph, fed by its own watch: a pod bound through
	// one replica opens the secret to the node on both, and its deletion through the other
	// closes it on both.
	ensureServiceAccount(t, a.client, "default", "default")
	mustCreate(t, a.client.CoreV1().Secrets("default").Create, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s-1"}})
	mustCreate(t, a.client.CoreV1().Pods("default").Create, newPod("p1", func(p *corev1.Pod) {
		p.Spec.NodeName = "node1"
		p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s-1"}}}}
	}))
	eventually(t, "both replicas let node1 read the secret of its pod", func() error {
		if d := nodeMayRead(t, a, b); !d[0] || !d[1] {
			return fmt.Errorf("decisions %v", d)
		}
		return nil
	})
	if err := b.client.CoreV1().Pods("default").Delete(ctx, "p1", metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "neither replica lets node1 read the secret once the pod is gone", func() error {
		if d := nodeMayRead(t, a, b); d[0] || d[1] {
			return fmt.Errorf("decisions %v", d)
		}
		return nil
	})

	// The leader stops: it releases the lease on its way out, so the follower need not wait for
	// it to expire, and the follower's controllers take over.
	leader.stop()
	if holder := leaseHolder(t, follower.client); holder != "" && holder != follower.identity {
		t.Errorf("after the leader stopped the lease names %q: it was not released", holder)
	}
	eventually(t, "the follower takes the lease", func() error {
		if holder := leaseHolder(t, follower.client); holder != follower.identity {
			return fmt.Errorf("the lease names %q", holder)
		}
		return nil
	})
	signThrough(t, follower, "after-hand-over")
}

func TestShutdownEndsWatchesAndReleasesTheLease(t *testing.T) {
	etcdURL := startSharedEtcd(t)
	s := startReplica(t, etcdURL, nil)
	waitLeader(t, s)

	// A watch in flight when the server stops is ended by the server, cleanly: its stream closes
	// without an error event, and the stop does not wait for it to time out.
	w, err := s.client.CoreV1().ConfigMaps("default").Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	mustCreate(t, s.client.CoreV1().ConfigMaps("default").Create, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before-stop"}})
	next := func() (watch.Event, bool) {
		select {
		case ev, ok := <-w.ResultChan():
			return ev, ok
		case <-time.After(time.Minute):
			t.Fatal("the watch neither delivered nor ended within a minute")
			return watch.Event{}, false
		}
	}
	if ev, _ := next(); ev.Type != watch.Added {
		t.Fatalf("first event %v, want the configmap added", ev.Type)
	}
	s.cancel()
	for ev, ok := next(); ok; ev, ok = next() {
		if ev.Type == watch.Error {
			t.Errorf("the watch ended with an error event: %v", ev.Object)
		}
	}
	if err := s.Wait(); err != nil {
		t.Fatalf("server stopped with %v", err)
	}

	// The lease is given up, not left to expire: read it from the store itself.
	etcd, err := newEtcdClient([]string{etcdURL}, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	resp, err := etcd.Get(context.Background(), "/registry/leases/kube-system/idplane-controllers")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("reading the lease from etcd: %v, %d keys", err, len(resp.Kvs))
	}
	obj, _, err := codecs.UniversalDeserializer().Decode(resp.Kvs[0].Value, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	lease, ok := obj.(*coordinationv1.Lease)
	if !ok {
		t.Fatalf("stored lease decodes to %T", obj)
	}
	if holder := holderOf(lease); holder != "" {
		t.Errorf("after shutdown the lease names %q, want it released", holder)
	}
}

func TestWithoutLeaderElectionControllersRunAndNoLeaseIsTaken(t *testing.T) {
	s := startRBACServerWith(t, func(o *Options) { o.LeaderElection.LeaderElect = false })
	signThrough(t, s.testServer, "no-election")
	_, err := s.client.CoordinationV1().Leases(metav1.NamespaceSystem).Get(context.Background(), "idplane-controllers", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("reading the controllers' lease: got %v, want not found: without leader election no lease is taken", err)
	}
}
