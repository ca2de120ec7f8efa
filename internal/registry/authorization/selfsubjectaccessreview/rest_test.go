package selfsubjectaccessreview

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
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

func TestCreate(t *testing.T) {
	me := &user.DefaultInfo{Name: "alice", UID: "a-1", Groups: []string{"devs", "system:authenticated"}, Extra: map[string][]string{"scopes": {"x"}}}
	withMe := genericapirequest.WithUser(context.Background(), me)
	tests := []struct {
		name       string
		ctx        context.Context
		obj        runtime.Object
		decision   authorizer.Decision
		reason     string
		validation error
		wantStatus authorizationv1.SubjectAccessReviewStatus
		wantAsked  authorizer.AttributesRecord
		wantErr    func(error) bool
		wantCauses []string
	}{
		{
			name: "resource question for the requester, with selectors",
			ctx:  withMe,
			obj: &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: "ns", Verb: "watch", Group: "apps", Resource: "deployments", Subresource: "scale", Name: "web",
				FieldSelector: &authorizationv1.FieldSelectorAttributes{RawSelector: "metadata.name=web"},
				LabelSelector: &authorizationv1.LabelSelectorAttributes{Requirements: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}},
			}}},
			decision:   authorizer.DecisionAllow,
			reason:     "ok",
			wantStatus: authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "ok"},
			wantAsked: authorizer.AttributesRecord{
				User: me, Verb: "watch", Namespace: "ns", APIGroup: "apps", APIVersion: "*", Resource: "deployments",
				Subresource: "scale", Name: "web", ResourceRequest: true,
				FieldSelectorRequirements: fields.Requirements{{Field: "metadata.name", Operator: selection.Equals, Value: "web"}},
			},
		},
		{
			name:       "non-resource question denied",
			ctx:        withMe,
			obj:        &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/logs"}}},
			decision:   authorizer.DecisionDeny,
			reason:     "no",
			wantStatus: authorizationv1.SubjectAccessReviewStatus{Denied: true, Reason: "no"},
			wantAsked:  authorizer.AttributesRecord{User: me, Verb: "get", Path: "/logs"},
		},
		{
			name:       "invalid review",
			ctx:        withMe,
			obj:        &authorizationv1.SelfSubjectAccessReview{},
			wantErr:    apierrors.IsInvalid,
			wantCauses: []string{"spec"},
		},
		{
			name:    "no user on the request",
			ctx:     context.Background(),
			obj:     &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/"}}},
			wantErr: apierrors.IsBadRequest,
		},
		{
			name:       "createValidation refuses",
			ctx:        withMe,
			obj:        &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/"}}},
			validation: errors.New("refused"),
			wantErr:    func(err error) bool { return err != nil && err.Error() == "refused" },
		},
		{
			name:    "wrong type",
			ctx:     withMe,
			obj:     &corev1.Pod{},
			wantErr: apierrors.IsBadRequest,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var asked []authorizer.Attributes
			a := authorizer.AuthorizerFunc(func(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
				asked = append(asked, attrs)
				return tc.decision, tc.reason, nil
			})
			validated := false
			validate := func(context.Context, runtime.Object) error {
				validated = true
				return tc.validation
			}
			got, err := NewREST(a).Create(tc.ctx, tc.obj, validate, &metav1.CreateOptions{})
			if tc.wantErr != nil {
				if !tc.wantErr(err) {
					t.Fatalf("err = %v", err)
				}
				var status apierrors.APIStatus
				var gotCauses []string
				if errors.As(err, &status) && status.Status().Details != nil {
					for _, c := range status.Status().Details.Causes {
						gotCauses = append(gotCauses, c.Field)
					}
				}
				if !reflect.DeepEqual(gotCauses, tc.wantCauses) {
					t.Errorf("causes = %q, want %q", gotCauses, tc.wantCauses)
				}
				if len(asked) != 0 {
					t.Errorf("authorizer asked despite the error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !validated {
				t.Errorf("createValidation not called")
			}
			if st := got.(*authorizationv1.SelfSubjectAccessReview).Status; st != tc.wantStatus {
				t.Errorf("status = %+v, want %+v", st, tc.wantStatus)
			}
			if len(asked) != 1 {
				t.Fatalf("authorizer asked %d times", len(asked))
			}
			rec := asked[0].(authorizer.AttributesRecord)
			gotLabels := rec.LabelSelectorRequirements
			rec.LabelSelectorRequirements = nil
			if !reflect.DeepEqual(rec, tc.wantAsked) {
				t.Errorf("asked %#v\nwant %#v", rec, tc.wantAsked)
			}
			if tc.wantAsked.ResourceRequest && (len(gotLabels) != 1 || gotLabels[0].String() != "tier") {
				t.Errorf("label selector = %v", gotLabels)
			}
		})
	}
}

func TestStorageShape(t *testing.T) {
	r := NewREST(nil)
	if r.NamespaceScoped() || r.GetSingularName() != "selfsubjectaccessreview" {
		t.Errorf("scoped=%v singular=%q", r.NamespaceScoped(), r.GetSingularName())
	}
	if _, ok := r.New().(*authorizationv1.SelfSubjectAccessReview); !ok {
		t.Errorf("New() = %T", r.New())
	}
}
