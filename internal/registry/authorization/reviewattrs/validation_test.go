package reviewattrs

import (
	"reflect"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// errorKeys reduces errors to "type field" pairs, which is what clients act on.
func errorKeys(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, string(e.Type)+" "+e.Field)
	}
	return out
}

var (
	podsGet  = &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods", Namespace: "ns"}
	healthz  = &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/healthz"}
	invalid  = string(field.ErrorTypeInvalid)
	required = string(field.ErrorTypeRequired)
)

func withSelectors(fs *authorizationv1.FieldSelectorAttributes, ls *authorizationv1.LabelSelectorAttributes) *authorizationv1.ResourceAttributes {
	ra := *podsGet
	ra.FieldSelector, ra.LabelSelector = fs, ls
	return &ra
}

func TestValidateSubjectAccessReview(t *testing.T) {
	tests := []struct {
		name string
		sar  authorizationv1.SubjectAccessReview
		want []string
	}{
		{name: "resource for a user", sar: authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "bob", ResourceAttributes: podsGet}}},
		{name: "non-resource for a group", sar: authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{Groups: []string{"g"}, NonResourceAttributes: healthz}}},
		{
			name: "managed fields are tolerated",
			sar: authorizationv1.SubjectAccessReview{
				ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
				Spec:       authorizationv1.SubjectAccessReviewSpec{User: "bob", ResourceAttributes: podsGet},
			},
		},
		{name: "neither attributes", sar: authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "bob"}}, want: []string{invalid + " spec"}},
		{
			name: "both attributes",
			sar:  authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "bob", ResourceAttributes: podsGet, NonResourceAttributes: healthz}},
			want: []string{invalid + " spec"},
		},
		{name: "no user or group", sar: authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{UID: "u", ResourceAttributes: podsGet}}, want: []string{invalid + " spec.user"}},
		{
			name: "metadata must be empty",
			sar: authorizationv1.SubjectAccessReview{
				ObjectMeta: metav1.ObjectMeta{Name: "x"},
				Spec:       authorizationv1.SubjectAccessReviewSpec{User: "bob", ResourceAttributes: podsGet},
			},
			want: []string{invalid + " metadata"},
		},
		{
			name: "raw and structured field selector together",
			sar: authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "bob", ResourceAttributes: withSelectors(
				&authorizationv1.FieldSelectorAttributes{RawSelector: "a=b", Requirements: []metav1.FieldSelectorRequirement{{Key: "a", Operator: metav1.FieldSelectorOpIn, Values: []string{"b"}}}}, nil)}},
			want: []string{invalid + " spec.resourceAttributes.fieldSelector.rawSelector"},
		},
		{
			name: "empty selectors",
			sar: authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "bob", ResourceAttributes: withSelectors(
				&authorizationv1.FieldSelectorAttributes{}, &authorizationv1.LabelSelectorAttributes{})}},
			want: []string{
				required + " spec.resourceAttributes.fieldSelector.requirements",
				required + " spec.resourceAttributes.labelSelector.requirements",
			},
		},
		{
			name: "bad requirements, unknown operators allowed",
			sar: authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "bob", ResourceAttributes: withSelectors(
				&authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{
					{Key: "", Operator: metav1.FieldSelectorOpIn, Values: []string{"b"}},
					{Key: "a", Operator: "Near", Values: []string{"b"}},
				}},
				&authorizationv1.LabelSelectorAttributes{Requirements: []metav1.LabelSelectorRequirement{
					{Key: "app", Operator: metav1.LabelSelectorOpIn},
					{Key: "app", Operator: "Matches"},
				}})}},
			want: []string{
				required + " spec.resourceAttributes.fieldSelector.requirements[0].key",
				required + " spec.resourceAttributes.labelSelector.requirements[0].values",
			},
		},
		{
			name: "raw selectors are fine",
			sar: authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "bob", ResourceAttributes: withSelectors(
				&authorizationv1.FieldSelectorAttributes{RawSelector: "spec.nodeName=n"}, &authorizationv1.LabelSelectorAttributes{RawSelector: "app"})}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorKeys(ValidateSubjectAccessReview(&tc.sar)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestValidateSelfSubjectAccessReview(t *testing.T) {
	tests := []struct {
		name string
		sar  authorizationv1.SelfSubjectAccessReview
		want []string
	}{
		{name: "resource", sar: authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: podsGet}}},
		{name: "non-resource", sar: authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: healthz}}},
		{name: "neither", want: []string{invalid + " spec"}},
		{
			name: "both",
			sar:  authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: podsGet, NonResourceAttributes: healthz}},
			want: []string{invalid + " spec"},
		},
		{
			name: "metadata must be empty",
			sar: authorizationv1.SelfSubjectAccessReview{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}},
				Spec:       authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: podsGet},
			},
			want: []string{invalid + " metadata"},
		},
		{
			name: "selectors are validated",
			sar: authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: withSelectors(
				nil, &authorizationv1.LabelSelectorAttributes{RawSelector: "a", Requirements: []metav1.LabelSelectorRequirement{{Key: "a", Operator: metav1.LabelSelectorOpExists}}})}},
			want: []string{invalid + " spec.resourceAttributes.labelSelector.rawSelector"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorKeys(ValidateSelfSubjectAccessReview(&tc.sar)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestValidateLocalSubjectAccessReview(t *testing.T) {
	inNS := metav1.ObjectMeta{Namespace: "ns"}
	tests := []struct {
		name string
		sar  authorizationv1.LocalSubjectAccessReview
		want []string
	}{
		{name: "own namespace", sar: authorizationv1.LocalSubjectAccessReview{ObjectMeta: inNS, Spec: authorizationv1.SubjectAccessReviewSpec{User: "bob", ResourceAttributes: podsGet}}},
		{
			name: "other namespace",
			sar: authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "other"},
				Spec: authorizationv1.SubjectAccessReviewSpec{User: "bob", ResourceAttributes: podsGet}},
			want: []string{invalid + " spec.resourceAttributes.namespace"},
		},
		{
			name: "cluster-wide question",
			sar: authorizationv1.LocalSubjectAccessReview{ObjectMeta: inNS,
				Spec: authorizationv1.SubjectAccessReviewSpec{User: "bob", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods"}}},
			want: []string{invalid + " spec.resourceAttributes.namespace"},
		},
		{
			name: "non-resource is not local",
			sar:  authorizationv1.LocalSubjectAccessReview{ObjectMeta: inNS, Spec: authorizationv1.SubjectAccessReviewSpec{User: "bob", NonResourceAttributes: healthz}},
			want: []string{invalid + " spec.nonResourceAttributes"},
		},
		{
			name: "metadata beyond namespace",
			sar: authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: "x-"},
				Spec: authorizationv1.SubjectAccessReviewSpec{User: "bob", ResourceAttributes: podsGet}},
			want: []string{invalid + " metadata"},
		},
		{
			name: "spec rules apply",
			sar:  authorizationv1.LocalSubjectAccessReview{ObjectMeta: inNS, Spec: authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: podsGet}},
			want: []string{invalid + " spec.user"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorKeys(ValidateLocalSubjectAccessReview(&tc.sar)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestValidateSelfSubjectRulesReview(t *testing.T) {
	tests := []struct {
		name   string
		review authorizationv1.SelfSubjectRulesReview
		want   []string
	}{
		{name: "namespace given", review: authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "ns"}}},
		{name: "namespace missing", want: []string{required + " spec.namespace"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorKeys(ValidateSelfSubjectRulesReview(&tc.review)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
