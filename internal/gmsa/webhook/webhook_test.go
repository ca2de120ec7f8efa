package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/idplane/idplane/internal/gmsa"
)

// TestMalformedRequests: whatever cannot be read as an AdmissionReview of the right kind gets an
// HTTP error with a message, never a panic or an AdmissionReview.
func TestMalformedRequests(t *testing.T) {
	valid := reviewOf(create(newPod(onPod("webapp1", ""))))
	withRequest := func(edit func(r map[string]any)) []byte {
		var review map[string]any
		if err := json.Unmarshal(valid, &review); err != nil {
			t.Fatal(err)
		}
		edit(review["request"].(map[string]any))
		return mustJSON(review)
	}
	update := reviewOf(request(admissionv1.Update, "", newPod(), nil))
	cases := []struct {
		name, method, path, contentType string
		body                            []byte
		code                            int
		says                            string
	}{
		{name: "GET /mutate", method: http.MethodGet, path: "/mutate", code: http.StatusMethodNotAllowed},
		{name: "PUT /validate", method: http.MethodPut, path: "/validate", body: valid, code: http.StatusMethodNotAllowed},
		{name: "POST /health", method: http.MethodPost, path: "/health", code: http.StatusMethodNotAllowed},
		{name: "unknown path", path: "/mutate/more", body: valid, code: http.StatusNotFound},
		{name: "text/plain", contentType: "text/plain", body: valid, code: http.StatusUnsupportedMediaType, says: `Content-Type is "text/plain", want application/json`},
		{name: "no content type", contentType: "-", body: valid, code: http.StatusUnsupportedMediaType},
		{name: "YAML", contentType: "application/yaml", body: valid, code: http.StatusUnsupportedMediaType},
		{name: "empty body", body: nil, code: http.StatusBadRequest, says: "empty body: want an admission.k8s.io/v1 AdmissionReview"},
		{name: "blank body", body: []byte(" \n\t"), code: http.StatusBadRequest, says: "empty body"},
		{name: "not JSON", body: []byte("apiVersion: admission.k8s.io/v1"), code: http.StatusBadRequest, says: "decoding the AdmissionReview"},
		{name: "truncated", body: valid[:len(valid)/2], code: http.StatusBadRequest, says: "decoding the AdmissionReview"},
		{name: "truncated by one byte", body: valid[:len(valid)-1], code: http.StatusBadRequest, says: "decoding the AdmissionReview"},
		{name: "JSON null", body: []byte("null"), code: http.StatusBadRequest, says: `got apiVersion "" kind ""`},
		{name: "JSON array", body: []byte("[]"), code: http.StatusBadRequest, says: "decoding the AdmissionReview"},
		{name: "another kind", body: []byte(`{"apiVersion":"v1","kind":"ConfigMap","data":{}}`), code: http.StatusBadRequest, says: `got apiVersion "v1" kind "ConfigMap": want an admission.k8s.io/v1 AdmissionReview`},
		{name: "v1beta1 review", body: bytes.Replace(valid, []byte("admission.k8s.io/v1"), []byte("admission.k8s.io/v1beta1"), 1), code: http.StatusBadRequest, says: `apiVersion "admission.k8s.io/v1beta1"`},
		{name: "no request", body: []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`), code: http.StatusBadRequest, says: "has no request"},
		{name: "null request", body: []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":null}`), code: http.StatusBadRequest, says: "has no request"},
		{name: "a response instead", body: []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"x","allowed":true}}`), code: http.StatusBadRequest, says: "has no request"},
		{name: "no uid", body: withRequest(func(r map[string]any) { delete(r, "uid") }), code: http.StatusBadRequest, says: "request has no uid"},
		{name: "null object", body: withRequest(func(r map[string]any) { r["object"] = nil }), code: http.StatusBadRequest, says: "request.object is null"},
		{name: "no object", body: withRequest(func(r map[string]any) { delete(r, "object") }), code: http.StatusBadRequest, says: "request.object is null"},
		{name: "update without the stored pod", body: update, code: http.StatusBadRequest, says: "request.oldObject is null"},
		{name: "binding of another kind", body: reviewOf(func() *admissionv1.AdmissionRequest { r := bind(nil); r.Kind.Kind = "Pod"; return r }()),
			code: http.StatusBadRequest, says: `request.kind of a CREATE of pods/binding is group "" version "v1" kind "Pod", want a v1 Binding`},
		{name: "binding that is a pod", body: reviewOf(func() *admissionv1.AdmissionRequest { r := bind(nil); r.Object.Raw = mustJSON(newPod()); return r }()),
			code: http.StatusBadRequest, says: `request.object has apiVersion "v1" kind "Pod", want a v1 Binding`},
		{name: "binding with a field twice", body: reviewOf(func() *admissionv1.AdmissionRequest {
			r := bind(nil)
			r.Object.Raw = []byte(`{"metadata":{"name":"web"},"metadata":{"name":"web","annotations":{"x":"y"}},"target":{"name":"node1"}}`)
			return r
		}()), code: http.StatusBadRequest, says: "decoding request.object as a Binding"},
		{name: "object not a pod", body: withRequest(func(r map[string]any) { r["object"] = map[string]any{"spec": 5} }), code: http.StatusBadRequest, says: "decoding request.object as a Pod"},
		{name: "object a string", body: withRequest(func(r map[string]any) { r["object"] = "pod" }), code: http.StatusBadRequest, says: "decoding request.object as a Pod"},
		{
			name: "object of another kind", body: withRequest(func(r map[string]any) { r["object"] = map[string]any{"apiVersion": "v1", "kind": "ConfigMap"} }),
			code: http.StatusBadRequest, says: `request.object has apiVersion "v1" kind "ConfigMap", want a v1 Pod`,
		},
		{
			name: "a write of pods whose kind is not Pod", body: withRequest(func(r map[string]any) { r["kind"] = map[string]any{"group": "", "version": "v1", "kind": "ConfigMap"} }),
			code: http.StatusBadRequest, says: `request.kind of a CREATE of pods is group "" version "v1" kind "ConfigMap", want a v1 Pod`,
		},
		{name: "object without a spec", body: withRequest(func(r map[string]any) { r["object"] = map[string]any{"metadata": map[string]any{"name": "p"}} }), code: http.StatusBadRequest, says: "request.object has no spec"},
		{name: "object with a null spec", body: withRequest(func(r map[string]any) { r["object"].(map[string]any)["spec"] = nil }), code: http.StatusBadRequest, says: "request.object has no spec"},
		{
			name: "object with a field twice", body: bytes.Replace(valid, []byte(`"spec":{`), []byte(`"spec":{"securityContext":{},`), 1),
			code: http.StatusBadRequest, says: `decoding request.object as a Pod: duplicate field "spec.securityContext"`,
		},
		{name: "no namespace", body: withRequest(func(r map[string]any) { delete(r, "namespace") }), code: http.StatusBadRequest, says: "request.namespace of a CREATE of pods is empty"},
		{name: "too large", body: append(valid, bytes.Repeat([]byte(" "), maxReviewBytes)...), code: http.StatusRequestEntityTooLarge, says: "larger than 8 MiB"},
	}
	h := newCluster(t).handler(Options{})
	for _, tc := range cases {
		for _, path := range []string{"/mutate", "/validate"} {
			if tc.path != "" {
				path = tc.path
			}
			t.Run(tc.name+" "+path, func(t *testing.T) {
				method := tc.method
				if method == "" {
					method = http.MethodPost
				}
				req := httptest.NewRequest(method, path, bytes.NewReader(tc.body))
				switch tc.contentType {
				case "":
					req.Header.Set("Content-Type", "application/json")
				case "-":
				default:
					req.Header.Set("Content-Type", tc.contentType)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != tc.code {
					t.Fatalf("HTTP %d %q, want %d", rec.Code, rec.Body, tc.code)
				}
				if !strings.Contains(rec.Body.String(), tc.says) {
					t.Errorf("body %q does not say %q", rec.Body, tc.says)
				}
				if tc.code == http.StatusMethodNotAllowed && rec.Header().Get("Allow") == "" {
					t.Error("405 without an Allow header")
				}
			})
			if tc.path != "" {
				break
			}
		}
	}
}

func TestHealth(t *testing.T) {
	h := newCluster(t).handler(Options{})
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, "/health", nil))
		if rec.Code != http.StatusOK {
			t.Errorf("%s /health: %d", method, rec.Code)
		}
	}
}

// TestNotGoverned: reviews of what the GMSA logic does not govern, or of pods without GMSA, are
// allowed untouched, without asking the cluster anything, even with every option on.
func TestNotGoverned(t *testing.T) {
	unknown := newPod(onPod("nosuch", ""))
	configMap := create(newPod())
	configMap.Kind = metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	configMap.Resource = metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	configMap.Object.Raw = []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"a":"b"}}`)
	otherGroup := create(unknown)
	otherGroup.Resource.Group = "example.com"
	deletion := request(admissionv1.Delete, "", unknown, nil)
	deletion.Object.Raw, deletion.OldObject.Raw = nil, mustJSON(unknown)
	connect := request(admissionv1.Connect, "exec", unknown, nil)
	connect.Kind = metav1.GroupVersionKind{Version: "v1", Kind: "PodExecOptions"}
	connect.Object.Raw = []byte(`{"kind":"PodExecOptions","apiVersion":"v1","command":["cmd"]}`)
	status := request(admissionv1.Update, "status", unknown, unknown)
	binding := bind(nil)
	cases := map[string]*admissionv1.AdmissionRequest{
		"a ConfigMap":           configMap,
		"pods of another group": otherGroup,
		"a pod deleted":         deletion,
		"exec in a pod":         connect,
		"a pod's status":        status,
		"a pod bound":           binding,
		"a pod without GMSA":    create(newPod()),
		"a pod with other Windows options": create(newPod(func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{RunAsUserName: ptr("ContainerUser")}}
		})),
		"a pod without GMSA updated": request(admissionv1.Update, "", newPod(withHostname("a")), newPod()),
	}
	for name, r := range cases {
		for _, path := range []string{"/mutate", "/validate"} {
			t.Run(name+" "+path, func(t *testing.T) {
				c := newCluster(t)
				h := c.handler(Options{Options: gmsa.Options{AuthorizeRequester: true, AlphaAnnotations: true}, RandomHostname: true})
				resp := responseOf(t, post(h, path, reviewOf(r)), r.UID)
				if !resp.Allowed || resp.Result != nil || resp.Patch != nil || resp.PatchType != nil {
					t.Errorf("response %+v, want allowed untouched", resp)
				}
				if n := len(c.asked()) + len(c.dynamic.Actions()); n > 0 {
					t.Errorf("asked the cluster %d things", n)
				}
			})
		}
	}
}

