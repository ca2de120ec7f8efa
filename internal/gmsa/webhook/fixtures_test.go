package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apiserver/pkg/authentication/user"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"

	"github.com/idplane/idplane/internal/gmsa"
)

// webapp1 is the design's example credspec as an admin writes it; the dynamic client hands it to
// the webhook as a map, which encodes with sorted keys: webapp1Compact is what pods get.
const (
	webapp1 = `{
  "CmsPlugins": ["ActiveDirectory"],
  "DomainJoinConfig": {"DnsName": "contoso.com", "DnsTreeName": "contoso.com", "Guid": "244818ae-87ca-4fcd-92ec-e79e5252348a",
    "MachineAccountName": "WebApp1", "NetBiosName": "CONTOSO", "Sid": "S-1-5-21-2126729477-2524075714-3094792973"},
  "ActiveDirectoryConfig": {"GroupManagedServiceAccounts": [{"Name": "WebApp1", "Scope": "CONTOSO"}, {"Name": "WebApp1", "Scope": "contoso.com"}]},
  "Version": 1
}`
	webapp1Compact = `{"ActiveDirectoryConfig":{"GroupManagedServiceAccounts":[{"Name":"WebApp1","Scope":"CONTOSO"},{"Name":"WebApp1","Scope":"contoso.com"}]},"CmsPlugins":["ActiveDirectory"],"DomainJoinConfig":{"DnsName":"contoso.com","DnsTreeName":"contoso.com","Guid":"244818ae-87ca-4fcd-92ec-e79e5252348a","MachineAccountName":"WebApp1","NetBiosName":"CONTOSO","Sid":"S-1-5-21-2126729477-2524075714-3094792973"},"Version":1}`
	webapp2        = `{"CmsPlugins":["ActiveDirectory"],"DomainJoinConfig":{"MachineAccountName":"WebApp2"}}`
)

// credSpecObject is a GMSACredentialSpec as the cluster stores it.
func credSpecObject(t testing.TB, name, credspec string) *unstructured.Unstructured {
	var spec map[string]any
	if err := utiljson.Unmarshal([]byte(credspec), &spec); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "windows.k8s.io/v1",
		"kind":       "GMSACredentialSpec",
		"metadata":   map[string]any{"name": name},
		"credspec":   spec,
	}}
}

// cluster is the fake cluster the webhook talks to: GMSACredentialSpecs webapp1 and webapp2 in a
// dynamic fake, and use answered by a LocalSubjectAccessReview reactor from grants.
type cluster struct {
	dynamic *dynamicfake.FakeDynamicClient
	kube    *fake.Clientset

	mu sync.Mutex
	// grants is user → specs it may use, in namespace "default" only (a RoleBinding there).
	grants map[string][]string
	// reviews are the reviews asked, in order.
	reviews []authorizationv1.LocalSubjectAccessReview
	// failReviews makes every review fail.
	failReviews error
}

// saDefault is the service account of the tests' pods as it authenticates.
const saDefault = "system:serviceaccount:default:sa"

func newCluster(t testing.TB) *cluster {
	c := &cluster{
		dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{credSpecGVR: "GMSACredentialSpecList"},
			credSpecObject(t, "webapp1", webapp1), credSpecObject(t, "webapp2", webapp2)),
		kube: fake.NewClientset(),
		grants: map[string][]string{
			saDefault: {"webapp1", "webapp2", "nosuch"},
			"alice":   {"webapp1"},
		},
	}
	c.kube.PrependReactor("create", "localsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.LocalSubjectAccessReview).DeepCopy()
		c.mu.Lock()
		defer c.mu.Unlock()
		c.reviews = append(c.reviews, *r)
		if c.failReviews != nil {
			return true, nil, c.failReviews
		}
		ra := r.Spec.ResourceAttributes
		switch {
		case ra == nil || ra.Verb != "use" || ra.Group != "windows.k8s.io" || ra.Resource != "gmsacredentialspecs":
			r.Status.Reason = "asked something other than use of a GMSACredentialSpec"
		case a.GetNamespace() != "default" || ra.Namespace != "default":
			r.Status.Reason = "no RoleBinding in namespace " + a.GetNamespace()
		case slices.Contains(c.grants[r.Spec.User], ra.Name):
			r.Status.Allowed = true
		default:
			r.Status.Reason = "no RBAC rule allows it"
		}
		return true, r, nil
	})
	return c
}

func (c *cluster) handler(opts Options) *Handler {
	return NewHandler(ClusterCredSpecs(c.dynamic), SubjectAccessReviews(c.kube.AuthorizationV1()), opts)
}

func (c *cluster) asked() []authorizationv1.LocalSubjectAccessReview {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.reviews)
}

var errBackend = errors.New("connection refused")

// failGets makes the cluster's GETs of GMSACredentialSpecs fail.
func (c *cluster) failGets() {
	c.dynamic.PrependReactor("get", "gmsacredentialspecs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errBackend
	})
}

func ptr(s string) *string { return &s }

