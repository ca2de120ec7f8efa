package webhook

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	kjson "sigs.k8s.io/json"

	"github.com/idplane/idplane/internal/gmsa"
)

// maxReviewBytes bounds an AdmissionReview's body. The API server takes request bodies of at most
// 3 MiB and stores objects of at most 1.5 MiB; a review of an update carries the object and the
// stored one, so 8 MiB leaves room for both and their encoding, and stops a client that is not
// an API server from making the webhook hold more.
const maxReviewBytes = 8 << 20

// reviewVersion is the only AdmissionReview the webhook speaks; its configurations ask for it
// (admissionReviewVersions: [v1]).
var reviewVersion = admissionv1.SchemeGroupVersion.WithKind("AdmissionReview")

// podKind is the kind of the object of a write to pods, pods/status or pods/ephemeralcontainers;
// bindingKind, of a pods/binding.
var (
	podKind     = metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}
	bindingKind = metav1.GroupVersionKind{Version: "v1", Kind: "Binding"}
)

// badReview is an AdmissionReview the webhook cannot answer as one: it is answered with an HTTP
// status and the message, since there may be no well-formed request to carry a response.
type badReview struct {
	code int
	msg  string
}

func badRequest(format string, args ...any) *badReview {
	return &badReview{code: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// admissionRequest is what a review asks of the GMSA logic.
type admissionRequest struct {
	uid types.UID
	// Request.Pod is nil when the review is not about a write of a pod the GMSA logic governs: a
	// binding, another resource, a subresource other than pods/status and
	// pods/ephemeralcontainers, an operation other than create and update. Those are allowed
	// untouched, bindings once checked.
	gmsa.Request
	// binding is the pods/binding being created, whose annotations go onto the pod.
	binding *corev1.Binding
}

// decodeReview reads an AdmissionReview v1 and what its request asks. Anything malformed — not
// JSON, another kind or version, no request or UID, or, for a write of a pod, no object, an
// object that is not a v1 Pod, an update without the stored pod — is a 400.
func decodeReview(body []byte) (*admissionRequest, *badReview) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, badRequest("empty body: want an %s %s", reviewVersion.GroupVersion(), reviewVersion.Kind)
	}
	var review admissionv1.AdmissionReview
	if err := utiljson.Unmarshal(body, &review); err != nil {
		return nil, badRequest("decoding the AdmissionReview: %v", err)
	}
	if gvk := review.GroupVersionKind(); gvk != reviewVersion {
		return nil, badRequest("got apiVersion %q kind %q: want an %s %s", review.APIVersion, review.Kind, reviewVersion.GroupVersion(), reviewVersion.Kind)
	}
	r := review.Request
	if r == nil {
		return nil, badRequest("the AdmissionReview has no request")
	}
	if r.UID == "" {
		return nil, badRequest("the AdmissionReview's request has no uid")
	}
	out := &admissionRequest{uid: r.UID}
	op := admission.Operation(r.Operation)
	if r.Resource.Group != "" || r.Resource.Resource != "pods" || (op != admission.Create && op != admission.Update) {
		return out, nil
	}
	what := r.Resource.Resource
	if r.SubResource != "" {
		what += "/" + r.SubResource
	}
	switch r.SubResource {
	case "", "ephemeralcontainers", "status":
	case "binding":
		if r.Kind != bindingKind {
			return nil, badRequest("request.kind of a %s of %s is group %q version %q kind %q, want a v1 Binding", op, what, r.Kind.Group, r.Kind.Version, r.Kind.Kind)
		}
		var bad *badReview
		out.binding, bad = decodeBinding(r.Object)
		return out, bad
	default:
		return out, nil
	}
	if r.Kind != podKind {
		return nil, badRequest("request.kind of a %s of %s is group %q version %q kind %q, want a v1 Pod", op, what, r.Kind.Group, r.Kind.Version, r.Kind.Kind)
	}
	if r.Namespace == "" {
		return nil, badRequest("request.namespace of a %s of %s is empty", op, what)
	}
	pod, bad := decodePod(r.Object, "request.object")
	if bad != nil {
		return nil, bad
	}
	var old *corev1.Pod
	if op == admission.Update {
		if old, bad = decodePod(r.OldObject, "request.oldObject"); bad != nil {
			return nil, bad
		}
	}
	out.Request = gmsa.Request{
		Pod:         pod,
		OldPod:      old,
		Namespace:   r.Namespace,
		Requester:   requester(r.UserInfo),
		Operation:   op,
		Subresource: r.SubResource,
	}
	return out, nil
}

