package apiserver

import (
	"context"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// processCPU is the user+system CPU time the whole process (server and client) has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loopWithCPU runs op b.N times and reports, beside ns/op, the process's CPU time per op: on a
// shared machine the CPU an operation costs varies far less than its wall time.
func loopWithCPU(b *testing.B, op func() error) {
	start := processCPU(b)
	for b.Loop() {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((processCPU(b)-start).Microseconds())/float64(b.N), "cpu-µs/op")
}

// BenchmarkReviews: a TokenReview of one service-account token again and again (what a relying
// party sends), a SubjectAccessReview answered by RBAC, and a TokenRequest, one client over
// HTTPS with the admin certificate. Run with -cpu 1 and read cpu-µs/op, which counts the server
// and the client together.
func BenchmarkReviews(b *testing.B) {
	ctx := context.Background()
	client := startBenchServer(b, func(o *Options) { o.FlowControl.EnablePriorityAndFairness = *benchAPF }).client
	sa := ensureServiceAccount(b, client, "default", "reviews-bench").Name
	tr, err := client.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}

	b.Run("TokenReview", func(b *testing.B) {
		loopWithCPU(b, func() error {
			r, err := client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
				Spec: authenticationv1.TokenReviewSpec{Token: tr.Status.Token},
			}, metav1.CreateOptions{})
			if err == nil && !r.Status.Authenticated {
				b.Fatalf("review = %+v", r.Status)
			}
			return err
		})
	})
	b.Run("SubjectAccessReview", func(b *testing.B) {
		loopWithCPU(b, func() error {
			_, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{
					User:               "system:serviceaccount:default:" + sa,
					ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "get", Resource: "pods"},
				},
			}, metav1.CreateOptions{})
			return err
		})
	})
	b.Run("TokenRequest", func(b *testing.B) {
		loopWithCPU(b, func() error {
			_, err := client.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
			return err
		})
	})
}
