package node

import (
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/tools/cache"

	"github.com/idplane/idplane/internal/authz/rbac/bootstrap"
)

// TestAuthorizeFollowsPodCertificateRequests: a request reaches its node through its pod: while
// both exist and the pod is bound to the node the request names, whichever arrives first; the
// populator's handlers feed the graph; Explain shows the path.
func TestAuthorizeFollowsPodCertificateRequests(t *testing.T) {
	g := NewGraph()
	p := &Populator{graph: g}
	r := &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pcr"},
		Spec:       certificatesv1.PodCertificateRequestSpec{NodeName: "n1", PodName: "p"},
	}
	a := NewAuthorizer(g, nil, bootstrap.NodeRules(), WithNodeRestriction())
	get := call{verb: "get", group: "certificates.k8s.io", resource: "podcertificaterequests", ns: "ns", name: "pcr"}
	allowed := func(node string) bool {
		d, _ := decide(t, a, node, get)
		return d == authorizer.DecisionAllow
	}
	steps := []struct {
		name     string
		do       func()
		n1, n2   bool
		explains int
	}{
		{"nothing yet", func() {}, false, false, 0},
		{"request before its pod", func() { p.addPCR(r) }, false, false, 0},
		{"pod bound to n1", func() { g.AddPod(newPod("ns", "p", "n1")) }, true, false, 3},
		{"pod moved to n2 (a new pod of the same name)", func() { g.AddPod(newPod("ns", "p", "n2")) }, false, false, 0},
		{"pod back on n1", func() { g.AddPod(newPod("ns", "p", "n1")) }, true, false, 3},
		{"request updated", func() { p.updatePCR(nil, r) }, true, false, 3},
		{"request deleted", func() { p.deletePCR(cache.DeletedFinalStateUnknown{Key: "ns/pcr", Obj: r}) }, false, false, 0},
		{"request again", func() { p.addPCR(r) }, true, false, 3},
		{"pod deleted", func() { g.DeletePod("ns", "p") }, false, false, 0},
	}
	for _, s := range steps {
		s.do()
		if got1, got2 := allowed("n1"), allowed("n2"); got1 != s.n1 || got2 != s.n2 {
			t.Errorf("%s: n1 allowed %v, n2 allowed %v; want %v, %v", s.name, got1, got2, s.n1, s.n2)
		}
		path, ok := a.Explain("n1", "podcertificaterequest", "ns", "pcr")
		if ok != (s.explains > 0) || len(path) != s.explains {
			t.Errorf("%s: Explain = %q, %v", s.name, path, ok)
		}
	}
	g.DeletePodCertificateRequest("ns", "pcr")
	if len(g.pcrs) != 0 || len(g.pcrsByPod) != 0 || g.reach.live != 0 {
		t.Errorf("after every delete the graph holds %d requests, %d pod entries, %d pairs", len(g.pcrs), len(g.pcrsByPod), g.reach.live)
	}
}
