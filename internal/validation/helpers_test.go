package validation

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// want is an expected validation error: its type and field path.
type want struct {
	typ  field.ErrorType
	path string
}

func (w want) String() string { return fmt.Sprintf("%s %s", w.path, w.typ) }

func required(p string) want     { return want{field.ErrorTypeRequired, p} }
func invalid(p string) want      { return want{field.ErrorTypeInvalid, p} }
func forbidden(p string) want    { return want{field.ErrorTypeForbidden, p} }
func duplicate(p string) want    { return want{field.ErrorTypeDuplicate, p} }
func notFound(p string) want     { return want{field.ErrorTypeNotFound, p} }
func notSupported(p string) want { return want{field.ErrorTypeNotSupported, p} }
func tooLong(p string) want      { return want{field.ErrorTypeTooLong, p} }

// expectErrors asserts that errs holds exactly the wanted errors, in any
// order: a rule firing where it should not is as much a bug as one missing.
func expectErrors(t *testing.T, errs field.ErrorList, wants ...want) {
	t.Helper()
	got := make([]string, 0, len(errs))
	for _, e := range errs {
		got = append(got, want{e.Type, e.Field}.String())
	}
	exp := make([]string, 0, len(wants))
	for _, w := range wants {
		exp = append(exp, w.String())
	}
	slices.Sort(got)
	slices.Sort(exp)
	if !slices.Equal(got, exp) {
		t.Errorf("errors mismatch\n got: %s\nwant: %s\nfull: %v", strings.Join(got, "; "), strings.Join(exp, "; "), errs)
	}
}

func ptrTo[T any](v T) *T { return &v }