// dnsLabel15 is a DNS label that fits a NetBIOS computer name.
var dnsLabel15 = regexp.MustCompile(`^[a-z][a-z0-9]{14}$`)

// TestMutate: the response's JSON Patch, applied to the object the API server sent, yields the
// pod the expander makes; refusals carry the GMSA logic's status in an HTTP 200.
func TestMutate(t *testing.T) {
	alpha := Options{Options: gmsa.Options{AlphaAnnotations: true}}
	random := Options{RandomHostname: true}
	debugOld := newPod(onApp("webapp1", webapp1Compact), withDebug("dbg0", "", ""))
	cases := []struct {
		name string
		opts Options
		req  *admissionv1.AdmissionRequest
		// want is the pod after the patch; nil: no patch.
		want *corev1.Pod
		// randomHostname: the patched pod has a random hostname (want has none).
		randomHostname bool
		code           int32
		reason         metav1.StatusReason
		says           []string
		setup          func(*cluster)
		check          func(*testing.T, *cluster)
	}{
		{name: "no GMSA", req: create(newPod())},
		{name: "name on the pod", req: create(newPod(onPod("webapp1", ""))), want: newPod(onPod("webapp1", webapp1Compact))},
		{
			name: "names everywhere, each spec fetched once",
			req:  create(newPod(onPod("webapp2", ""), onApp("webapp1", ""), withInit("webapp1", ""), withDebug("dbg", "webapp2", ""))),
			want: newPod(onPod("webapp2", webapp2), onApp("webapp1", webapp1Compact), withInit("webapp1", webapp1Compact), withDebug("dbg", "webapp2", webapp2)),
			check: func(t *testing.T, c *cluster) {
				if n := len(c.dynamic.Actions()); n != 2 {
					t.Errorf("%d requests for GMSACredentialSpecs, want 2: %v", n, c.dynamic.Actions())
				}
			},
		},
		{name: "contents already there: left to the authorizer", req: create(newPod(onApp("webapp1", webapp2)))},
		{
			name: "unknown name: 422", req: create(newPod(onApp("nosuch", ""))), code: 422, reason: metav1.StatusReasonInvalid,
			says: []string{`spec.containers[0].securityContext.windowsOptions.gmsaCredentialSpecName: Not found: "nosuch"`, "no GMSACredentialSpec has this name"},
		},
		{
			name: "a spec without credspec: 422", req: create(newPod(onApp("empty", ""))), code: 422, reason: metav1.StatusReasonInvalid,
			says:  []string{"the credspec of this GMSACredentialSpec is not JSON"},
			setup: func(c *cluster) { addEmpty(t, c, "empty") },
		},
		{
			name: "lookup failed: 500", req: create(newPod(onApp("webapp1", ""))), code: 500, reason: metav1.StatusReasonInternalError,
			says: []string{`looking up GMSACredentialSpec "webapp1"`, "connection refused"}, setup: (*cluster).failGets,
		},
		{
			name: "alpha annotations", opts: alpha, req: create(newPod(annotate(podNameAnnotation, "webapp1"))),
			want: newPod(annotate(podNameAnnotation, "webapp1"), annotate(podContentsAnnotation, webapp1Compact)),
		},
		{name: "alpha annotations ignored without the option", req: create(newPod(annotate(podNameAnnotation, "nosuch")))},
		{
			name: "random hostname", opts: random, req: create(newPod(onApp("webapp1", ""))),
			want: newPod(onApp("webapp1", webapp1Compact)), randomHostname: true,
		},
		{name: "random hostname for contents alone", opts: random, req: create(newPod(onApp("", webapp1))), want: newPod(onApp("", webapp1)), randomHostname: true},
		{
			name: "random hostname for alpha annotations", opts: Options{Options: alpha.Options, RandomHostname: true}, req: create(newPod(annotate(podNameAnnotation, "webapp1"))),
			want: newPod(annotate(podNameAnnotation, "webapp1"), annotate(podContentsAnnotation, webapp1Compact)), randomHostname: true,
		},
		{
			name: "hostname kept", opts: random, req: create(newPod(withHostname("web-0"), onApp("webapp1", ""))),
			want: newPod(withHostname("web-0"), onApp("webapp1", webapp1Compact)),
		},
		{name: "no hostname for a pod without GMSA", opts: random, req: create(newPod())},
		{
			name: "debug container added: expanded, no hostname", opts: random,
			req:  request(admissionv1.Update, "ephemeralcontainers", newPod(onApp("webapp1", webapp1Compact), withDebug("dbg0", "", ""), withDebug("dbg1", "webapp2", "")), debugOld),
			want: newPod(onApp("webapp1", webapp1Compact), withDebug("dbg0", "", ""), withDebug("dbg1", "webapp2", webapp2)),
		},
		{name: "update of a GMSA pod", opts: random, req: request(admissionv1.Update, "", newPod(onApp("webapp1", webapp1Compact)), newPod(onApp("webapp1", webapp1Compact)))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			if tc.setup != nil {
				tc.setup(c)
			}
			resp := responseOf(t, post(c.handler(tc.opts), "/mutate", reviewOf(tc.req)), tc.req.UID)
			checkResult(t, resp, tc.code, tc.reason, tc.says...)
			if tc.code != 0 {
				return
			}
			if tc.want == nil {
				if resp.Patch != nil || resp.PatchType != nil {
					t.Fatalf("patch %s, want none", resp.Patch)
				}
				return
			}
			if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
				t.Fatalf("patch type %v, want JSONPatch", resp.PatchType)
			}
			got := applyPatch(t, tc.req.Object.Raw, resp.Patch)
			if tc.randomHostname {
				if !dnsLabel15.MatchString(got.Spec.Hostname) {
					t.Errorf("hostname %q is not a random 15-character DNS label", got.Spec.Hostname)
				}
				got.Spec.Hostname = ""
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("patched pod (-want +got):\n%s\npatch: %s", d, resp.Patch)
			}
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}

// TestMutatePatchOnlyAdds: the patch is additions of exactly the changed members, so that it
// cannot clobber what another mutating webhook wrote meanwhile.
func TestMutatePatchOnlyAdds(t *testing.T) {
	c := newCluster(t)
	req := create(newPod(onPod("webapp2", ""), onApp("webapp1", webapp1), annotate(podNameAnnotation, "webapp1"), annotate("a/b~c", "x")))
	resp := responseOf(t, post(c.handler(Options{Options: gmsa.Options{AlphaAnnotations: true}}), "/mutate", reviewOf(req)), req.UID)
	want := []patchOp{
		add("/spec/securityContext/windowsOptions/gmsaCredentialSpec", webapp2),
		add("/metadata/annotations/pod.alpha.windows.kubernetes.io~1gmsa-credential-spec", webapp1Compact),
	}
	var got []patchOp
	if err := json.Unmarshal(resp.Patch, &got); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("patch (-want +got):\n%s", d)
	}
}

