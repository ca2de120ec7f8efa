package podcert

import (
	"crypto/x509"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// FuzzClientPodIdentity: whatever names and UIDs a request carries, the signer either refuses to
// encode them or encodes them so that the authenticator reads back exactly them: no identity can
// be crafted to read as another.
func FuzzClientPodIdentity(f *testing.F) {
	f.Add("ns", "sa", "u1", "pod", "u2", "node", "u3")
	f.Add("a", "b:c", "u", "p", "u", "n", "u")
	f.Add("ns", "sa", "u1:x", "pod", "u2", "node", "u3")
	f.Add("kube-system", "default", "0b8a0e52-0d8f", "web.1", "5f1c", "node.example.com", "9e7d")
	f.Fuzz(func(t *testing.T, ns, sa, saUID, pod, podUID, node, nodeUID string) {
		id := PodIdentity{Namespace: ns, ServiceAccountName: sa, ServiceAccountUID: types.UID(saUID),
			PodName: pod, PodUID: types.UID(podUID), NodeName: node, NodeUID: types.UID(nodeUID)}
		uris, err := id.ClientPodURIs()
		if err != nil {
			return
		}
		cert := &x509.Certificate{URIs: uris}
		cert.Subject.CommonName = "system:serviceaccount:" + ns + ":" + sa
		got, err := ParseClientPodCertificate(cert)
		if err != nil || got != id {
			t.Fatalf("%+v encoded as %v reads back as %+v, %v", id, uris, got, err)
		}
	})
}
