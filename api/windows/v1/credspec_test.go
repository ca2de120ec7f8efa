package v1

import (
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

func TestCredSpecJSON(t *testing.T) {
	in := []byte(`{"apiVersion":"windows.k8s.io/v1","kind":"GMSACredentialSpec","metadata":{"name":"a"},` +
		`"credspec": {"CmsPlugins": ["ActiveDirectory"], "Unknown": {"n": 1.50, "big": 123456789012345678901234567890}}}`)
	var s GMSACredentialSpec
	if err := json.Unmarshal(in, &s); err != nil {
		t.Fatal(err)
	}
	// Compacted, nothing else: key order, unknown fields and number spellings stay.
	const want = `{"CmsPlugins":["ActiveDirectory"],"Unknown":{"n":1.50,"big":123456789012345678901234567890}}`
	if got := string(s.CredSpec.Raw); got != want {
		t.Errorf("raw = %s, want %s", got, want)
	}
	out, err := json.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	var back GMSACredentialSpec
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s, back) {
		t.Errorf("round trip through %s changed the object", out)
	}

	// Unstructured, as server-side apply sees it: the document's own fields, not Raw.
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&s)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := u["credspec"].(map[string]any)["Unknown"]; !ok {
		t.Errorf("unstructured credspec = %v, want the document's fields", u["credspec"])
	}
	var fromU GMSACredentialSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, &fromU); err != nil {
		t.Fatal(err)
	}
	if !json.Valid(fromU.CredSpec.Raw) || len(fromU.CredSpec.Raw) == 0 {
		t.Errorf("from unstructured: %s", fromU.CredSpec.Raw)
	}
}

func TestCredSpecUnset(t *testing.T) {
	var s GMSACredentialSpec
	if err := json.Unmarshal([]byte(`{"credspec":null}`), &s); err != nil {
		t.Fatal(err)
	}
	if s.CredSpec.Raw != nil {
		t.Errorf("null gave raw %q, want unset", s.CredSpec.Raw)
	}
	out, err := json.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"metadata":{}}`; string(out) != want {
		t.Errorf("unset credspec marshals as %s, want %s", out, want)
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&s)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := u["credspec"]; ok {
		t.Errorf("unset credspec appears in unstructured: %v", u)
	}
}

func TestCredSpecKeepsOtherValuesForValidation(t *testing.T) {
	var s GMSACredentialSpec
	if err := json.Unmarshal([]byte(`{"credspec":[1, 2]}`), &s); err != nil {
		t.Fatal(err)
	}
	if string(s.CredSpec.Raw) != `[1,2]` {
		t.Errorf("raw = %s", s.CredSpec.Raw)
	}
}
