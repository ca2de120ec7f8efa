package apiserver

import (
	"context"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/idplane/idplane/internal/testing/pcrtest"
	"github.com/idplane/idplane/internal/testing/testkeys"
)

// TestPodCertificateRequestsFromNodes: a node creates requests for its own pods only, with the
// live UIDs; gets its own; lists and watches only with spec.nodeName=<itself>; never writes
// /status. Another node can do none of this with the first node's pods or requests.
func TestPodCertificateRequestsFromNodes(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	const signer = "example.com/pods"
	sa := ensureServiceAccount(t, s.client, "default", "default")
	nodes := map[string]*corev1.Node{}
	for _, name := range []string{"node1", "node2"} {
		n, err := s.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nodes[name] = n
	}
	pod, err := s.client.CoreV1().Pods("default").Create(ctx, newPod("p", onNode("node1"), func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "cert", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{PodCertificate: &corev1.PodCertificateProjection{
				SignerName: signer, KeyType: "ECDSAP256", CredentialBundlePath: "bundle.pem",
			}}},
		}}}}
	}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	request := func(name string, mods ...func(*certificatesv1.PodCertificateRequest)) *certificatesv1.PodCertificateRequest {
		r := pcrtest.Request(t, testkeys.Key(t, testkeys.ECDSAP256))
		r.Name, r.Namespace = name, "default"
		r.Spec.SignerName, r.Spec.PodName, r.Spec.PodUID = signer, pod.Name, pod.UID
		r.Spec.ServiceAccountName, r.Spec.ServiceAccountUID = sa.Name, sa.UID
		r.Spec.NodeName, r.Spec.NodeUID = "node1", nodes["node1"].UID
		for _, m := range mods {
			m(r)
		}
		return r
	}
	node1 := nodeClient(t, s, "node1").CertificatesV1().PodCertificateRequests("default")
	node2 := nodeClient(t, s, "node2").CertificatesV1().PodCertificateRequests("default")

	eventually(t, "node1 creates a request for its pod", func() error {
		_, err := node1.Create(ctx, request("mine"), metav1.CreateOptions{})
		return err
	})
	refused := []struct {
		name string
		do   func() error
	}{
		{"node2 creating for node1's pod, naming itself", func() error {
			_, err := node2.Create(ctx, request("n2-self", func(r *certificatesv1.PodCertificateRequest) {
				r.Spec.NodeName, r.Spec.NodeUID = "node2", nodes["node2"].UID
			}), metav1.CreateOptions{})
			return err
		}},
		{"node2 creating for node1's pod, naming node1", func() error {
			_, err := node2.Create(ctx, request("n2-as-n1"), metav1.CreateOptions{})
			return err
		}},
		{"node1 with a stale pod UID", func() error {
			_, err := node1.Create(ctx, request("stale-pod", func(r *certificatesv1.PodCertificateRequest) { r.Spec.PodUID = "old" }), metav1.CreateOptions{})
			return err
		}},
		{"node1 with a wrong service account UID", func() error {
			_, err := node1.Create(ctx, request("stale-sa", func(r *certificatesv1.PodCertificateRequest) { r.Spec.ServiceAccountUID = "old" }), metav1.CreateOptions{})
			return err
		}},
		{"node1 with a wrong node UID", func() error {
			_, err := node1.Create(ctx, request("stale-node", func(r *certificatesv1.PodCertificateRequest) { r.Spec.NodeUID = "old" }), metav1.CreateOptions{})
			return err
		}},
		{"node1 for a signer the pod does not ask", func() error {
			_, err := node1.Create(ctx, request("other-signer", func(r *certificatesv1.PodCertificateRequest) { r.Spec.SignerName = "example.com/other" }), metav1.CreateOptions{})
			return err
		}},
		{"node1 writing its request's status", func() error {
			r, err := node1.Get(ctx, "mine", metav1.GetOptions{})
			if err != nil {
				return err
			}
			r.Status.Conditions = []metav1.Condition{{Type: "Denied", Status: metav1.ConditionTrue, Reason: "R", Message: "m", LastTransitionTime: metav1.Now()}}
			_, err = node1.UpdateStatus(ctx, r, metav1.UpdateOptions{})
			return err
		}},
		{"node1 listing without the field selector", func() error {
			_, err := node1.List(ctx, metav1.ListOptions{})
			return err
		}},
		{"node2 listing node1's requests", func() error {
			_, err := node2.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node1"})
			return err
		}},
		{"node2 getting node1's request", func() error {
			_, err := node2.Get(ctx, "mine", metav1.GetOptions{})
			return err
		}},
		{"node1 deleting its request", func() error { return node1.Delete(ctx, "mine", metav1.DeleteOptions{}) }},
	}
	for _, tc := range refused {
		if err := tc.do(); !apierrors.IsForbidden(err) {
			t.Errorf("%s: got %v, want Forbidden", tc.name, err)
		}
	}
	eventually(t, "node1 gets its request", func() error {
		_, err := node1.Get(ctx, "mine", metav1.GetOptions{})
		return err
	})
	list, err := node1.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node1"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("node1 listing its requests: %v, %d items", err, len(list.Items))
	}
	w, err := nodeClient(t, s, "node1").CertificatesV1().PodCertificateRequests("").Watch(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node1"})
	if err != nil {
		t.Fatalf("node1 watching its requests in every namespace: %v", err)
	}
	w.Stop()
}
