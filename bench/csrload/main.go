// Command csrload measures how fast a running idplane server turns CertificateSigningRequests into
// certificates: for each of several concurrency levels, clients create ECDSA P-256 CSRs over
// HTTPS, approve them through /approval, and wait for the signer's certificate, seen on one shared
// watch. It reports create→approved and create→issued latency (p50, p90, p99) and issued
// certificates per second, then deletes the CSRs it made. Only loopback servers are accepted.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/idplane/idplane/bench/internal/loadclient"
	"github.com/idplane/idplane/bench/internal/loadphase"
)

const runLabel = "idplane-csrload-run"

func main() {
	kubeconfig := flag.String("kubeconfig", "./idplane-data/admin.kubeconfig", "admin kubeconfig of a running loopback idplane server")
	levels := flag.String("concurrency", "1,20", "comma-separated numbers of concurrent clients, one phase each")
	count := flag.Int("count", 200, "CSRs per phase")
	signer := flag.String("signer", certificatesv1.KubeAPIServerClientSignerName, "signer name asked for; a built-in one is answered by the server")
	timeout := flag.Duration("timeout", 2*time.Minute, "bound of each phase")
	flag.Parse()
	if err := run(*kubeconfig, *levels, *count, *signer, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "csrload:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, levels string, count int, signer string, timeout time.Duration) error {
	clientCounts, err := loadphase.ParseLevels(levels)
	if err != nil {
		return err
	}
	cfg, err := loadclient.RESTConfig(kubeconfig, "idplane-csrload")
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building client: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	runID := strconv.FormatInt(time.Now().UnixNano(), 36)
	defer cleanUp(cs, runID)
	fmt.Printf("%-12s %7s %6s %10s %28s %28s\n", "concurrency", "issued", "errors", "issued/s", "approved p50/p90/p99 ms", "issued p50/p90/p99 ms")
	for _, n := range clientCounts {
		r, err := phase(cs, key, runID, signer, n, count, timeout)
		if err != nil {
			return fmt.Errorf("phase with %d clients: %w", n, err)
		}
		fmt.Printf("%-12d %7d %6d %10.1f %28s %28s\n", n, len(r.issued), r.errors, float64(len(r.issued))/r.elapsed.Seconds(), pcts(r.approved), pcts(r.issued))
	}
	return nil
}

type result struct {
	approved, issued []time.Duration
	errors           int
	elapsed          time.Duration
}

// phase runs count CSRs through clients workers and waits for their certificates.
func phase(cs kubernetes.Interface, key *ecdsa.PrivateKey, runID, signer string, clients, count int, timeout time.Duration) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	w, err := cs.CertificatesV1().CertificateSigningRequests().Watch(ctx, metav1.ListOptions{LabelSelector: runLabel + "=" + runID})
	if err != nil {
		return result{}, fmt.Errorf("watching CSRs: %w", err)
	}
	defer w.Stop()
	var mu sync.Mutex
	waiting := map[string]chan struct{}{}
	go func() {
		for ev := range w.ResultChan() {
			csr, ok := ev.Object.(*certificatesv1.CertificateSigningRequest)
			if !ok || ev.Type == watch.Deleted || len(csr.Status.Certificate) == 0 {
				continue
			}
			mu.Lock()
			if ch, ok := waiting[csr.Name]; ok {
				close(ch)
				delete(waiting, csr.Name)
			}
			mu.Unlock()
		}
	}()

	var res result
	var resMu sync.Mutex
	next := make(chan int)
	go func() {
		defer close(next)
		for i := range count {
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				name := fmt.Sprintf("csrload-%s-%d-%d", runID, clients, i)
				issued := make(chan struct{})
				mu.Lock()
				waiting[name] = issued
				mu.Unlock()
				approvedIn, issuedIn, err := oneCSR(ctx, cs, key, runID, name, signer, issued)
				resMu.Lock()
				if err != nil {
					res.errors++
				} else {
					res.approved = append(res.approved, approvedIn)
					res.issued = append(res.issued, issuedIn)
				}
				resMu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res, nil
}

// oneCSR creates a CSR, approves it and waits until issued is closed.
func oneCSR(ctx context.Context, cs kubernetes.Interface, key *ecdsa.PrivateKey, runID, name, signer string, issued <-chan struct{}) (approvedIn, issuedIn time.Duration, err error) {
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: name}}, key)
	if err != nil {
		return 0, 0, err
	}
	csrs := cs.CertificatesV1().CertificateSigningRequests()
	start := time.Now()
	created, err := csrs.Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{runLabel: runID}},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), SignerName: signer,
			ExpirationSeconds: ptr(int32(3600)),
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return 0, 0, err
	}
	created.Status.Conditions = append(created.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "LoadTest", Message: "approved by csrload",
	})
	if _, err := csrs.UpdateApproval(ctx, name, created, metav1.UpdateOptions{}); err != nil {
		return 0, 0, err
	}
	approvedIn = time.Since(start)
	select {
	case <-issued:
		return approvedIn, time.Since(start), nil
	case <-ctx.Done():
		return 0, 0, errors.New("not issued within the phase's bound")
	}
}

func cleanUp(cs kubernetes.Interface, runID string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := cs.CertificatesV1().CertificateSigningRequests().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: runLabel + "=" + runID})
	if err != nil {
		fmt.Fprintln(os.Stderr, "csrload: deleting the CSRs it made:", err)
	}
}

// pcts formats the 50th, 90th and 99th percentiles in milliseconds.
func pcts(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	slices.Sort(ds)
	p := func(q float64) float64 {
		return float64(loadphase.Percentile(ds, q)) / float64(time.Millisecond)
	}
	return fmt.Sprintf("%.1f/%.1f/%.1f", p(50), p(90), p(99))
}

func ptr[T any](v T) *T { return &v }
