package apiserver

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// reviewKind is one review resource as the comparison sends it: its path and a valid body without
// metadata, whose last byte closes the object.
type reviewKind struct {
	name, path, apiVersion, kind, spec string
}

func (k reviewKind) body(extra string) string {
	b := `{"apiVersion":"` + k.apiVersion + `","kind":"` + k.kind + `"`
	if k.spec != "" {
		b += `,"spec":` + k.spec
	}
	return b + extra + "}"
}

var reviewKinds = []reviewKind{
	{"tokenreviews", "/apis/authentication.k8s.io/v1/tokenreviews", "authentication.k8s.io/v1", "TokenReview", `{"token":"not-a-token"}`},
	{"selfsubjectreviews", "/apis/authentication.k8s.io/v1/selfsubjectreviews", "authentication.k8s.io/v1", "SelfSubjectReview", ""},
	{"subjectaccessreviews", "/apis/authorization.k8s.io/v1/subjectaccessreviews", "authorization.k8s.io/v1", "SubjectAccessReview",
		`{"user":"someone","resourceAttributes":{"verb":"get","resource":"pods","namespace":"default"}}`},
	{"selfsubjectaccessreviews", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "authorization.k8s.io/v1", "SelfSubjectAccessReview",
		`{"resourceAttributes":{"verb":"get","resource":"pods","namespace":"default"}}`},
	{"localsubjectaccessreviews", "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews", "authorization.k8s.io/v1", "LocalSubjectAccessReview",
		`{"user":"someone","resourceAttributes":{"verb":"get","resource":"pods","namespace":"default"}}`},
	{"serviceaccounts/token", "/api/v1/namespaces/default/serviceaccounts/compared/token", "authentication.k8s.io/v1", "TokenRequest", `{"expirationSeconds":3600}`},
}

// reviewRequest is one request of the comparison.
type reviewRequest struct {
	path, query, contentType, accept string
	body                             []byte
	// library marks a request the review handler hands to the library whole, even when valid.
	library bool
}

type reviewAnswer struct {
	code        int
	contentType string
	warnings    []string
	body        []byte
}

func sendReview(t *testing.T, client *http.Client, host string, r reviewRequest) reviewAnswer {
	t.Helper()
	u := host + r.path
	if r.query != "" {
		u += "?" + r.query
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, u, bytes.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", r.contentType)
	req.Header.Set("Accept", r.accept)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reviewAnswer{code: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), warnings: resp.Header.Values("Warning"), body: body}
}