func TestRandomHostnames(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		h := randomHostname()
		if !dnsLabel15.MatchString(h) || seen[h] {
			t.Fatalf("hostname %q: not a 15-character DNS label, or seen before", h)
		}
		seen[h] = true
	}
}

// TestValidate: the authorizer's answers, with use asked by LocalSubjectAccessReview in the pod's
// namespace for the service account and, with the option, the requester as it authenticated.
func TestValidate(t *testing.T) {
	requester := Options{Options: gmsa.Options{AuthorizeRequester: true}}
	alpha := Options{Options: gmsa.Options{AlphaAnnotations: true}}
	expanded := newPod(onApp("webapp1", webapp1Compact))
	cases := []struct {
		name   string
		opts   Options
		req    *admissionv1.AdmissionRequest
		code   int32
		reason metav1.StatusReason
		says   []string
		// asked are the users whose use was asked, in order.
		asked []string
		setup func(*cluster)
	}{
		{name: "no GMSA", req: create(newPod())},
		{
			name: "status write adding alpha annotations: 400", opts: alpha,
			req:  request(admissionv1.Update, "status", newPod(annotate(podNameAnnotation, "webapp1"), annotate(podContentsAnnotation, `{"forged":true}`)), newPod()),
			code: 400, reason: metav1.StatusReasonBadRequest,
			says: []string{`metadata.annotations[pod.alpha.windows.kubernetes.io/gmsa-credential-spec-name] changed from "" to "webapp1"`},
		},
		{
			name: "status write keeping the specs", opts: alpha,
			req: request(admissionv1.Update, "status", newPod(annotate(podNameAnnotation, "webapp1"), annotate("team", "web")), newPod(annotate(podNameAnnotation, "webapp1"))),
		},
		{
			name: "binding carrying alpha annotations: 400", opts: alpha, req: bind(map[string]string{podNameAnnotation: "webapp1"}),
			code: 400, reason: metav1.StatusReasonBadRequest,
			says: []string{`metadata.annotations[pod.alpha.windows.kubernetes.io/gmsa-credential-spec-name] set to "webapp1" by a binding`},
		},
		{name: "binding carrying alpha annotations with the option off", req: bind(map[string]string{podNameAnnotation: "webapp1"})},
		{name: "expanded pod, service account allowed", req: create(expanded), asked: []string{saDefault}},
		{name: "contents in another form, same JSON value", req: create(newPod(onApp("webapp1", webapp1))), asked: []string{saDefault}},
		{
			name: "service account denied: 403", req: create(newPod(withServiceAccount("other"), onApp("webapp1", webapp1Compact))),
			code: 403, reason: metav1.StatusReasonForbidden, asked: []string{"system:serviceaccount:default:other"},
			says: []string{`gmsacredentialspecs.windows.k8s.io "webapp1" is forbidden`, `service account "system:serviceaccount:default:other" may not use it`, "no RBAC rule allows it"},
		},
		{
			name: "requester denied: 403", opts: requester, req: create(expanded), code: 403, reason: metav1.StatusReasonForbidden,
			asked: []string{saDefault, "bob"}, says: []string{`user "bob" may not use it`},
		},
		{
			name: "requester allowed", opts: requester, asked: []string{saDefault, "alice"},
			req: func() *admissionv1.AdmissionRequest {
				r := create(expanded)
				r.UserInfo.Username = "alice"
				return r
			}(),
		},
		{name: "requester not asked without the option", req: create(expanded), asked: []string{saDefault}},
		{
			name: "contents without a name: 422", req: create(newPod(onApp("", webapp1Compact))), code: 422, reason: metav1.StatusReasonInvalid,
			says: []string{"gmsaCredentialSpecName: Required value"},
		},
		{
			name: "contents of another spec: 422", req: create(newPod(onApp("webapp1", webapp2))), code: 422, reason: metav1.StatusReasonInvalid,
			says: []string{`differs from the credspec of GMSACredentialSpec "webapp1"`}, asked: []string{saDefault},
		},
		{
			name: "alpha annotation changed on update: 400", opts: alpha, code: 400, reason: metav1.StatusReasonBadRequest,
			req: request(admissionv1.Update, "",
				newPod(annotate(podNameAnnotation, "webapp2"), annotate(podContentsAnnotation, webapp2)),
				newPod(annotate(podNameAnnotation, "webapp1"), annotate(podContentsAnnotation, webapp1Compact))),
			says: []string{"GMSA credential specs of a pod cannot change", `changed from "webapp1" to "webapp2"`},
		},
		{
			name: "debug container added with a spec its account may not use: 403", code: 403, reason: metav1.StatusReasonForbidden,
			req: request(admissionv1.Update, "ephemeralcontainers",
				newPod(withServiceAccount("other"), withDebug("dbg", "webapp1", webapp1Compact)), newPod(withServiceAccount("other"))),
			asked: []string{"system:serviceaccount:default:other"}, says: []string{"spec.ephemeralContainers[0].securityContext.windowsOptions.gmsaCredentialSpecName"},
		},
		{
			name: "review failed: 500", req: create(expanded), code: 500, reason: metav1.StatusReasonInternalError, asked: []string{saDefault},
			says:  []string{`asking whether service account "system:serviceaccount:default:sa" may use GMSACredentialSpec "webapp1"`, `LocalSubjectAccessReview in namespace "default"`, "connection refused"},
			setup: func(c *cluster) { c.failReviews = errBackend },
		},
		{
			name: "lookup failed: 500", req: create(expanded), code: 500, reason: metav1.StatusReasonInternalError, asked: []string{saDefault},
			says: []string{`looking up GMSACredentialSpec "webapp1"`}, setup: (*cluster).failGets,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			if tc.setup != nil {
				tc.setup(c)
			}
			resp := responseOf(t, post(c.handler(tc.opts), "/validate", reviewOf(tc.req)), tc.req.UID)
			checkResult(t, resp, tc.code, tc.reason, tc.says...)
			if resp.Patch != nil {
				t.Errorf("validation patched: %s", resp.Patch)
			}
			var asked []string
			for _, r := range c.asked() {
				asked = append(asked, r.Spec.User)
				checkReview(t, r, tc.req)
			}
			if !slices.Equal(asked, tc.asked) {
				t.Errorf("asked use of %q, want %q", asked, tc.asked)
			}
		})
	}
}

