package webhook

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/idplane/idplane/internal/gmsa"
)

// TestReviewCostIsBounded counts the API calls one review makes: a pod may name at most one spec
// for itself and one per container, refused past that before anything is asked, and each spec is
// read and its use asked once per review however many places name it.
func TestReviewCostIsBounded(t *testing.T) {
	alpha := Options{Options: gmsa.Options{AlphaAnnotations: true}}
	// The review's pod: one container, and annotations for 3,000 containers it does not have,
	// each naming its own spec.
	flood := newPod(annotate(podNameAnnotation, "webapp1"))
	for i := range 3000 {
		annotate(fmt.Sprintf("c%d.container.alpha.windows.kubernetes.io/gmsa-credential-spec-name", i), fmt.Sprintf("spec-%d", i))(flood)
	}
	everywhere := func(contents string) *corev1.Pod {
		return newPod(onPod("webapp1", contents), onApp("webapp1", contents), withInit("webapp1", contents), withDebug("dbg", "webapp1", contents),
			annotate(podNameAnnotation, "webapp1"), annotate(podContentsAnnotation, contents),
			annotate("app.container.alpha.windows.kubernetes.io/gmsa-credential-spec-name", "webapp1"),
			annotate("ghost.container.alpha.windows.kubernetes.io/gmsa-credential-spec-name", "webapp1"))
	}
	cases := []struct {
		name, path string
		req        *admissionv1.AdmissionRequest
		// says, when set, is what the refusal (a 422) says.
		says          string
		gets, reviews int
	}{
		{
			name: "mutate, 3,001 specs: refused, nothing read", path: "/mutate", req: create(flood),
			says: "the pod names 3001 distinct GMSACredentialSpecs, more than the 2 it can use: one for the pod and one per container",
		},
		{
			name: "validate, 3,001 specs: refused, nothing read or asked", path: "/validate", req: create(flood),
			says: "the pod names 3001 distinct GMSACredentialSpecs, more than the 2 it can use",
		},
		{
			name: "mutate, one spec named in eight places: read once", path: "/mutate", req: create(everywhere("")), gets: 1,
		},
		{
			name: "validate, one spec named in eight places: read and asked once", path: "/validate", req: create(everywhere(webapp1Compact)), gets: 1, reviews: 1,
		},
		{
			name: "mutate, as many specs as the pod and its containers", path: "/mutate",
			req: create(newPod(annotate(podNameAnnotation, "webapp1"), annotate("app.container.alpha.windows.kubernetes.io/gmsa-credential-spec-name", "webapp2"))), gets: 2,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			quietLogs(t)
			c := newCluster(t)
			rec := post(c.handler(alpha), tc.path, reviewOf(tc.req))
			resp := responseOf(t, rec, tc.req.UID)
			switch {
			case tc.says == "" && !resp.Allowed:
				t.Errorf("refused: %+v", resp.Result)
			case tc.says != "" && (resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity || !strings.Contains(resp.Result.Message, tc.says)):
				msg := resp.Result.Message
				if len(msg) > 500 {
					msg = msg[:500] + "…"
				}
				t.Errorf("got %d %q, want a 422 saying %q", resp.Result.Code, msg, tc.says)
			}
			if n := len(c.dynamic.Actions()); n != tc.gets {
				t.Errorf("%d reads of GMSACredentialSpecs, want %d", n, tc.gets)
			}
			if n := len(c.asked()); n != tc.reviews {
				t.Errorf("%d LocalSubjectAccessReviews, want %d", n, tc.reviews)
			}
		})
	}
}