// reviewVariants are the requests the comparison sends for one kind: valid ones in every media
// type and with every option, and bad ones of every sort the library refuses.
func reviewVariants(t *testing.T, k reviewKind) map[string]reviewRequest {
	t.Helper()
	const js, yml, pb = "application/json", "application/yaml", "application/vnd.kubernetes.protobuf"
	valid := k.body("")
	asYAML, err := yaml.JSONToYAML([]byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	obj, _, err := codecs.UniversalDeserializer().Decode([]byte(valid), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var asProto bytes.Buffer
	gv, _ := schema.ParseGroupVersion(k.apiVersion)
	if err := codecs.EncoderForVersion(protobufSerializer(t), gv).Encode(obj, &asProto); err != nil {
		t.Fatal(err)
	}
	req := func(query, contentType, accept string, body []byte) reviewRequest {
		return reviewRequest{path: k.path, query: query, contentType: contentType, accept: accept, body: body}
	}
	jsonReq := func(query, body string) reviewRequest { return req(query, js, js, []byte(body)) }
	unknown := k.body(`,"bogus":true`)
	duplicate := k.body(`,"kind":"` + k.kind + `"`)
	return map[string]reviewRequest{
		"valid":                           jsonReq("", valid),
		"pretty":                          jsonReq("pretty=true", valid),
		"dry run":                         jsonReq("dryRun=All", valid),
		"bad dry run":                     jsonReq("dryRun=Maybe", valid),
		"bad field validation":            jsonReq("fieldValidation=Sometimes", valid),
		"bad json":                        jsonReq("", valid[:len(valid)/2]),
		"not an object":                   jsonReq("", `[1,2]`),
		"another kind":                    jsonReq("", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`),
		"another version":                 jsonReq("", strings.Replace(valid, "/v1", "/v1beta1", 1)),
		"no kind":                         jsonReq("", `{"spec":{}}`),
		"validation error":                jsonReq("", `{"apiVersion":"`+k.apiVersion+`","kind":"`+k.kind+`","spec":{}}`),
		"unknown field":                   jsonReq("", unknown),
		"unknown field, Warn":             jsonReq("fieldValidation=Warn", unknown),
		"unknown field, Strict":           jsonReq("fieldValidation=Strict", unknown),
		"unknown field, Ignore":           jsonReq("fieldValidation=Ignore", unknown),
		"duplicate field":                 jsonReq("", duplicate),
		"duplicate field, Strict":         jsonReq("fieldValidation=Strict", duplicate),
		"named":                           jsonReq("", k.body(`,"metadata":{"name":"x","uid":"u","resourceVersion":"7"}`)),
		"object in another namespace":     jsonReq("", k.body(`,"metadata":{"namespace":"other"}`)),
		"object in the request namespace": jsonReq("", k.body(`,"metadata":{"namespace":"default"}`)),
		"owner references":                handedOver(jsonReq("", k.body(`,"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"p","uid":"1"},{"apiVersion":"v1","kind":"Pod","name":"p","uid":"1"}]}`))),
		"too large":                       jsonReq("", k.body(`,"metadata":{"annotations":{"a":"`+strings.Repeat("x", 3<<20)+`"}}`)),
		"yaml":                            req("", yml, yml, asYAML),
		"yaml, json out":                  req("", yml, js, asYAML),
		"yaml, duplicate key, Warn":       req("fieldValidation=Warn", yml, yml, append([]byte("kind: "+k.kind+"\n"), asYAML...)),
		"yaml, duplicate key, Strict":     req("fieldValidation=Strict", yml, yml, append([]byte("kind: "+k.kind+"\n"), asYAML...)),
		"yaml, unknown field, Warn":       req("fieldValidation=Warn", yml, yml, append([]byte("bogus: 1\nother: 2\n"), asYAML...)),
		"protobuf":                        req("", pb, pb, asProto.Bytes()),
		"protobuf, json out":              req("", pb, js, asProto.Bytes()),
		"protobuf, cut short":             req("", pb, pb, asProto.Bytes()[:asProto.Len()/2]),
		"unsupported content type":        req("", "text/plain", js, []byte(valid)),
		"not acceptable":                  req("", js, "text/html", []byte(valid)),
		"as table":                        handedOver(req("", js, "application/json;as=Table;v=v1;g=meta.k8s.io", []byte(valid))),
		"as partial object metadata":      handedOver(req("", js, "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io", []byte(valid))),
	}
}

func handedOver(r reviewRequest) reviewRequest {
	r.library = true
	return r
}

func protobufSerializer(t *testing.T) runtime.Serializer {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	return info.Serializer
}

// managedFieldsOf decodes a successful answer (JSON, YAML or protobuf) and returns the object
// without its managed fields, and how many entries it had.
func managedFieldsOf(t *testing.T, body []byte) (runtime.Object, int) {
	t.Helper()
	obj, _, err := codecs.UniversalDeserializer().Decode(sameCredential(body), nil, nil)
	if err != nil {
		t.Fatalf("decoding answer %q: %v", body, err)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	n := len(m.GetManagedFields())
	m.SetManagedFields(nil)
	m.SetCreationTimestamp(metav1.Time{}) // a SelfSubjectReview's: the two servers answer a moment apart
	if tr, ok := obj.(*authenticationv1.TokenRequest); ok {
		// Each server signs its own token for its own audience (its address), and names its own
		// service account's UID (TestTokenRequestFollowsRecreatedServiceAccount checks that UID).
		tr.Status, tr.Spec.Audiences, tr.UID = authenticationv1.TokenRequestStatus{}, nil, ""
	}
	return obj, n
}

// certID is the admin certificate's hash in a SelfSubjectReview's credential-id: each server has
// its own admin certificate.
var certID = regexp.MustCompile(`X509SHA256=[0-9a-f]{64}`)

// sameCredential replaces the admin certificate's hash by one of the same length, which keeps a
// protobuf answer well-formed.
func sameCredential(b []byte) []byte {
	return certID.ReplaceAll(b, []byte("X509SHA256="+strings.Repeat("0", 64)))
}

// timeStamp is a managed fields entry's time or a SelfSubjectReview's creation time in a JSON
// answer: the two servers answer a moment apart.
var timeStamp = regexp.MustCompile(`"(time|creationTimestamp)":"[^"]*"`)

// uidField is a TokenRequest answer's uid: each server's service account has its own.
var uidField = regexp.MustCompile(`"uid":"[0-9a-f-]{36}"`)

func sameTimes(b []byte) []byte {
	b = uidField.ReplaceAll(sameCredential(b), []byte(`"uid":"U"`))
	return timeStamp.ReplaceAll(b, []byte(`"$1":"T"`))
}

// TestReviewHandlerMatchesLibrary sends the same requests, valid and bad, to a server whose review
// and TokenRequest creates go through internal/reviewserving and to one whose go through the
// library's generic handler, and wants the same answers: code, content type, warnings and bytes, but for the
// managed fields the library adds to a successful answer and the review handler does not.
func TestReviewHandlerMatchesLibrary(t *testing.T) {
	fast := startTestServer(t, t.TempDir(), nil)
	generic := startTestServer(t, t.TempDir(), func(o *Options) { o.genericReviews = true })
	clientFor := func(cfg *rest.Config) *http.Client {
		c, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	fastClient, genericClient := clientFor(fast.config), clientFor(generic.config)
	ownURL := func(s string) func([]byte) []byte {
		// Only the server's own address differs between the two; a review answer does not name it.
		return func(b []byte) []byte { return bytes.ReplaceAll(b, []byte(s), []byte("SERVER")) }
	}
	normFast, normGeneric := ownURL(fast.URL), ownURL(generic.URL)
	for _, s := range []*testServer{fast, generic} {
		ensureServiceAccount(t, s.client, "default", "compared")
	}
	for _, k := range reviewKinds {
		for name, r := range reviewVariants(t, k) {
			t.Run(k.name+"/"+name, func(t *testing.T) {
				got := sendReview(t, fastClient, fast.URL, r)
				want := sendReview(t, genericClient, generic.URL, r)
				if got.code != want.code || got.contentType != want.contentType || !cmp.Equal(got.warnings, want.warnings) {
					t.Fatalf("review handler answered %d %s warnings %q\n%s\nlibrary %d %s warnings %q\n%s",
						got.code, got.contentType, got.warnings, got.body, want.code, want.contentType, want.warnings, want.body)
				}
				if got.code/100 != 2 || strings.Contains(r.accept, ";as=") {
					g, w := sameTimes(normFast(got.body)), sameTimes(normGeneric(want.body))
					if !bytes.Equal(g, w) {
						t.Fatalf("answer differs:\n%s\nlibrary:\n%s", g, w)
					}
					return
				}
				gotObj, gotFields := managedFieldsOf(t, got.body)
				wantObj, wantFields := managedFieldsOf(t, want.body)
				// The handler's answer must carry no managed fields, and the library's valid one
				// does where the resource echoes the object it was sent (all but SelfSubjectReview):
				// else the request did not take the handler's path.
				switch {
				case r.library:
					if gotFields == 0 && k.kind != "SelfSubjectReview" {
						t.Errorf("handed-over request answered without managed fields: the library did not answer it")
					}
				case gotFields != 0:
					t.Errorf("review handler's answer carries %d managed fields entries", gotFields)
				case name == "valid" && (wantFields == 0) != (k.kind == "SelfSubjectReview"):
					t.Errorf("library's answer carries %d managed fields entries", wantFields)
				}
				if diff := cmp.Diff(wantObj, gotObj); diff != "" {
					t.Errorf("answer differs (-library +handler):\n%s", diff)
				}
			})
		}
	}
	// A query string the server does not know is ignored by both; the path must match exactly.
	for _, p := range []string{"/apis/authorization.k8s.io/v1/subjectaccessreviews/", "/apis/authorization.k8s.io/v1/namespaces/default/subjectaccessreviews",
		"/apis/authorization.k8s.io/v1/localsubjectaccessreviews", "/apis/authorization.k8s.io/v1/subjectaccessreviews/name",
		"/api/v1/serviceaccounts/compared/token", "/api/v1/namespaces/default/serviceaccounts/token", "/api/v1/namespaces/default/serviceaccounts/compared/token/"} {
		r := reviewRequest{path: p, query: url.Values{"x": {"y"}}.Encode(), contentType: "application/json", accept: "application/json", body: []byte(reviewKinds[2].body(""))}
		got, want := sendReview(t, fastClient, fast.URL, r), sendReview(t, genericClient, generic.URL, r)
		if got.code != want.code || !bytes.Equal(normFast(got.body), normGeneric(want.body)) {
			t.Errorf("POST %s: handler %d %s, library %d %s", p, got.code, got.body, want.code, want.body)
		}
	}
}

// TestReviewHandlerAudit: at level RequestResponse a review the review handler answers is audited
// with the object the client sent and the answer, as the library's handler audits it; a refused
// one with the refusal.
func TestReviewHandlerAudit(t *testing.T) {
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	err := os.WriteFile(policy, []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: RequestResponse
  resources: [{group: authorization.k8s.io}, {group: authentication.k8s.io}]
- level: None
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "audit.log")
	s := startTestServer(t, t.TempDir(), func(o *Options) { o.Audit.PolicyFile, o.Audit.LogOptions.Path = policy, logPath })
	ctx := context.Background()
	sar, err := s.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "audited-user", ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "list", Resource: "secrets"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sar.ManagedFields) != 0 {
		t.Fatalf("answer carries managed fields %v: the review did not take the review handler", sar.ManagedFields)
	}
	if _, err := s.client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "not-a-token"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, _ := postRaw(t, s.config, "/apis/authorization.k8s.io/v1/subjectaccessreviews", `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{}}`)
	if code != http.StatusUnprocessableEntity {
		t.Fatalf("empty review answered %d, want 422", code)
	}
	found := waitForAuditEvents(t, logPath,
		auditQuery{verb: "create", resource: "subjectaccessreviews", code: 201},
		auditQuery{verb: "create", resource: "tokenreviews", code: 201},
		auditQuery{verb: "create", resource: "subjectaccessreviews", code: 422})
	for i, want := range []struct{ request, response string }{
		{`"user":"audited-user"`, `"status":{"allowed":false}`},
		{`"token":"not-a-token"`, `"error":"invalid bearer token"`},
		{`"spec":{}`, `"reason":"Invalid"`},
	} {
		ev := found[i]
		if ev.Level != auditv1.LevelRequestResponse || ev.RequestObject == nil || ev.ResponseObject == nil {
			t.Errorf("event %d at level %s, request object %v, response object %v; want RequestResponse with both", i, ev.Level, ev.RequestObject != nil, ev.ResponseObject != nil)
			continue
		}
		if !strings.Contains(string(ev.RequestObject.Raw), want.request) || !strings.Contains(string(ev.ResponseObject.Raw), want.response) {
			t.Errorf("event %d: request %s, response %s; want %s and %s", i, ev.RequestObject.Raw, ev.ResponseObject.Raw, want.request, want.response)
		}
		if ev.Annotations["authorization.k8s.io/decision"] != "allow" {
			t.Errorf("event %d: the caller's authorization decision %q, want allow", i, ev.Annotations["authorization.k8s.io/decision"])
		}
	}
}

// TestReviewHandlerMetrics: the reviews the review handler answers count in the request metrics
// under the labels the library's route gives them.
func TestReviewHandlerMetrics(t *testing.T) {
	s := startTestServer(t, t.TempDir(), nil)
	labels := map[string]string{"verb": "POST", "group": "authorization.k8s.io", "version": "v1", "resource": "subjectaccessreviews", "scope": "resource", "component": "apiserver"}
	created := map[string]string{"code": "201"}
	for k, v := range labels {
		created[k] = v
	}
	count := func() (total, duration, body float64) {
		sum := scrapeMetrics(t, s)
		total, _ = sum("apiserver_request_total", created)
		duration, _ = sum("apiserver_request_duration_seconds_count", labels)
		body, _ = sum("apiserver_request_body_size_bytes_count", map[string]string{"group": "authorization.k8s.io", "resource": "subjectaccessreviews", "verb": "create"})
		return total, duration, body
	}
	total0, duration0, body0 := count()
	const n = 5
	for range n {
		code, body := postRaw(t, s.config, "/apis/authorization.k8s.io/v1/subjectaccessreviews",
			`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"u","resourceAttributes":{"verb":"get","resource":"pods"}}}`)
		if code != http.StatusCreated || strings.Contains(body, "managedFields") {
			t.Fatalf("review answered %d %s; want 201 from the review handler", code, body)
		}
	}
	// Metrics are process-wide and other tests' servers may share them: count what this one added.
	total, duration, body := count()
	if total-total0 < n || duration-duration0 < n || body-body0 < n {
		t.Errorf("after %d reviews: apiserver_request_total +%v, apiserver_request_duration_seconds_count +%v, apiserver_request_body_size_bytes_count +%v; want each >= %d",
			n, total-total0, duration-duration0, body-body0, n)
	}
}

// TestTokenRequestHandlerNodeRestriction: TokenRequests the review handler answers still pass the
// Node authorizer and NodeRestriction admission. The node is authorized to ask for the service
// account's tokens (its pod runs as it), so every refusal past the first is admission's.
func TestTokenRequestHandlerNodeRestriction(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	ensureServiceAccount(t, s.client, "default", "bot")
	withVault := func(p *corev1.Pod) {
		p.Spec.ServiceAccountName = "bot"
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "vault", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", Audience: "vault"}}},
		}}})
	}
	mine, err := s.client.CoreV1().Pods("default").Create(ctx, newPod("mine", onNode("n1"), withVault), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := s.client.CoreV1().Pods("default").Create(ctx, newPod("theirs", onNode("n2"), withVault), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	boundTo := func(p *corev1.Pod, audience string) authenticationv1.TokenRequestSpec {
		return authenticationv1.TokenRequestSpec{Audiences: []string{audience}, BoundObjectRef: &authenticationv1.BoundObjectReference{
			APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID,
		}}
	}
	n1 := nodeClient(t, s, "n1")
	eventually(t, "n1 gets its pod's token", func() error {
		tr, err := requestToken(n1, "default", "bot", boundTo(mine, "vault"))
		if err == nil && len(tr.ManagedFields) != 0 {
			t.Fatalf("answer carries managed fields %v: the request did not take the review handler", tr.ManagedFields)
		}
		return err
	})
	for _, tc := range []struct {
		name   string
		client kubernetes.Interface
		spec   authenticationv1.TokenRequestSpec
		says   string
	}{
		{"a pod on another node", n1, boundTo(theirs, "vault"), "a pod scheduled on a different node"},
		{"an audience its pod does not name", n1, boundTo(mine, "elsewhere"), `audience "elsewhere"`},
		{"no pod", n1, authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}}, "pod"},
		{"another node's pod, asked by a node without pods", nodeClient(t, s, "n3"), boundTo(mine, "vault"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := requestToken(tc.client, "default", "bot", tc.spec)
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("token for %s: %v, want 403 naming %q", tc.name, err, tc.says)
			}
		})
	}
}