// checkReview checks that a LocalSubjectAccessReview asks use of the spec in the pod's namespace,
// for the service account with its groups or for the requester as the API server described it.
func checkReview(t *testing.T, r authorizationv1.LocalSubjectAccessReview, req *admissionv1.AdmissionRequest) {
	t.Helper()
	ra := r.Spec.ResourceAttributes
	if r.Namespace != req.Namespace || ra.Namespace != req.Namespace || ra.Verb != "use" || ra.Group != "windows.k8s.io" || ra.Resource != "gmsacredentialspecs" || ra.Name == "" {
		t.Errorf("review in %q of %+v", r.Namespace, ra)
	}
	if strings.HasPrefix(r.Spec.User, "system:serviceaccount:") {
		want := []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"}
		if !slices.Equal(r.Spec.Groups, want) || r.Spec.UID != "" || r.Spec.Extra != nil {
			t.Errorf("service account asked as %+v, want groups %q", r.Spec, want)
		}
		return
	}
	u := req.UserInfo
	if r.Spec.User != u.Username || !slices.Equal(r.Spec.Groups, u.Groups) || r.Spec.UID != u.UID || !slices.Equal([]string(r.Spec.Extra["scopes"]), []string(u.Extra["scopes"])) {
		t.Errorf("requester asked as %+v, want %+v", r.Spec, u)
	}
}

