package apiserver

import (
	"context"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/testutil"
)

// TestAuthorizerMetrics reads /metrics through the server, as a monitoring system would, after
// node requests the Node authorizer allowed and refused.
func TestAuthorizerMetrics(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	admin := s.client.CoreV1()
	ensureServiceAccount(t, s.client, "default", "default")
	mustCreate(t, admin.Secrets("default").Create, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "used"}})
	mustCreate(t, admin.Secrets("default").Create, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "unused"}})
	mustCreate(t, admin.Pods("default").Create, newPod("p", onNode("node1"), func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "used"}}}}
	}))
	node1 := nodeClient(t, s, "node1")
	eventually(t, "node1 reads its pod's secret", func() error {
		_, err := node1.CoreV1().Secrets("default").Get(ctx, "used", metav1.GetOptions{})
		return err
	})
	if _, err := node1.CoreV1().Secrets("default").Get(ctx, "unused", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("node1 reading an unrelated secret: got %v, want Forbidden", err)
	}

	sum := scrapeMetrics(t, s.testServer)
	for _, want := range []struct {
		name   string
		labels map[string]string
	}{
		{"apiserver_authorization_decisions_total", map[string]string{"type": "Node", "name": "node", "decision": "allowed"}},
		{"apiserver_node_authorizer_graph_actions_duration_seconds_count", map[string]string{"operation": "AddPod"}},
		{"apiserver_node_authorizer_graph_objects", map[string]string{"kind": "pods"}},
		{"apiserver_node_authorizer_graph_reachable_pairs", nil},
	} {
		if v, ok := sum(want.name, want.labels); !ok || v <= 0 {
			t.Errorf("%s%v = %v (found %v); want > 0", want.name, want.labels, v, ok)
		}
	}
}

// scrapeMetrics reads /metrics once, as a monitoring system would, and returns a lookup summing the
// samples of a metric whose labels include the given ones.
func scrapeMetrics(t *testing.T, s *testServer) func(name string, labels map[string]string) (float64, bool) {
	t.Helper()
	body, err := s.client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	metrics := testutil.NewMetrics()
	if err := testutil.ParseMetrics(string(body), &metrics); err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return func(name string, labels map[string]string) (total float64, found bool) {
		for _, sample := range metrics[name] {
			match := true
			for k, v := range labels {
				match = match && string(sample.Metric[testutil.LabelName(k)]) == v
			}
			if match {
				total += float64(sample.Value)
				found = true
			}
		}
		return total, found
	}
}

// TestServiceAccountTokenMetrics reads the token metrics through the server after tokens were
// requested, refused and used.
func TestServiceAccountTokenMetrics(t *testing.T) {
	s := startTestServer(t, t.TempDir(), nil)
	ensureServiceAccount(t, s.client, "default", "bot")
	tr, err := requestToken(s.client, "default", "bot", authenticationv1.TokenRequestSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := requestToken(s.client, "default", "nobody", authenticationv1.TokenRequestSpec{}); !apierrors.IsNotFound(err) {
		t.Fatalf("token of a missing account: %v", err)
	}
	if st := review(t, s.client, tr.Status.Token); !st.Authenticated {
		t.Fatalf("review = %+v", st)
	}
	sum := scrapeMetrics(t, s)
	for _, want := range []struct {
		name   string
		labels map[string]string
	}{
		{"serviceaccount_token_requests_total", map[string]string{"code": "201"}},
		{"serviceaccount_token_requests_total", map[string]string{"code": "404"}},
		{"serviceaccount_token_signing_duration_seconds_count", nil},
		{"serviceaccount_valid_tokens_total", nil},
	} {
		if v, ok := sum(want.name, want.labels); !ok || v <= 0 {
			t.Errorf("%s%v = %v (found %v); want > 0", want.name, want.labels, v, ok)
		}
	}
	for _, name := range []string{"serviceaccount_legacy_tokens_total", "serviceaccount_stale_tokens_total"} {
		if _, ok := sum(name, nil); !ok {
			t.Errorf("%s is not served", name)
		}
	}
}