func windows(name, contents string) *corev1.WindowsSecurityContextOptions {
	o := &corev1.WindowsSecurityContextOptions{}
	if name != "" {
		o.GMSACredentialSpecName = ptr(name)
	}
	if contents != "" {
		o.GMSACredentialSpec = ptr(contents)
	}
	return o
}

// newPod is a pod of service account sa with one container "app", changed by mods.
func newPod(mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{
			ServiceAccountName: "sa",
			Containers:         []corev1.Container{{Name: "app", Image: "iis"}},
		},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func onPod(name, contents string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: windows(name, contents)}
	}
}

func onApp(name, contents string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{WindowsOptions: windows(name, contents)}
	}
}

func withInit(name, contents string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{
			Name: "init", SecurityContext: &corev1.SecurityContext{WindowsOptions: windows(name, contents)}})
	}
}

func withDebug(container, name, contents string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{
			EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: container, SecurityContext: &corev1.SecurityContext{WindowsOptions: windows(name, contents)}}})
	}
}

func withServiceAccount(name string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.ServiceAccountName = name }
}

func withHostname(name string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.Hostname = name }
}

func annotate(key, value string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[key] = value
	}
}

const (
	podNameAnnotation     = "pod.alpha.windows.kubernetes.io/gmsa-credential-spec-name"
	podContentsAnnotation = "pod.alpha.windows.kubernetes.io/gmsa-credential-spec"
)

// bob is the requesting user of the tests' reviews.
var bob = authenticationv1.UserInfo{
	Username: "bob", UID: "bob-uid", Groups: []string{"devs", "system:authenticated"},
	Extra: map[string]authenticationv1.ExtraValue{"scopes": {"pods"}},
}

// request is an admission request for a write of pod, like the API server's; old is the stored
// pod on update.
func request(op admissionv1.Operation, subresource string, pod, old *corev1.Pod) *admissionv1.AdmissionRequest {
	r := &admissionv1.AdmissionRequest{
		UID:         types.UID("uid-" + strings.ToLower(string(op))),
		Kind:        metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource:    metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		SubResource: subresource,
		Name:        pod.Name,
		Namespace:   "default",
		Operation:   op,
		UserInfo:    bob,
		Object:      runtime.RawExtension{Raw: mustJSON(pod)},
	}
	if old != nil {
		r.OldObject = runtime.RawExtension{Raw: mustJSON(old)}
	}
	return r
}

// bind is the admission request of a pods/binding of pod web carrying annotations.
func bind(annotations map[string]string) *admissionv1.AdmissionRequest {
	b := &corev1.Binding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Binding"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: annotations},
		Target:     corev1.ObjectReference{Kind: "Node", Name: "node1"},
	}
	return &admissionv1.AdmissionRequest{
		UID:         "uid-bind",
		Kind:        metav1.GroupVersionKind{Version: "v1", Kind: "Binding"},
		Resource:    metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		SubResource: "binding",
		Name:        "web",
		Namespace:   "default",
		Operation:   admissionv1.Create,
		UserInfo:    bob,
		Object:      runtime.RawExtension{Raw: mustJSON(b)},
	}
}

func create(pod *corev1.Pod) *admissionv1.AdmissionRequest {
	return request(admissionv1.Create, "", pod, nil)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// reviewOf is the body the API server posts for r.
func reviewOf(r *admissionv1.AdmissionRequest) []byte {
	return mustJSON(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  r,
	})
}

// post sends body to h at path as the API server does.
func post(h http.Handler, path string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// responseOf decodes the AdmissionReview answered in rec, which must be a 200, and checks that it
// answers uid.
func responseOf(t testing.TB, rec *httptest.ResponseRecorder, uid types.UID) *admissionv1.AdmissionResponse {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("HTTP %d %s, want 200", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &review); err != nil {
		t.Fatalf("decoding the answer %s: %v", rec.Body, err)
	}
	if review.APIVersion != "admission.k8s.io/v1" || review.Kind != "AdmissionReview" || review.Response == nil {
		t.Fatalf("answer %s is not an AdmissionReview v1 with a response", rec.Body)
	}
	if review.Response.UID != uid {
		t.Errorf("response UID %q, want %q", review.Response.UID, uid)
	}
	return review.Response
}

// memSpecs and allowAll are the cluster in memory, for the fuzz test and the benchmark: fast, and
// without the fake clients' record of every action. Specs are held as ClusterCredSpecs returns
// them, compact with sorted keys.
type memSpecs map[string][]byte

func (m memSpecs) CredSpec(_ context.Context, name string) ([]byte, error) {
	if s, ok := m[name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: gmsa.Group, Resource: gmsa.Resource}, name)
}

type allowAll struct{}

func (allowAll) MayUse(context.Context, string, user.Info, string) (bool, string, error) {
	return true, "", nil
}

func memHandler(opts Options) *Handler {
	return NewHandler(memSpecs{"webapp1": []byte(webapp1Compact), "webapp2": []byte(webapp2)}, allowAll{}, opts)
}

// quietLogs discards klog's output until the test ends.
func quietLogs(tb testing.TB) {
	state := klog.CaptureState()
	tb.Cleanup(state.Restore)
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
}
