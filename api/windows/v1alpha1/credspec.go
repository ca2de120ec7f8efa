package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"

	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// CredSpec holds a credential spec document as raw JSON. A Go struct with the document's fields
// would drop every field it did not know, and the document belongs to Windows, which adds fields
// the server has no reason to know.
type CredSpec struct {
	// Raw is compact JSON; empty means unset.
	Raw []byte `json:"-"`
}

// MarshalJSON writes Raw as it is, and null when unset.
func (j CredSpec) MarshalJSON() ([]byte, error) {
	if len(j.Raw) == 0 {
		return []byte("null"), nil
	}
	return j.Raw, nil
}

// UnmarshalJSON keeps any JSON value, for validation to judge; null leaves it unset. The value is
// compacted so that size limits count the document, not its indentation.
func (j *CredSpec) UnmarshalJSON(data []byte) error {
	if bytes.Equal(data, []byte("null")) {
		j.Raw = nil
		return nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return fmt.Errorf("credspec: %w", err)
	}
	j.Raw = buf.Bytes()
	return nil
}

// OpenAPIDefinition describes the document as an object whose fields are all kept, so
// server-side apply merges it field by field instead of dropping what no schema names.
func (CredSpec) OpenAPIDefinition() common.OpenAPIDefinition {
	return common.OpenAPIDefinition{Schema: spec.Schema{
		SchemaProps: spec.SchemaProps{Type: []string{"object"}},
		VendorExtensible: spec.VendorExtensible{Extensions: spec.Extensions{
			"x-kubernetes-preserve-unknown-fields": true,
		}},
	}}
}
