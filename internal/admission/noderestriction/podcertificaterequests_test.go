package noderestriction

import (
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
)

var pcrsGVR = certificatesv1.SchemeGroupVersion.WithResource("podcertificaterequests")

func withPodCertificate(signer string) func(*corev1.Pod) {
	return withProjection(corev1.VolumeProjection{PodCertificate: &corev1.PodCertificateProjection{SignerName: signer, KeyType: "ED25519"}})
}

func withServiceAccountName(name string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.ServiceAccountName = name }
}

// TestPodCertificateRequests: a node creates requests only for its own live pods, with the
// pod's, service account's and node's UIDs, for a signer the pod asks for; it never writes them
// afterwards nor their status. What a node does not own it cannot name.
func TestPodCertificateRequests(t *testing.T) {
	const signer = "example.com/s"
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa", UID: "sa-uid"}}
	certPod := pod("certpod", "mynode", withPodCertificate(signer), withServiceAccountName("sa"))
	otherCertPod := pod("othercertpod", "othernode", withPodCertificate(signer), withServiceAccountName("sa"))
	p := newPlugin(t, append(cachedObjects(), sa, certPod, otherCertPod)...)

	valid := func(mods ...func(*certificatesv1.PodCertificateRequest)) *certificatesv1.PodCertificateRequest {
		r := &certificatesv1.PodCertificateRequest{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pcr"},
			Spec: certificatesv1.PodCertificateRequestSpec{
				SignerName: signer, PodName: "certpod", PodUID: "certpod-uid",
				ServiceAccountName: "sa", ServiceAccountUID: "sa-uid", NodeName: "mynode", NodeUID: "mynode-uid",
			},
		}
		for _, m := range mods {
			m(r)
		}
		return r
	}
	create := func(r *certificatesv1.PodCertificateRequest) request {
		return request{obj: r, gvr: pcrsGVR, namespace: "ns", op: admission.Create, user: myNode}
	}
	run(t, p, []testCase{
		{"for its own pod", create(valid()), allowed},
		{"for another node's pod", create(valid(func(r *certificatesv1.PodCertificateRequest) {
			r.Spec.PodName, r.Spec.PodUID = "othercertpod", "othercertpod-uid"
		})), denied(`pod ns/othercertpod is not bound to node "mynode"`)},
		{"naming another node", create(valid(func(r *certificatesv1.PodCertificateRequest) {
			r.Spec.NodeName, r.Spec.NodeUID = "othernode", "othernode-uid"
		})), denied(`spec.nodeName="othernode", which is not the requesting node "mynode"`)},
		{"wrong node UID", create(valid(func(r *certificatesv1.PodCertificateRequest) { r.Spec.NodeUID = "old-uid" })), denied("which is not the UID of node")},
		{"wrong pod UID (a replaced pod)", create(valid(func(r *certificatesv1.PodCertificateRequest) { r.Spec.PodUID = "old-uid" })), denied("which is not the UID of pod ns/certpod")},
		{"wrong service account UID", create(valid(func(r *certificatesv1.PodCertificateRequest) { r.Spec.ServiceAccountUID = "old-uid" })), denied("which is not the UID of service account ns/sa")},
		{"another service account", create(valid(func(r *certificatesv1.PodCertificateRequest) { r.Spec.ServiceAccountName = "default" })), denied(`but pod ns/certpod runs as "sa"`)},
		{"a signer the pod does not ask", create(valid(func(r *certificatesv1.PodCertificateRequest) { r.Spec.SignerName = "example.com/other" })), denied(`signer "example.com/other", which no podCertificate volume source`)},
		{"a pod without podCertificate sources", create(valid(func(r *certificatesv1.PodCertificateRequest) {
			r.Spec.PodName, r.Spec.PodUID, r.Spec.ServiceAccountName = "mypod", types.UID("mypod-uid"), ""
		})), denied("which no podCertificate volume source")},
		{"a missing pod", create(valid(func(r *certificatesv1.PodCertificateRequest) { r.Spec.PodName = "nopod" })), notFound},
		{"status written", request{obj: valid(), old: valid(), gvr: pcrsGVR, subresource: "status", namespace: "ns", name: "pcr", op: admission.Update, user: myNode},
			denied("may not write podcertificaterequests/status")},
		{"updated", request{obj: valid(), old: valid(), gvr: pcrsGVR, namespace: "ns", name: "pcr", op: admission.Update, user: myNode},
			denied("may only create podcertificaterequests")},
		{"deleted", request{old: valid(), gvr: pcrsGVR, namespace: "ns", name: "pcr", op: admission.Delete, user: myNode},
			denied("may only create podcertificaterequests")},
		{"a user creating for any pod", request{obj: valid(func(r *certificatesv1.PodCertificateRequest) { r.Spec.NodeName = "othernode" }), gvr: pcrsGVR, namespace: "ns", op: admission.Create, user: bob}, allowed},
	})
}