// checkResult checks a response's allowed and status: code 0 is allowed.
func checkResult(t *testing.T, resp *admissionv1.AdmissionResponse, code int32, reason metav1.StatusReason, says ...string) {
	t.Helper()
	if code == 0 {
		if !resp.Allowed || resp.Result != nil {
			t.Fatalf("refused with %+v, want allowed", resp.Result)
		}
		return
	}
	if resp.Allowed || resp.Result == nil {
		t.Fatalf("allowed, want %d", code)
	}
	r := resp.Result
	if r.Code != code || r.Reason != reason || r.Status != metav1.StatusFailure {
		t.Fatalf("status %d %s %s %q, want %d %s", r.Code, r.Status, r.Reason, r.Message, code, reason)
	}
	if code == 422 && (r.Details == nil || len(r.Details.Causes) == 0) {
		t.Errorf("422 without the field causes: %+v", r)
	}
	for _, s := range says {
		if !strings.Contains(r.Message, s) {
			t.Errorf("message %q does not say %q", r.Message, s)
		}
	}
}

// applyPatch applies a JSON Patch to a pod's JSON as the API server would.
func applyPatch(t *testing.T, raw, patch []byte) *corev1.Pod {
	t.Helper()
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatalf("decoding patch %s: %v", patch, err)
	}
	patched, err := p.Apply(raw)
	if err != nil {
		t.Fatalf("applying patch %s: %v", patch, err)
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(patched, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// addEmpty stores a GMSACredentialSpec without a credspec.
func addEmpty(t *testing.T, c *cluster, name string) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "windows.k8s.io/v1", "kind": "GMSACredentialSpec", "metadata": map[string]any{"name": name},
	}}
	if err := c.dynamic.Tracker().Add(obj); err != nil {
		t.Fatal(err)
	}
}
