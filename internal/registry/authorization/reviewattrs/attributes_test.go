package reviewattrs

import (
	"context"
	"errors"
	"reflect"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func labelStrings(reqs labels.Requirements) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.String())
	}
	return out
}

func TestResourceAttributesFrom(t *testing.T) {
	alice := &user.DefaultInfo{Name: "alice"}
	base := authorizationv1.ResourceAttributes{
		Namespace: "ns", Verb: "list", Group: "apps", Version: "v1",
		Resource: "deployments", Subresource: "scale", Name: "web",
	}
	withFields := func(fs *authorizationv1.FieldSelectorAttributes) authorizationv1.ResourceAttributes {
		ra := base
		ra.FieldSelector = fs
		return ra
	}
	withLabels := func(ls *authorizationv1.LabelSelectorAttributes) authorizationv1.ResourceAttributes {
		ra := base
		ra.LabelSelector = ls
		return ra
	}
	tests := []struct {
		name          string
		in            authorizationv1.ResourceAttributes
		wantVersion   string
		wantFields    fields.Requirements
		wantFieldsErr bool
		wantLabels    []string
		wantLabelsErr bool
	}{
		{name: "plain", in: base, wantVersion: "v1"},
		{
			name:        "empty version means any",
			in:          authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods"},
			wantVersion: "*",
		},
		{
			name: "field requirements In and NotIn",
			in: withFields(&authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{
				{Key: "spec.nodeName", Operator: metav1.FieldSelectorOpIn, Values: []string{"node-1"}},
				{Key: "metadata.name", Operator: metav1.FieldSelectorOpNotIn, Values: []string{"x"}},
			}}),
			wantVersion: "v1",
			wantFields: fields.Requirements{
				{Field: "spec.nodeName", Operator: selection.Equals, Value: "node-1"},
				{Field: "metadata.name", Operator: selection.NotEquals, Value: "x"},
			},
		},
		{
			name:        "raw field selector",
			in:          withFields(&authorizationv1.FieldSelectorAttributes{RawSelector: "spec.nodeName=node-1,metadata.name!=x"}),
			wantVersion: "v1",
			wantFields: fields.Requirements{
				{Field: "metadata.name", Operator: selection.NotEquals, Value: "x"},
				{Field: "spec.nodeName", Operator: selection.Equals, Value: "node-1"},
			},
		},
		{
			name:          "unparsable raw field selector is dropped",
			in:            withFields(&authorizationv1.FieldSelectorAttributes{RawSelector: "spec.nodeName"}),
			wantVersion:   "v1",
			wantFieldsErr: true,
		},
		{
			name: "unsupported field requirements are dropped, the rest kept",
			in: withFields(&authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{
				{Key: "a", Operator: metav1.FieldSelectorOpExists},
				{Key: "b", Operator: metav1.FieldSelectorOpIn, Values: []string{"1", "2"}},
				{Key: "c", Operator: metav1.FieldSelectorOpNotIn},
				{Key: "d", Operator: "Near", Values: []string{"1"}},
				{Key: "spec.nodeName", Operator: metav1.FieldSelectorOpIn, Values: []string{"node-1"}},
			}}),
			wantVersion:   "v1",
			wantFields:    fields.Requirements{{Field: "spec.nodeName", Operator: selection.Equals, Value: "node-1"}},
			wantFieldsErr: true,
		},
		{
			name:          "no usable field requirement",
			in:            withFields(&authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{{Key: "a", Operator: metav1.FieldSelectorOpDoesNotExist}}}),
			wantVersion:   "v1",
			wantFieldsErr: true,
		},
		{
			name: "label requirements",
			in: withLabels(&authorizationv1.LabelSelectorAttributes{Requirements: []metav1.LabelSelectorRequirement{
				{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "db"}},
				{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"dev"}},
				{Key: "owner", Operator: metav1.LabelSelectorOpExists},
				{Key: "legacy", Operator: metav1.LabelSelectorOpDoesNotExist, Values: []string{}},
			}}),
			wantVersion: "v1",
			wantLabels:  []string{"app in (db,web)", "tier notin (dev)", "owner", "!legacy"},
		},
		{
			name:        "raw label selector",
			in:          withLabels(&authorizationv1.LabelSelectorAttributes{RawSelector: "app=web,!legacy"}),
			wantVersion: "v1",
			wantLabels:  []string{"app=web", "!legacy"},
		},
		{
			name:          "unparsable raw label selector is dropped",
			in:            withLabels(&authorizationv1.LabelSelectorAttributes{RawSelector: "app in (web"}),
			wantVersion:   "v1",
			wantLabelsErr: true,
		},
		{
			name: "bad label requirements are dropped, the rest kept",
			in: withLabels(&authorizationv1.LabelSelectorAttributes{Requirements: []metav1.LabelSelectorRequirement{
				{Key: "app", Operator: "Matches", Values: []string{"w.*"}},
				{Key: "app", Operator: metav1.LabelSelectorOpIn},
				{Key: "bad key!", Operator: metav1.LabelSelectorOpExists},
				{Key: "owner", Operator: metav1.LabelSelectorOpExists},
			}}),
			wantVersion:   "v1",
			wantLabels:    []string{"owner"},
			wantLabelsErr: true,
		},
		{
			name:        "selectors present but empty add nothing",
			in:          authorizationv1.ResourceAttributes{Version: "v1", FieldSelector: &authorizationv1.FieldSelectorAttributes{}, LabelSelector: &authorizationv1.LabelSelectorAttributes{}},
			wantVersion: "v1",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ResourceAttributesFrom(alice, tc.in)
			if got.User != alice || !got.ResourceRequest || got.Path != "" {
				t.Errorf("user/resourceRequest/path = %v/%v/%q", got.User, got.ResourceRequest, got.Path)
			}
			if got.Verb != tc.in.Verb || got.Namespace != tc.in.Namespace || got.APIGroup != tc.in.Group ||
				got.Resource != tc.in.Resource || got.Subresource != tc.in.Subresource || got.Name != tc.in.Name {
				t.Errorf("request fields not copied: %+v", got)
			}
			if got.APIVersion != tc.wantVersion {
				t.Errorf("APIVersion = %q, want %q", got.APIVersion, tc.wantVersion)
			}
			if !reflect.DeepEqual(got.FieldSelectorRequirements, tc.wantFields) {
				t.Errorf("field requirements = %#v, want %#v", got.FieldSelectorRequirements, tc.wantFields)
			}
			if (got.FieldSelectorParsingErr != nil) != tc.wantFieldsErr {
				t.Errorf("field selector error = %v, want error %v", got.FieldSelectorParsingErr, tc.wantFieldsErr)
			}
			if gotLabels := labelStrings(got.LabelSelectorRequirements); !reflect.DeepEqual(gotLabels, tc.wantLabels) {
				t.Errorf("label requirements = %q, want %q", gotLabels, tc.wantLabels)
			}
			if (got.LabelSelectorParsingErr != nil) != tc.wantLabelsErr {
				t.Errorf("label selector error = %v, want error %v", got.LabelSelectorParsingErr, tc.wantLabelsErr)
			}
		})
	}
}

