package apiserver

import (
	"context"
	"crypto/x509"
	"flag"
	"path/filepath"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/idplane/idplane/internal/pki"
)

// benchAPF chooses the server's request limiting in the request benchmarks, to measure what
// priority and fairness costs per request: -bench.apf=false serves with max-in-flight.
var benchAPF = flag.Bool("bench.apf", true, "benchmark servers run with --enable-priority-and-fairness")

// BenchmarkPriorityAndFairness: a SubjectAccessReview as the admin (system:masters: flow schema
// exempt, never queued) and as an ordinary user allowed to review (global-default, a queuing
// level), one client over HTTPS. Compare -bench.apf=true and false with -cpu 1; read cpu-µs/op
// (server and client together).
func BenchmarkPriorityAndFairness(b *testing.B) {
	ctx := context.Background()
	ts := startTestServer(b, b.TempDir(), func(o *Options) { o.FlowControl.EnablePriorityAndFairness = *benchAPF })
	ca, err := pki.EnsureCA(pki.Files{Dir: filepath.Join(ts.dataDir, "pki")}, "unused", time.Now())
	if err != nil {
		b.Fatal(err)
	}
	certPEM, keyPEM, err := pki.Issue(ca, pki.IssueRequest{CommonName: "reviewer", Organization: []string{"reviewers"},
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, Validity: time.Hour, Now: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	_, err = ts.client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "reviewer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:auth-delegator"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "reviewer"}},
	}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	userCfg := rest.AnonymousClientConfig(ts.config)
	userCfg.CertData, userCfg.KeyData = certPEM, keyPEM
	userCfg.QPS, userCfg.Burst = -1, -1

	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "system:serviceaccount:default:default", ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "get", Resource: "pods"},
	}}
	for _, tc := range []struct {
		name string
		cfg  *rest.Config
	}{{"Admin", ts.config}, {"User", userCfg}} {
		client := kubernetes.NewForConfigOrDie(tc.cfg)
		// RBAC follows the new binding through a watch: wait until the user may review.
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
			return err == nil, nil
		})
		if err != nil {
			b.Fatalf("%s may not review: %v", tc.name, err)
		}
		b.Run(tc.name, func(b *testing.B) {
			loopWithCPU(b, func() error {
				_, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
				return err
			})
		})
	}
}
