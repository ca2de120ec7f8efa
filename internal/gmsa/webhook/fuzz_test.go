package webhook

import (
	"encoding/json"
	"net/http"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/idplane/idplane/internal/gmsa"
)

// FuzzAdmissionReviewDecode feeds arbitrary bodies to the decoding of AdmissionReviews, then to
// both paths of a handler with every option on. Decoding either refuses with a 400 and a message
// or yields a request the GMSA logic can take; the handler answers 400 or 200, and a 200's patch
// applies to the object sent.
func FuzzAdmissionReviewDecode(f *testing.F) {
	// Seeds are small: the fuzzer minimizes each new input in time quadratic in its length, which
	// for reviews as large as the API server's would use up the run.
	review := func(op, subresource, object, old string) string {
		return `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",` +
			`"kind":{"version":"v1","kind":"Pod"},"resource":{"version":"v1","resource":"pods"},"subResource":"` + subresource +
			`","namespace":"n","operation":"` + op + `","userInfo":{"username":"bob"},"object":` + object + `,"oldObject":` + old + `}}`
	}
	windows := func(name, contents string) string {
		return `{"windowsOptions":{"gmsaCredentialSpecName":"` + name + `","gmsaCredentialSpec":"` + contents + `"}}`
	}
	for _, s := range []string{
		"", "null", "{}", "[]", `{"apiVersion":"v1","kind":"ConfigMap"}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":null}`,
		review("CREATE", "", "null", "null"),
		review("CREATE", "", `{"spec":{"securityContext":`+windows("webapp1", "")+`,"initContainers":[{"name":"i","securityContext":`+windows("", `{\"a\":1}`)+`}]}}`, "null"),
		review("CREATE", "", `{"metadata":{"annotations":{"pod.alpha.windows.kubernetes.io/gmsa-credential-spec-name":"webapp1"}}}`, "null"),
		review("UPDATE", "ephemeralcontainers", `{"spec":{"ephemeralContainers":[{"name":"d","securityContext":`+windows("webapp2", "")+`}]}}`, `{}`),
		review("UPDATE", "", `{"spec":{"containers":[{"name":"c","securityContext":`+windows("webapp1", "")+`}]}}`, `{"spec":{"containers":[{"name":"c"}]}}`),
		review("DELETE", "", "null", `{}`),
	} {
		f.Add([]byte(s))
	}
	// Fuzzing workers' standard error is a pipe the coordinator drains only at the end: the
	// handler's logs of refusals would fill it and block the workers.
	quietLogs(f)
	h := memHandler(Options{Options: gmsa.Options{AuthorizeRequester: true, AlphaAnnotations: true}, RandomHostname: true})
	f.Fuzz(func(t *testing.T, body []byte) {
		req, bad := decodeReview(body)
		if bad != nil {
			if bad.code != http.StatusBadRequest || bad.msg == "" {
				t.Fatalf("decoding refused with %+v, want a 400 with a message", bad)
			}
		} else {
			checkDecoded(t, req)
		}
		paths := []string{"/mutate", "/validate"}
		if bad != nil {
			paths = paths[len(body)%2:][:1] // one path suffices to see a refusal answered
		}
		for _, path := range paths {
			rec := post(h, path, body)
			if (bad != nil && rec.Code != http.StatusBadRequest) || (bad == nil && rec.Code != http.StatusOK) {
				t.Fatalf("%s answered HTTP %d %q after decoding refused with %+v", path, rec.Code, rec.Body, bad)
			}
			if bad != nil {
				continue
			}
			resp := responseOf(t, rec, req.uid)
			if resp.Allowed && len(resp.Patch) > 0 {
				var review admissionv1.AdmissionReview
				if err := json.Unmarshal(body, &review); err != nil {
					t.Fatalf("the handler took a body encoding/json cannot read: %v", err)
				}
				p, err := jsonpatch.DecodePatch(resp.Patch)
				if err == nil {
					_, err = p.Apply(review.Request.Object.Raw)
				}
				if err != nil {
					t.Fatalf("patch %s does not apply to %s: %v", resp.Patch, review.Request.Object.Raw, err)
				}
			}
		}
	})
}

// checkDecoded checks what the GMSA logic relies on in a decoded request.
func checkDecoded(t *testing.T, req *admissionRequest) {
	if req.uid == "" {
		t.Fatal("decoded a request without a uid")
	}
	if req.Pod == nil {
		return
	}
	if req.Namespace == "" || req.Requester == nil {
		t.Fatalf("decoded a pod without namespace or requester: %+v", req.Request)
	}
	switch req.Operation {
	case admission.Create:
	case admission.Update:
		if req.OldPod == nil {
			t.Fatal("decoded an update without the stored pod")
		}
	default:
		t.Fatalf("decoded a pod for operation %q", req.Operation)
	}
}