// decodePod reads a v1 Pod as the API server encodes it: JSON, field names matched exactly, no
// field twice, with a spec. The API server's pods have all that; without it, what the webhook
// decoded and the document its patch applies to could differ (a duplicate object is merged in Go
// but replaced in a JSON document), or the patch's paths could be missing.
func decodePod(obj runtime.RawExtension, what string) (*corev1.Pod, *badReview) {
	raw := bytes.TrimSpace(obj.Raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, badRequest("%s is null", what)
	}
	// A pod whose spec may be missing: only the status, which the GMSA logic never reads, is left
	// out.
	var shape struct {
		metav1.TypeMeta
		ObjectMeta metav1.ObjectMeta `json:"metadata"`
		Spec       *corev1.PodSpec   `json:"spec"`
	}
	duplicates, err := kjson.UnmarshalStrict(raw, &shape, kjson.DisallowDuplicateFields)
	if err != nil {
		return nil, badRequest("decoding %s as a Pod: %v", what, err)
	}
	if len(duplicates) > 0 {
		return nil, badRequest("decoding %s as a Pod: %v", what, errors.Join(duplicates...))
	}
	if (shape.APIVersion != "" && shape.APIVersion != "v1") || (shape.Kind != "" && shape.Kind != "Pod") {
		return nil, badRequest("%s has apiVersion %q kind %q, want a v1 Pod", what, shape.APIVersion, shape.Kind)
	}
	if shape.Spec == nil {
		return nil, badRequest("%s has no spec", what)
	}
	return &corev1.Pod{TypeMeta: shape.TypeMeta, ObjectMeta: shape.ObjectMeta, Spec: *shape.Spec}, nil
}

// decodeBinding reads a v1 Binding as strictly as decodePod reads a pod.
func decodeBinding(obj runtime.RawExtension) (*corev1.Binding, *badReview) {
	raw := bytes.TrimSpace(obj.Raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, badRequest("request.object is null")
	}
	var b corev1.Binding
	duplicates, err := kjson.UnmarshalStrict(raw, &b, kjson.DisallowDuplicateFields)
	if err != nil {
		return nil, badRequest("decoding request.object as a Binding: %v", err)
	}
	if len(duplicates) > 0 {
		return nil, badRequest("decoding request.object as a Binding: %v", errors.Join(duplicates...))
	}
	if (b.APIVersion != "" && b.APIVersion != "v1") || (b.Kind != "" && b.Kind != "Binding") {
		return nil, badRequest("request.object has apiVersion %q kind %q, want a v1 Binding", b.APIVersion, b.Kind)
	}
	return &b, nil
}

// requester is the user of the request as the API server authenticated it.
func requester(u authenticationv1.UserInfo) user.Info {
	var extra map[string][]string
	if len(u.Extra) > 0 {
		extra = make(map[string][]string, len(u.Extra))
		for k, v := range u.Extra {
			extra[k] = v
		}
	}
	return &user.DefaultInfo{Name: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra}
}

// allowed is a response letting the request through, changed by patch when it is not empty.
func allowed(patch []byte) *admissionv1.AdmissionResponse {
	resp := &admissionv1.AdmissionResponse{Allowed: true}
	if len(patch) > 0 {
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = patch, &pt
	}
	return resp
}

// denied is a response refusing the request with err's status: the GMSA logic's errors are API
// errors with the design's codes (422, 403, 400; 500 for a failed lookup), which the API server
// passes on to the client. Anything else is a 500.
func denied(err error) *admissionv1.AdmissionResponse {
	var s apierrors.APIStatus
	if !errors.As(err, &s) {
		s = apierrors.NewInternalError(err)
	}
	st := s.Status()
	return &admissionv1.AdmissionResponse{
		Allowed: false,
		Result: &metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    st.Code,
			Reason:  st.Reason,
			Message: st.Message,
			Details: st.Details,
		},
	}
}
