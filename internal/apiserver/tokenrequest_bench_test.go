package apiserver

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// BenchmarkTokenRequest issues tokens bound only to their service account over HTTPS with the
// admin certificate, once with the default ECDSA P-256 key (ES256) and once with an RSA-2048 key
// (RS256), the key upstream clusters commonly sign with; "serial" is one client, "16-clients" as
// many concurrent ones as bench/tokenload's default, all for the same service account. Run with
// -cpu 1 and read cpu-µs/op, which counts the server and the clients together.
func BenchmarkTokenRequest(b *testing.B) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	rsaFile := filepath.Join(b.TempDir(), "rsa.key")
	rsaPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)})
	if err := os.WriteFile(rsaFile, rsaPEM, 0o600); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, keyFile string }{
		{"ES256", ""},
		{"RS256-2048", rsaFile},
	} {
		b.Run(tc.name, func(b *testing.B) { benchmarkTokenRequest(b, tc.keyFile) })
	}
}

func benchmarkTokenRequest(b *testing.B, signingKeyFile string) {
	ctx := context.Background()
	client := startBenchServer(b, func(o *Options) { o.ServiceAccounts.SigningKeyFile = signingKeyFile }).client
	sa := ensureServiceAccount(b, client, "default", "tokenrequest-bench").Name
	request := func() error {
		_, err := client.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		return err
	}
	b.Run("serial", func(b *testing.B) {
		reads := serviceAccountReads(b, client)
		loopWithCPU(b, request)
		b.ReportMetric((serviceAccountReads(b, client)-reads)/float64(b.N), "sa-reads/op")
	})
	b.Run("16-clients", func(b *testing.B) {
		b.SetParallelism(16 / runtime.GOMAXPROCS(0))
		reads := serviceAccountReads(b, client)
		start := processCPU(b)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := request(); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64((processCPU(b)-start).Microseconds())/float64(b.N), "cpu-µs/op")
		b.ReportMetric((serviceAccountReads(b, client)-reads)/float64(b.N), "sa-reads/op")
	})
}

// serviceAccountReads is how many single-object reads of service accounts the server has sent
// to etcd, from its /metrics; the server's controllers add a few of their own.
func serviceAccountReads(b *testing.B, client kubernetes.Interface) float64 {
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(raw)) {
		if strings.HasPrefix(line, "etcd_request_duration_seconds_count{") &&
			strings.Contains(line, `operation="get"`) && strings.Contains(line, `resource="serviceaccounts"`) {
			n, err := strconv.ParseFloat(strings.TrimSpace(line[strings.LastIndexByte(line, ' ')+1:]), 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	return 0
}
