package localsubjectaccessreview

import (
	"context"
	"errors"
	"reflect"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

func review(metaNS, specNS string) *authorizationv1.LocalSubjectAccessReview {
	return &authorizationv1.LocalSubjectAccessReview{
		ObjectMeta: metav1.ObjectMeta{Namespace: metaNS},
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "bob", Groups: []string{"devs"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: specNS, Verb: "create", Resource: "pods", Subresource: "exec", Name: "p",
				LabelSelector: &authorizationv1.LabelSelectorAttributes{RawSelector: "app=web"},
			},
		},
	}
}

func TestCreate(t *testing.T) {
	inNS := genericapirequest.WithNamespace(context.Background(), "ns")
	tests := []struct {
		name       string
		ctx        context.Context
		obj        runtime.Object
		validation error
		wantErr    func(error) bool
		wantCauses []string
	}{
		{name: "question about the request namespace", ctx: inNS, obj: review("ns", "ns")},
		{
			name:       "question about another namespace",
			ctx:        inNS,
			obj:        review("ns", "other"),
			wantErr:    apierrors.IsInvalid,
			wantCauses: []string{"spec.resourceAttributes.namespace"},
		},
		{
			name:    "review from another namespace",
			ctx:     inNS,
			obj:     review("other", "other"),
			wantErr: apierrors.IsBadRequest,
		},
		{
			name:    "no namespace on the request",
			ctx:     context.Background(),
			obj:     review("ns", "ns"),
			wantErr: apierrors.IsBadRequest,
		},
		{
			name:       "createValidation refuses",
			ctx:        inNS,
			obj:        review("ns", "ns"),
			validation: errors.New("refused"),
			wantErr:    func(err error) bool { return err != nil && err.Error() == "refused" },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var asked []authorizer.Attributes
			a := authorizer.AuthorizerFunc(func(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
				asked = append(asked, attrs)
				return authorizer.DecisionAllow, "ok", nil
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
			want := authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "ok"}
			if st := got.(*authorizationv1.LocalSubjectAccessReview).Status; st != want {
				t.Errorf("status = %+v, want %+v", st, want)
			}
			if len(asked) != 1 {
				t.Fatalf("authorizer asked %d times", len(asked))
			}
			at := asked[0]
			if at.GetUser().GetName() != "bob" || !reflect.DeepEqual(at.GetUser().GetGroups(), []string{"devs"}) {
				t.Errorf("user = %#v", at.GetUser())
			}
			if at.GetNamespace() != "ns" || at.GetVerb() != "create" || at.GetResource() != "pods" ||
				at.GetSubresource() != "exec" || at.GetName() != "p" || !at.IsResourceRequest() {
				t.Errorf("attributes = %#v", at)
			}
			if ls, err := at.GetLabelSelector(); err != nil || len(ls) != 1 || ls[0].String() != "app=web" {
				t.Errorf("label selector = %v, %v", ls, err)
			}
		})
	}
}

func TestStorageShape(t *testing.T) {
	r := NewREST(nil)
	if !r.NamespaceScoped() || r.GetSingularName() != "localsubjectaccessreview" {
		t.Errorf("scoped=%v singular=%q", r.NamespaceScoped(), r.GetSingularName())
	}
	if _, ok := r.New().(*authorizationv1.LocalSubjectAccessReview); !ok {
		t.Errorf("New() = %T", r.New())
	}
}