func TestAttributesFromSpec(t *testing.T) {
	tests := []struct {
		name string
		spec authorizationv1.SubjectAccessReviewSpec
		want authorizer.AttributesRecord
	}{
		{
			name: "resource request for a named user",
			spec: authorizationv1.SubjectAccessReviewSpec{
				User: "bob", UID: "u-1", Groups: []string{"devs"},
				Extra:              map[string]authorizationv1.ExtraValue{"scopes": {"a", "b"}},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods", Namespace: "ns"},
			},
			want: authorizer.AttributesRecord{
				User:      &user.DefaultInfo{Name: "bob", UID: "u-1", Groups: []string{"devs"}, Extra: map[string][]string{"scopes": {"a", "b"}}},
				Verb:      "get",
				Namespace: "ns", APIVersion: "*", Resource: "pods", ResourceRequest: true,
			},
		},
		{
			name: "non-resource request for groups only",
			spec: authorizationv1.SubjectAccessReviewSpec{
				Groups:                []string{"system:authenticated"},
				NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/healthz"},
			},
			want: authorizer.AttributesRecord{
				User: &user.DefaultInfo{Groups: []string{"system:authenticated"}},
				Verb: "get", Path: "/healthz",
			},
		},
		{
			name: "neither is an empty request",
			spec: authorizationv1.SubjectAccessReviewSpec{User: "bob"},
			want: authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "bob"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := AttributesFromSpec(tc.spec); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func TestSelfAttributes(t *testing.T) {
	me := &user.DefaultInfo{Name: "me", Groups: []string{"g"}}
	tests := []struct {
		name string
		spec authorizationv1.SelfSubjectAccessReviewSpec
		want authorizer.AttributesRecord
	}{
		{
			name: "resource",
			spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "delete", Resource: "secrets", Version: "v1"}},
			want: authorizer.AttributesRecord{User: me, Verb: "delete", APIVersion: "v1", Resource: "secrets", ResourceRequest: true},
		},
		{
			name: "non-resource",
			spec: authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "post", Path: "/logs"}},
			want: authorizer.AttributesRecord{User: me, Verb: "post", Path: "/logs"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := SelfAttributes(me, tc.spec); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func TestEvaluationError(t *testing.T) {
	parseErr := errors.New("bad")
	tests := []struct {
		name  string
		err   error
		attrs authorizer.AttributesRecord
		want  string
	}{
		{name: "nothing to say"},
		{name: "authorizer error", err: errors.New("webhook down"), want: "webhook down"},
		{
			name:  "field selector dropped",
			attrs: authorizer.AttributesRecord{FieldSelectorParsingErr: parseErr},
			want:  "spec.resourceAttributes.fieldSelector ignored due to parse error",
		},
		{
			name: "both selectors partly dropped, with an authorizer error",
			err:  errors.New("webhook down"),
			attrs: authorizer.AttributesRecord{
				FieldSelectorRequirements: fields.Requirements{{Field: "a", Operator: selection.Equals, Value: "b"}},
				FieldSelectorParsingErr:   parseErr,
				LabelSelectorRequirements: mustLabels(t, "a=b"),
				LabelSelectorParsingErr:   parseErr,
			},
			want: "webhook down; spec.resourceAttributes.fieldSelector partially ignored due to parse error; spec.resourceAttributes.labelSelector partially ignored due to parse error",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := EvaluationError(tc.err, tc.attrs); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func mustLabels(t *testing.T, s string) labels.Requirements {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	reqs, _ := sel.Requirements()
	return reqs
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name     string
		decision authorizer.Decision
		reason   string
		err      error
		attrs    authorizer.AttributesRecord
		want     authorizationv1.SubjectAccessReviewStatus
	}{
		{name: "allow", decision: authorizer.DecisionAllow, reason: "RBAC: allowed by ClusterRoleBinding \"x\"",
			want: authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "RBAC: allowed by ClusterRoleBinding \"x\""}},
		{name: "explicit deny", decision: authorizer.DecisionDeny, reason: "node isolation",
			want: authorizationv1.SubjectAccessReviewStatus{Denied: true, Reason: "node isolation"}},
		{name: "no opinion is neither allowed nor denied", decision: authorizer.DecisionNoOpinion,
			want: authorizationv1.SubjectAccessReviewStatus{}},
		{name: "error with selector note", decision: authorizer.DecisionNoOpinion, err: errors.New("boom"),
			attrs: authorizer.AttributesRecord{LabelSelectorParsingErr: errors.New("bad")},
			want:  authorizationv1.SubjectAccessReviewStatus{EvaluationError: "boom; spec.resourceAttributes.labelSelector ignored due to parse error"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
				return tc.decision, tc.reason, tc.err
			})
			if got := Decide(context.Background(), a, tc.attrs); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
