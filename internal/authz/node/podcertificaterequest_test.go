package node

import (
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/tools/cache"

	"github.com/idplane/idplane/internal/authz/rbac/bootstrap"
)

// TestAuthorizeFollowsPodCertificateRequests: a request reaches the node its spec names while it
// exists, through the populator's handlers, and Explain shows the one step.
func TestAuthorizeFollowsPodCertificateRequests(t *testing.T) {
	g := NewGraph()
	p := &Populator{graph: g}
	r := &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pcr"},
		Spec:       certificatesv1.PodCertificateRequestSpec{NodeName: "n1", PodName: "p"},
	}
	a := NewAuthorizer(g, nil, bootstrap.NodeRules(), WithNodeRestriction())
	get := call{verb: "get", group: "certificates.k8s.io", resource: "podcertificaterequests", ns: "ns", name: "pcr"}
	if d, _ := decide(t, a, "n1", get); d == authorizer.DecisionAllow {
		t.Fatal("allowed before the request was added")
	}
	p.addPCR(r)
	if d, reason := decide(t, a, "n1", get); d != authorizer.DecisionAllow {
		t.Errorf("n1 getting its request: %v (%s)", d, reason)
	}
	if d, _ := decide(t, a, "n2", get); d == authorizer.DecisionAllow {
		t.Error("n2 got n1's request")
	}
	if path, ok := a.Explain("n1", "podcertificaterequest", "ns", "pcr"); !ok || len(path) != 2 {
		t.Errorf("Explain = %q, %v", path, ok)
	}
	p.deletePCR(cache.DeletedFinalStateUnknown{Key: "ns/pcr", Obj: r})
	if d, _ := decide(t, a, "n1", get); d == authorizer.DecisionAllow {
		t.Error("allowed after the request was deleted")
	}
}
