package apiserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/idplane/idplane/internal/agent/credentials"
)

// An agent restarted while its kubelet-serving CSR waits for an approver finds that CSR again
// instead of leaving one more, and says at info level what would finish it. A denied request is
// not asked for again: the next one has a new key and a new name.
func TestAgentReusesItsPendingServingCSR(t *testing.T) {
	ts := agentServer(t, nil)
	dir := filepath.Join(t.TempDir(), "agent")
	clock := clocktesting.NewFakeClock(time.Now())
	cfg := credentials.Config{
		RootDir: dir, NodeName: "node-a", BootstrapKubeconfig: writeBootstrapKubeconfig(t, ts),
		Hostname: "node-a.example", Addresses: []net.IP{net.ParseIP("192.0.2.10")},
		Clock: clock,
	}
	// start runs the node identity with a logger at the default verbosity whose lines the
	// test reads.
	start := func() (*credentials.Identity, ktesting.Buffer) {
		t.Helper()
		logger := ktesting.NewLogger(ktesting.NopTL{}, ktesting.NewConfig(ktesting.Verbosity(0), ktesting.BufferLogs(true)))
		buf := logger.GetSink().(ktesting.Underlier).GetBuffer()
		ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), logger))
		id, err := credentials.Start(ctx, cfg)
		if err != nil {
			cancel()
			t.Fatalf("starting the node identity: %v", err)
		}
		t.Cleanup(func() { id.Stop(); cancel() })
		return id, buf
	}
	pending := func(what string) certificatesv1.CertificateSigningRequest {
		t.Helper()
		var got certificatesv1.CertificateSigningRequest
		eventually(t, what, func() error {
			csrs := csrsFor(t, ts, certificatesv1.KubeletServingSignerName)
			var open []certificatesv1.CertificateSigningRequest
			for _, c := range csrs {
				if len(c.Status.Conditions) == 0 {
					open = append(open, c)
				}
			}
			if len(open) != 1 {
				return fmt.Errorf("%d pending serving CSRs, want 1", len(open))
			}
			got = open[0]
			return nil
		})
		return got
	}
	hinted := func(buf ktesting.Buffer, name string) {
		t.Helper()
		eventually(t, "the approval hint in the log", func() error {
			if out := buf.String(); !strings.Contains(out, "kubectl certificate approve "+name) {
				return fmt.Errorf("no hint naming %s in:\n%s", name, out)
			}
			return nil
		})
		if out := buf.String(); slices.ContainsFunc(strings.Split(out, "\n"), func(l string) bool { return strings.HasPrefix(l, "ERROR") }) {
			t.Errorf("a pending serving CSR logged an error:\n%s", out)
		}
	}

	id, buf := start()
	first := pending("the first serving CSR")
	hinted(buf, first.Name)
	keyFile := filepath.Join(dir, "pki", "kubelet-server-pending.key")
	if m := fileMode(t, keyFile); m != 0o600 {
		t.Errorf("pending key mode %v, want 0600", m)
	}
	id.Stop()

	for i := range 2 {
		again, buf := start()
		if got := pending(fmt.Sprintf("serving CSRs after restart %d", i+1)); got.Name != first.Name || got.UID != first.UID {
			t.Fatalf("restart %d: pending CSR %s, want the first one, %s, reused", i+1, got.Name, first.Name)
		}
		hinted(buf, first.Name)
		again.Stop()
	}
	if n := len(csrsFor(t, ts, certificatesv1.KubeletServingSignerName)); n != 1 {
		t.Fatalf("%d serving CSRs after two restarts, want 1", n)
	}

	// Denied: the restarted agent asks anew, with a new key.
	first.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue, Reason: "TestDenied"}}
	if _, err := ts.client.CertificatesV1().CertificateSigningRequests().UpdateApproval(context.Background(), first.Name, &first, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	id, _ = start()
	// The denied request is found and dropped; the retry, after a backoff on the agent's
	// clock, brings a new one.
	var second certificatesv1.CertificateSigningRequest
	eventually(t, "a new serving CSR after the denial", func() error {
		clock.Step(time.Minute)
		csrs := csrsFor(t, ts, certificatesv1.KubeletServingSignerName)
		// Creation times have whole seconds: the order of the two is not known.
		i := slices.IndexFunc(csrs, func(c certificatesv1.CertificateSigningRequest) bool { return len(c.Status.Conditions) == 0 })
		if len(csrs) != 2 || i < 0 {
			return fmt.Errorf("%d serving CSRs, want the denied one and a pending one", len(csrs))
		}
		second = csrs[i]
		return nil
	})
	if second.Name == first.Name || string(second.Spec.Request) == string(first.Spec.Request) {
		t.Fatalf("after a denial the agent asked again as %s", second.Name)
	}

	// Approved: the certificate is the agent's and the pending key is gone.
	second.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "TestApproved"}}
	if _, err := ts.client.CertificatesV1().CertificateSigningRequests().UpdateApproval(context.Background(), second.Name, &second, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "serving certificate issued", func() error {
		if id.ServingCertificate() == nil {
			return fmt.Errorf("none yet")
		}
		return nil
	})
	if _, err := os.Stat(keyFile); !os.IsNotExist(err) {
		t.Errorf("the pending key outlived its certificate: %v", err)
	}
}
