package validation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	windowsv1 "github.com/idplane/idplane/api/windows/v1"
)

// ValidateGMSACredentialSpec checks a GMSACredentialSpec being created.
func ValidateGMSACredentialSpec(s *windowsv1.GMSACredentialSpec) field.ErrorList {
	allErrs := validateObjectMeta(&s.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(allErrs, validateCredSpecDocument(s.CredSpec.Raw, field.NewPath("credspec"))...)
}

// ValidateGMSACredentialSpecUpdate checks an update. credspec may change, as in the design's CRD:
// pods keep the copy they were admitted with, so a change reaches only pods created afterwards.
func ValidateGMSACredentialSpecUpdate(s, old *windowsv1.GMSACredentialSpec) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&s.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, validateCredSpecDocument(s.CredSpec.Raw, field.NewPath("credspec"))...)
}

// validateCredSpecDocument requires a JSON object within the size and depth limits whose objects
// name no key twice: GMSA admission compares documents as JSON values, and a repeated key would
// leave open which of its values counts.
func validateCredSpecDocument(raw []byte, fldPath *field.Path) field.ErrorList {
	switch {
	case len(raw) == 0:
		return field.ErrorList{field.Required(fldPath, "")}
	case len(raw) > windowsv1.MaxCredSpecBytes:
		return field.ErrorList{field.TooLong(fldPath, field.OmitValueType{}, windowsv1.MaxCredSpecBytes)}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	// Numbers stay text: any JSON number is acceptable, even one no float64 holds.
	dec.UseNumber()
	first, err := dec.Token()
	if err != nil {
		return field.ErrorList{field.Invalid(fldPath, field.OmitValueType{}, fmt.Sprintf("must be valid JSON: %v", err))}
	}
	if first != json.Delim('{') {
		return field.ErrorList{field.Invalid(fldPath, field.OmitValueType{}, fmt.Sprintf("must be a JSON object, not %s", jsonKind(first)))}
	}
	if err := walkJSONObject(dec, fldPath); err != nil {
		return field.ErrorList{err}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return field.ErrorList{field.Invalid(fldPath, field.OmitValueType{}, "must be a single JSON value")}
	}
	return nil
}

// jsonContainer is an object or array being read, with where its next value sits.
type jsonContainer struct {
	path   *field.Path
	object bool
	// keys are the object's keys read so far; next is the path of the value after the last key.
	keys map[string]bool
	next *field.Path
	// index is the array's next index.
	index int
}

// walkJSONObject reads the rest of an object whose '{' dec has just returned, with a stack of
// its own rather than recursion, so the depth of the input never decides the depth of the Go
// stack. It reports the first repeated key or too-deep value.
func walkJSONObject(dec *json.Decoder, fldPath *field.Path) *field.Error {
	stack := []*jsonContainer{{path: fldPath, object: true, keys: map[string]bool{}}}
	for len(stack) > 0 {
		tok, err := dec.Token()
		if err != nil {
			return field.Invalid(fldPath, field.OmitValueType{}, fmt.Sprintf("must be valid JSON: %v", err))
		}
		top := stack[len(stack)-1]
		if tok == json.Delim('}') || tok == json.Delim(']') {
			stack = stack[:len(stack)-1]
			continue
		}
		if top.object && top.next == nil {
			// The decoder only returns strings in key position.
			key := tok.(string)
			if top.keys[key] {
				return field.Duplicate(top.path.Child(key), key)
			}
			top.keys[key] = true
			top.next = top.path.Child(key)
			continue
		}
		var valuePath *field.Path
		if top.object {
			valuePath, top.next = top.next, nil
		} else {
			valuePath = top.path.Index(top.index)
			top.index++
		}
		if tok != json.Delim('{') && tok != json.Delim('[') {
			continue
		}
		// The document itself is level 1, so a value opened inside stack level n is level n+1.
		if len(stack) >= windowsv1.MaxCredSpecDepth {
			return field.Invalid(valuePath, field.OmitValueType{}, fmt.Sprintf("must not nest objects and arrays more than %d levels deep", windowsv1.MaxCredSpecDepth))
		}
		c := &jsonContainer{path: valuePath, object: tok == json.Delim('{')}
		if c.object {
			c.keys = map[string]bool{}
		}
		stack = append(stack, c)
	}
	return nil
}

// jsonKind names the kind of JSON value a first token starts.
func jsonKind(tok json.Token) string {
	switch tok.(type) {
	case json.Delim:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}
