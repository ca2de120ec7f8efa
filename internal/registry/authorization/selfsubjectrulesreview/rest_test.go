package selfsubjectrulesreview

import (
	"context"
	"errors"
	"reflect"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// fakeResolver answers with fixed rules and remembers whom it was asked about.
type fakeResolver struct {
	resource    []authorizer.ResourceRuleInfo
	nonResource []authorizer.NonResourceRuleInfo
	incomplete  bool
	err         error

	asked []string // "user@namespace"
}

func (f *fakeResolver) RulesFor(_ context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	f.asked = append(f.asked, u.GetName()+"@"+namespace)
	return f.resource, f.nonResource, f.incomplete, f.err
}

func rulesReview(namespace string) *authorizationv1.SelfSubjectRulesReview {
	return &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: namespace}}
}

func TestCreate(t *testing.T) {
	withMe := genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: "alice"})
	tests := []struct {
		name       string
		ctx        context.Context
		obj        runtime.Object
		resolver   fakeResolver
		validation error
		wantStatus authorizationv1.SubjectRulesReviewStatus
		wantErr    func(error) bool
		wantCauses []string
	}{
		{
			name: "rules converted",
			ctx:  withMe,
			obj:  rulesReview("ns"),
			resolver: fakeResolver{
				resource: []authorizer.ResourceRuleInfo{
					&authorizer.DefaultResourceRuleInfo{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods", "pods/log"}},
					&authorizer.DefaultResourceRuleInfo{Verbs: []string{"update"}, APIGroups: []string{"apps"}, Resources: []string{"deployments"}, ResourceNames: []string{"web"}},
				},
				nonResource: []authorizer.NonResourceRuleInfo{
					&authorizer.DefaultNonResourceRuleInfo{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/api/*"}},
				},
			},
			wantStatus: authorizationv1.SubjectRulesReviewStatus{
				ResourceRules: []authorizationv1.ResourceRule{
					{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods", "pods/log"}},
					{Verbs: []string{"update"}, APIGroups: []string{"apps"}, Resources: []string{"deployments"}, ResourceNames: []string{"web"}},
				},
				NonResourceRules: []authorizationv1.NonResourceRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/api/*"}}},
			},
		},
		{
			name:     "incomplete with an error, nothing listed",
			ctx:      withMe,
			obj:      rulesReview("ns"),
			resolver: fakeResolver{incomplete: true, err: errors.New("webhook cannot list rules")},
			wantStatus: authorizationv1.SubjectRulesReviewStatus{
				ResourceRules:    []authorizationv1.ResourceRule{},
				NonResourceRules: []authorizationv1.NonResourceRule{},
				Incomplete:       true,
				EvaluationError:  "webhook cannot list rules",
			},
		},
		{
			name:       "namespace missing",
			ctx:        withMe,
			obj:        rulesReview(""),
			wantErr:    apierrors.IsInvalid,
			wantCauses: []string{"spec.namespace"},
		},
		{
			name:    "no user on the request",
			ctx:     context.Background(),
			obj:     rulesReview("ns"),
			wantErr: apierrors.IsBadRequest,
		},
		{
			name:       "createValidation refuses",
			ctx:        withMe,
			obj:        rulesReview("ns"),
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
			resolver := tc.resolver
			validated := false
			validate := func(context.Context, runtime.Object) error {
				validated = true
				return tc.validation
			}
			got, err := NewREST(&resolver).Create(tc.ctx, tc.obj, validate, &metav1.CreateOptions{})
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
				if len(resolver.asked) != 0 {
					t.Errorf("resolver asked despite the error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !validated {
				t.Errorf("createValidation not called")
			}
			if st := got.(*authorizationv1.SelfSubjectRulesReview).Status; !reflect.DeepEqual(st, tc.wantStatus) {
				t.Errorf("status = %+v\nwant %+v", st, tc.wantStatus)
			}
			if want := []string{"alice@ns"}; !reflect.DeepEqual(resolver.asked, want) {
				t.Errorf("resolver asked %q, want %q", resolver.asked, want)
			}
		})
	}
}

func TestStorageShape(t *testing.T) {
	r := NewREST(nil)
	if r.NamespaceScoped() || r.GetSingularName() != "selfsubjectrulesreview" {
		t.Errorf("scoped=%v singular=%q", r.NamespaceScoped(), r.GetSingularName())
	}
	if _, ok := r.New().(*authorizationv1.SelfSubjectRulesReview); !ok {
		t.Errorf("New() = %T", r.New())
	}
}
