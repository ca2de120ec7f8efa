package validation

import (
	"encoding/json"
	"slices"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/utils/ptr"
)

func TestValidateTokenRequest(t *testing.T) {
	pod := &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "p"}
	cases := []struct {
		name string
		spec authenticationv1.TokenRequestSpec
		want []string
	}{
		{"defaults", authenticationv1.TokenRequestSpec{Audiences: []string{"a"}, ExpirationSeconds: ptr.To[int64](3600)}, nil},
		{"bound to a pod", authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600), BoundObjectRef: pod}, nil},
		{"shortest", authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](599)}, []string{"spec.expirationSeconds"}},
		{"negative", authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](-1)}, []string{"spec.expirationSeconds"}},
		{"longest", authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](1 << 32)}, []string{"spec.expirationSeconds"}},
		{"empty audience", authenticationv1.TokenRequestSpec{Audiences: []string{"a", ""}}, []string{"spec.audiences[1]"}},
		{"configmap", authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "c"}}, []string{"spec.boundObjectRef.kind"}},
		{"other version", authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v2", Kind: "Pod", Name: "c"}}, []string{"spec.boundObjectRef.apiVersion"}},
		{"no name", authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Secret"}}, []string{"spec.boundObjectRef.name"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range ValidateTokenRequest(&authenticationv1.TokenRequest{Spec: tc.spec}) {
				got = append(got, e.Field)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors on %v, want %v", got, tc.want)
			}
		})
	}
}

// FuzzValidateTokenRequest decodes arbitrary request bodies as the server would and checks that
// whatever validation passes is a request the issuer can honour.
func FuzzValidateTokenRequest(f *testing.F) {
	f.Add([]byte(`{"spec":{"audiences":["a"],"expirationSeconds":3600}}`))
	f.Add([]byte(`{"spec":{"expirationSeconds":-5,"boundObjectRef":{"apiVersion":"v1","kind":"Pod","name":"p","uid":"u"}}}`))
	f.Add([]byte(`{"spec":{"audiences":[""],"boundObjectRef":{"kind":"Node"}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var tr authenticationv1.TokenRequest
		if json.Unmarshal(body, &tr) != nil {
			return
		}
		if len(ValidateTokenRequest(&tr)) > 0 {
			return
		}
		if e := tr.Spec.ExpirationSeconds; e != nil && (*e < MinTokenExpirationSeconds || *e > MaxTokenExpirationSeconds) {
			t.Fatalf("accepted a lifetime of %d s", *e)
		}
		if slices.Contains(tr.Spec.Audiences, "") {
			t.Fatal("accepted an empty audience")
		}
		if ref := tr.Spec.BoundObjectRef; ref != nil && (ref.Name == "" || !slices.Contains([]string{"Pod", "Secret", "Node"}, ref.Kind) || ref.APIVersion != "v1") {
			t.Fatalf("accepted a binding to %+v", ref)
		}
	})
}
