package apiserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNodePathBadQuestions: a question the path endpoint cannot answer is a 400 Status whose
// message says what is wrong, never plain text (which kubectl shows as "an unknown reason") and
// never {"allowed":false} (an unknown kind is not a refusal).
func TestNodePathBadQuestions(t *testing.T) {
	cases := []struct {
		name  string
		query url.Values
		want  string
	}{
		{"nothing", url.Values{}, "query parameters node, kind and name are required"},
		{"no name", url.Values{"node": {"n1"}, "kind": {"secret"}, "namespace": {"default"}}, "query parameters node, kind and name are required"},
		{"no node", url.Values{"kind": {"secret"}, "namespace": {"default"}, "name": {"s"}}, "query parameters node, kind and name are required"},
		{"unknown kind", url.Values{"node": {"n1"}, "kind": {"deployment"}, "namespace": {"default"}, "name": {"d"}},
			`unknown kind "deployment": one of pod, secret, configmap, persistentvolumeclaim, persistentvolume, serviceaccount, volumeattachment, resourceclaim`},
		{"namespaced kind without a namespace", url.Values{"node": {"n1"}, "kind": {"secrets"}, "name": {"s"}}, `kind "secrets" is namespaced`},
		{"cluster kind with a namespace", url.Values{"node": {"n1"}, "kind": {"persistentvolume"}, "namespace": {"default"}, "name": {"pv"}}, `kind "persistentvolume" is not namespaced`},
	}
	// The handler never reaches the authorizer with a bad question.
	h := nodePathHandler(nil)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, nodePathURL+"?"+tc.query.Encode(), nil)
			req.Header.Set("Accept", "application/json")
			rec := httptest.NewRecorder()
			h(rec, req)
			if rec.Code != http.StatusBadRequest {
				t.Errorf("HTTP %d, want 400", rec.Code)
			}
			if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q, want JSON", ct)
			}
			var st metav1.Status
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
				t.Fatalf("decoding %s: %v", rec.Body, err)
			}
			if st.Kind != "Status" || st.Status != metav1.StatusFailure || st.Code != http.StatusBadRequest || st.Reason != metav1.StatusReasonBadRequest {
				t.Errorf("status %+v, want a 400 BadRequest Status", st)
			}
			if !strings.Contains(st.Message, tc.want) {
				t.Errorf("message %q, want it to say %q", st.Message, tc.want)
			}
		})
	}
}
