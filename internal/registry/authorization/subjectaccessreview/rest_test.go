package subjectaccessreview

import (
	"context"
	"errors"
	"reflect"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

type verdict struct {
	decision authorizer.Decision
	reason   string
	err      error
}

// recorder is an authorizer that answers with a fixed verdict and remembers
// every question, so tests can check what reached the authorizer chain.
type recorder struct {
	verdict
	asked []authorizer.Attributes
}

func (r *recorder) authorizer() authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		r.asked = append(r.asked, a)
		return r.decision, r.reason, r.err
	})
}

func causes(err error) []string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return nil
	}
	var out []string
	for _, c := range status.Status().Details.Causes {
		out = append(out, c.Field)
	}
	return out
}

func TestCreate(t *testing.T) {
	selectorSpec := authorizationv1.SubjectAccessReviewSpec{
		User: "system:node:n1", UID: "uid-1", Groups: []string{"system:nodes", "system:authenticated"},
		Extra: map[string]authorizationv1.ExtraValue{"k": {"v"}},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: "ns", Verb: "list", Version: "v1", Resource: "pods", Subresource: "status", Name: "p",
			FieldSelector: &authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{
				{Key: "spec.nodeName", Operator: metav1.FieldSelectorOpIn, Values: []string{"n1"}},
			}},
			LabelSelector: &authorizationv1.LabelSelectorAttributes{RawSelector: "app=web"},
		},
	}
	tests := []struct {
		name       string
		obj        runtime.Object
		verdict    verdict
		validation error
		wantStatus authorizationv1.SubjectAccessReviewStatus
		wantAsked  func(t *testing.T, a authorizer.Attributes)
		wantErr    func(error) bool
		wantCauses []string
	}{
		{
			name:       "allowed, with user and selectors passed through",
			obj:        &authorizationv1.SubjectAccessReview{Spec: selectorSpec},
			verdict:    verdict{decision: authorizer.DecisionAllow, reason: "allowed by test"},
			wantStatus: authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "allowed by test"},
			wantAsked: func(t *testing.T, a authorizer.Attributes) {
				u := a.GetUser()
				if u.GetName() != "system:node:n1" || u.GetUID() != "uid-1" ||
					!reflect.DeepEqual(u.GetGroups(), []string{"system:nodes", "system:authenticated"}) ||
					!reflect.DeepEqual(u.GetExtra(), map[string][]string{"k": {"v"}}) {
					t.Errorf("user = %#v", u)
				}
				if a.GetVerb() != "list" || a.GetNamespace() != "ns" || a.GetAPIGroup() != "" || a.GetAPIVersion() != "v1" ||
					a.GetResource() != "pods" || a.GetSubresource() != "status" || a.GetName() != "p" || !a.IsResourceRequest() {
					t.Errorf("attributes = %#v", a)
				}
				fs, err := a.GetFieldSelector()
				if err != nil || !reflect.DeepEqual(fs, fields.Requirements{{Field: "spec.nodeName", Operator: selection.Equals, Value: "n1"}}) {
					t.Errorf("field selector = %#v, %v", fs, err)
				}
				ls, err := a.GetLabelSelector()
				if err != nil || len(ls) != 1 || ls[0].String() != "app=web" {
					t.Errorf("label selector = %v, %v", ls, err)
				}
			},
		},
		{
			name: "explicit deny",
			obj: &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				Groups: []string{"g"}, NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/metrics"},
			}},
			verdict:    verdict{decision: authorizer.DecisionDeny, reason: "no"},
			wantStatus: authorizationv1.SubjectAccessReviewStatus{Denied: true, Reason: "no"},
			wantAsked: func(t *testing.T, a authorizer.Attributes) {
				if a.IsResourceRequest() || a.GetPath() != "/metrics" || a.GetVerb() != "get" || a.GetUser().GetName() != "" {
					t.Errorf("attributes = %#v", a)
				}
			},
		},
		{
			name: "no opinion, status sent by the client ignored",
			obj: &authorizationv1.SubjectAccessReview{
				Spec:   authorizationv1.SubjectAccessReviewSpec{User: "bob", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods"}},
				Status: authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "trust me"},
			},
			verdict:    verdict{decision: authorizer.DecisionNoOpinion},
			wantStatus: authorizationv1.SubjectAccessReviewStatus{},
		},
		{
			name: "evaluation error and dropped selector are reported",
			obj: &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "bob", ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: "list", Resource: "pods", FieldSelector: &authorizationv1.FieldSelectorAttributes{RawSelector: "nonsense"},
			}}},
			verdict:    verdict{decision: authorizer.DecisionNoOpinion, err: errors.New("webhook down")},
			wantStatus: authorizationv1.SubjectAccessReviewStatus{EvaluationError: "webhook down; spec.resourceAttributes.fieldSelector ignored due to parse error"},
		},
		{
			name:       "invalid review",
			obj:        &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{}}},
			wantErr:    apierrors.IsInvalid,
			wantCauses: []string{"spec.user"},
		},
		{
			name:       "createValidation refuses",
			obj:        &authorizationv1.SubjectAccessReview{Spec: selectorSpec},
			validation: apierrors.NewForbidden(authorizationv1.Resource("subjectaccessreviews"), "", errors.New("admission says no")),
			wantErr:    apierrors.IsForbidden,
		},
		{
			name:    "wrong type",
			obj:     &corev1.Pod{},
			wantErr: apierrors.IsBadRequest,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{verdict: tc.verdict}
			var validated runtime.Object
			validate := func(_ context.Context, obj runtime.Object) error {
				validated = obj
				return tc.validation
			}
			before := tc.obj.DeepCopyObject()
			got, err := NewREST(rec.authorizer()).Create(context.Background(), tc.obj, validate, &metav1.CreateOptions{})
			if !reflect.DeepEqual(before, tc.obj) {
				t.Errorf("Create modified its input")
			}
			if tc.wantErr != nil {
				if !tc.wantErr(err) {
					t.Fatalf("err = %v", err)
				}
				if c := causes(err); !reflect.DeepEqual(c, tc.wantCauses) {
					t.Errorf("causes = %q, want %q", c, tc.wantCauses)
				}
				if len(rec.asked) != 0 {
					t.Errorf("authorizer asked despite the error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if validated == nil {
				t.Errorf("createValidation not called")
			}
			review := got.(*authorizationv1.SubjectAccessReview)
			if review.Status != tc.wantStatus {
				t.Errorf("status = %+v, want %+v", review.Status, tc.wantStatus)
			}
			if !reflect.DeepEqual(review.Spec, tc.obj.(*authorizationv1.SubjectAccessReview).Spec) {
				t.Errorf("spec not echoed: %+v", review.Spec)
			}
			if len(rec.asked) != 1 {
				t.Fatalf("authorizer asked %d times", len(rec.asked))
			}
			if tc.wantAsked != nil {
				tc.wantAsked(t, rec.asked[0])
			}
		})
	}
}

func TestStorageShape(t *testing.T) {
	r := NewREST(authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
		return authorizer.DecisionNoOpinion, "", nil
	}))
	if r.NamespaceScoped() {
		t.Error("subjectaccessreviews are cluster-scoped")
	}
	if r.GetSingularName() != "subjectaccessreview" {
		t.Errorf("singular name %q", r.GetSingularName())
	}
	if _, ok := r.New().(*authorizationv1.SubjectAccessReview); !ok {
		t.Errorf("New() = %T", r.New())
	}
}
