package apiserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/idplane/idplane/internal/certificates/podcert"
)

// BenchmarkPodCertificateIssuance: PodCertificateRequests for idplane.io/spiffe created through
// the API until the signer's answer is seen on a watch, one at a time (latency) and in bursts
// of 100 (throughput; one op is a burst). issued/s is the figure to set beside a third-party
// signer's rate.
func BenchmarkPodCertificateIssuance(b *testing.B) {
	ctx := context.Background()
	client := startBenchServer(b, nil).client
	template := benchRequest(b, ctx, client)
	pcrs := client.CertificatesV1().PodCertificateRequests("default")

	run := func(b *testing.B, burst int) {
		w, err := pcrs.Watch(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		defer w.Stop()
		issued := 0
		start := time.Now()
		for b.Loop() {
			for range burst {
				if _, err := pcrs.Create(ctx, template.DeepCopy(), metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			for answered := 0; answered < burst; {
				ev := <-w.ResultChan()
				p, ok := ev.Object.(*certificatesv1.PodCertificateRequest)
				if !ok || ev.Type != watch.Modified || len(p.Status.Conditions) == 0 {
					continue
				}
				if p.Status.CertificateChain == "" {
					b.Fatalf("not issued: %+v", p.Status.Conditions)
				}
				answered++
				issued++
			}
		}
		b.ReportMetric(float64(issued)/time.Since(start).Seconds(), "issued/s")
	}
	b.Run("one", func(b *testing.B) { run(b, 1) })
	b.Run("burst100", func(b *testing.B) { run(b, 100) })
}

// benchRequest is a request for a pod bound to a node, as the node would make it.
func benchRequest(b *testing.B, ctx context.Context, client kubernetes.Interface) *certificatesv1.PodCertificateRequest {
	b.Helper()
	var sa *corev1.ServiceAccount
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		sa, err = client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		b.Fatal("no default service account")
	}
	node, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	pod, err := client.CoreV1().Pods("default").Create(ctx, newPod("p", onNode("n1")), metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	stub, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		b.Fatal(err)
	}
	return &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "p-"},
		Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName: podcert.SPIFFESignerName, PodName: pod.Name, PodUID: pod.UID,
			ServiceAccountName: sa.Name, ServiceAccountUID: sa.UID,
			NodeName: types.NodeName(node.Name), NodeUID: node.UID, StubPKCS10Request: stub,
		},
	}
}
