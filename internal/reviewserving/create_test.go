package reviewserving

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStrictWarnings(t *testing.T) {
	for _, tc := range []struct {
		name string
		errs []error
		want []string
	}{
		{"none", nil, nil},
		{"json", []error{errors.New(`unknown field "spec.x"`), errors.New(`duplicate field "kind"`)}, []string{`unknown field "spec.x"`, `duplicate field "kind"`}},
		{"yaml, one per line", []error{errors.New("yaml: unmarshal errors:\n  line 3: key \"kind\" already set in map\n  line 4: key \"a\" already set in map")},
			[]string{`line 3: key "kind" already set in map`, `line 4: key "a" already set in map`}},
		{"yaml converted to json", []error{errors.New("error converting YAML to JSON: yaml: unmarshal errors:\n  line 1: key \"a\" already set in map")},
			[]string{`line 1: key "a" already set in map`}},
		{"yaml prefix elsewhere", []error{errors.New("x yaml: unmarshal errors:\n  y")}, []string{"x yaml: unmarshal errors:\n  y"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, strictWarnings(tc.errs)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadBody(t *testing.T) {
	for _, tc := range []struct {
		body     string
		limit    int64
		tooLarge bool
	}{
		{"", 4, false}, {"abcd", 4, false}, {"abcde", 4, true}, {"abcdef", 4, true}, {"abcdef", 0, false},
	} {
		data, tooLarge, err := readBody(strings.NewReader(tc.body), tc.limit)
		if err != nil || tooLarge != tc.tooLarge {
			t.Errorf("readBody(%q, %d) = too large %v, %v; want %v", tc.body, tc.limit, tooLarge, err, tc.tooLarge)
		}
		// What was read is handed over before the rest: it must be a prefix of the body.
		if !strings.HasPrefix(tc.body, string(data)) || !tooLarge && string(data) != tc.body {
			t.Errorf("readBody(%q, %d) read %q", tc.body, tc.limit, data)
		}
	}
}
