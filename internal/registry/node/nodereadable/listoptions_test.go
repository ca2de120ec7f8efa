package nodereadable

import (
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestUnpaged: the list options a node's list serves by ignoring (limit), and those it refuses
// with 400 naming the field (a continue token, resourceVersionMatch=Exact).
func TestUnpaged(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    metainternalversion.ListOptions
		fields  []string
		message string
	}{
		{"nothing", metainternalversion.ListOptions{}, nil, ""},
		{"limit: served whole", metainternalversion.ListOptions{Limit: 1}, nil, ""},
		{"NotOlderThan", metainternalversion.ListOptions{ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}, nil, ""},
		{"a continue token", metainternalversion.ListOptions{Limit: 1, Continue: "abc"}, []string{"continue"},
			`continue: Invalid value: "abc": nodereadables are never paginated`},
		{"Exact", metainternalversion.ListOptions{ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchExact}, []string{"resourceVersionMatch"},
			`resourceVersionMatch: Unsupported value: "Exact": supported values: "NotOlderThan", ""`},
		{"both", metainternalversion.ListOptions{Continue: "abc", ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchExact},
			[]string{"continue", "resourceVersionMatch"}, "nodereadables are listed whole, at the latest position"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := unpaged(&tc.opts)
			if tc.fields == nil {
				if err != nil {
					t.Fatalf("got %v, want it served", err)
				}
				return
			}
			if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("got %v, want 400 saying %q", err, tc.message)
			}
			var fields []string
			for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
				fields = append(fields, c.Field)
			}
			if !slices.Equal(fields, tc.fields) {
				t.Errorf("causes name %q, want %q", fields, tc.fields)
			}
		})
	}
}
