package reviewrest

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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

type sar = authorizationv1.SubjectAccessReview

// tracer builds a Storage whose hooks record, in order, what each of them saw,
// and fail when the test asks them to.
type tracer struct {
	invalid    bool
	requestErr error
	admitErr   error

	calls []string
}

func (tr *tracer) storage(check bool) *Storage[*sar] {
	s := &Storage[*sar]{
		Kind:        "SubjectAccessReview",
		NewObject:   func() *sar { return &sar{} },
		ClearStatus: func(r *sar) { r.Status = authorizationv1.SubjectAccessReviewStatus{} },
		Validate: func(r *sar) field.ErrorList {
			tr.calls = append(tr.calls, "validate:"+r.Status.Reason)
			if tr.invalid {
				return field.ErrorList{field.Required(field.NewPath("spec", "user"), "")}
			}
			return nil
		},
		Answer: func(_ context.Context, r *sar) {
			tr.calls = append(tr.calls, "answer:"+r.Status.Reason)
			r.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "answered"}
		},
	}
	if check {
		s.CheckRequest = func(_ context.Context, r *sar) error {
			tr.calls = append(tr.calls, "check:"+r.Status.Reason)
			return tr.requestErr
		}
	}
	return s
}

func (tr *tracer) admit(_ context.Context, obj runtime.Object) error {
	tr.calls = append(tr.calls, "admit:"+obj.(*sar).Status.Reason)
	obj.(*sar).Spec.User = "changed by admission"
	return tr.admitErr
}

func TestCreate(t *testing.T) {
	asked := func() *sar {
		return &sar{
			Spec:   authorizationv1.SubjectAccessReviewSpec{User: "bob"},
			Status: authorizationv1.SubjectAccessReviewStatus{Reason: "sent by client"},
		}
	}
	refused := errors.New("refused")
	tests := []struct {
		name      string
		tracer    tracer
		noCheck   bool
		noAdmit   bool
		obj       runtime.Object
		wantErr   error
		wantCalls []string
	}{
		{
			name:      "answered after every check, none of which sees the client's status",
			obj:       asked(),
			wantCalls: []string{"validate:", "check:", "admit:", "answer:"},
		},
		{
			name:      "without request check or admission",
			noCheck:   true,
			noAdmit:   true,
			obj:       asked(),
			wantCalls: []string{"validate:", "answer:"},
		},
		{
			name:    "wrong type",
			obj:     &corev1.Pod{},
			wantErr: apierrors.NewBadRequest("not a SubjectAccessReview: *v1.Pod"),
		},
		{
			name:   "invalid",
			tracer: tracer{invalid: true},
			obj:    asked(),
			wantErr: apierrors.NewInvalid(schema.GroupKind{Group: "authorization.k8s.io", Kind: "SubjectAccessReview"}, "",
				field.ErrorList{field.Required(field.NewPath("spec", "user"), "")}),
			wantCalls: []string{"validate:"},
		},
		{
			name:      "request check refuses",
			tracer:    tracer{requestErr: refused},
			obj:       asked(),
			wantErr:   refused,
			wantCalls: []string{"validate:", "check:"},
		},
		{
			name:      "admission refuses",
			tracer:    tracer{admitErr: refused},
			obj:       asked(),
			wantErr:   refused,
			wantCalls: []string{"validate:", "check:", "admit:"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := tc.tracer
			admit := tr.admit
			if tc.noAdmit {
				admit = nil
			}
			before := tc.obj.DeepCopyObject()
			got, err := tr.storage(!tc.noCheck).Create(context.Background(), tc.obj, admit, &metav1.CreateOptions{})
			if !reflect.DeepEqual(before, tc.obj) {
				t.Errorf("Create modified its input")
			}
			if !reflect.DeepEqual(tr.calls, tc.wantCalls) {
				t.Errorf("calls = %q, want %q", tr.calls, tc.wantCalls)
			}
			if tc.wantErr != nil {
				if !reflect.DeepEqual(err, tc.wantErr) {
					t.Errorf("err = %#v, want %#v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := &sar{
				Spec:   authorizationv1.SubjectAccessReviewSpec{User: "bob"},
				Status: authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "answered"},
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}

func TestStorageShape(t *testing.T) {
	for _, namespaced := range []bool{false, true} {
		s := &Storage[*authorizationv1.LocalSubjectAccessReview]{
			Kind:       "LocalSubjectAccessReview",
			Namespaced: namespaced,
			NewObject:  func() *authorizationv1.LocalSubjectAccessReview { return &authorizationv1.LocalSubjectAccessReview{} },
		}
		if s.NamespaceScoped() != namespaced {
			t.Errorf("NamespaceScoped() = %v, want %v", s.NamespaceScoped(), namespaced)
		}
		if s.GetSingularName() != "localsubjectaccessreview" {
			t.Errorf("singular name %q", s.GetSingularName())
		}
		if _, ok := s.New().(*authorizationv1.LocalSubjectAccessReview); !ok {
			t.Errorf("New() = %T", s.New())
		}
	}
}

func TestRequireUser(t *testing.T) {
	tests := []struct {
		name    string
		ctx     context.Context
		wantErr error
	}{
		{name: "authenticated", ctx: genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: "alice"})},
		{name: "no user", ctx: context.Background(), wantErr: apierrors.NewBadRequest("no user present on request")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := RequireUser(tc.ctx, &sar{}); !reflect.DeepEqual(err, tc.wantErr) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
		})
	}
}
