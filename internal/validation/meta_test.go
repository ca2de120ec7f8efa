package validation

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// expectMessages asserts that errs are exactly the wanted errors as a user
// reads them (path, type, value and detail), in any order.
func expectMessages(t *testing.T, errs field.ErrorList, wants ...string) {
	t.Helper()
	got := make([]string, 0, len(errs))
	for _, e := range errs {
		got = append(got, e.Error())
	}
	exp := slices.Clone(wants)
	slices.Sort(got)
	slices.Sort(exp)
	if !slices.Equal(got, exp) {
		t.Errorf("errors mismatch\n got: %s\nwant: %s", strings.Join(got, "\n      "), strings.Join(exp, "\n      "))
	}
}

func TestNodeSelectorRequirement(t *testing.T) {
	req := func(op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: "zone", Operator: op, Values: values}
	}
	tests := []struct {
		name        string
		req         corev1.NodeSelectorRequirement
		checkValues bool
		want        []string
	}{
		{name: "in with values", req: req(corev1.NodeSelectorOpIn, "a", "b"), checkValues: true},
		{name: "in without values", req: req(corev1.NodeSelectorOpIn), checkValues: true, want: []string{
			"r.values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
		}},
		{name: "not in without values", req: req(corev1.NodeSelectorOpNotIn), checkValues: true, want: []string{
			"r.values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
		}},
		{name: "exists", req: req(corev1.NodeSelectorOpExists), checkValues: true},
		{name: "exists with a value", req: req(corev1.NodeSelectorOpExists, "a"), checkValues: true, want: []string{
			"r.values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
		}},
		{name: "does not exist with values", req: req(corev1.NodeSelectorOpDoesNotExist, "a", "b"), checkValues: true, want: []string{
			"r.values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
		}},
		{name: "gt with one value", req: req(corev1.NodeSelectorOpGt, "3"), checkValues: true},
		{name: "gt with two values", req: req(corev1.NodeSelectorOpGt, "3", "4"), checkValues: true, want: []string{
			"r.values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
		}},
		{name: "lt without values", req: req(corev1.NodeSelectorOpLt), checkValues: true, want: []string{
			"r.values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
		}},
		{name: "unknown operator", req: req("Near", "a"), checkValues: true, want: []string{
			`r.operator: Invalid value: "Near": not a valid selector operator`,
		}},
		{name: "invalid key", req: corev1.NodeSelectorRequirement{Key: "bad key", Operator: corev1.NodeSelectorOpExists}, checkValues: true, want: []string{
			`r.key: Invalid value: "bad key": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
		}},
		{name: "invalid value checked", req: req(corev1.NodeSelectorOpIn, "ok", "not ok"), checkValues: true, want: []string{
			`r.values[1]: Invalid value: "not ok": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
		}},
		{name: "invalid value tolerated", req: req(corev1.NodeSelectorOpIn, "ok", "not ok")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectMessages(t, validateNodeSelectorRequirement(tc.req, tc.checkValues, field.NewPath("r")), tc.want...)
		})
	}
}

func TestNodeFieldSelectorRequirement(t *testing.T) {
	tests := []struct {
		name string
		req  corev1.NodeSelectorRequirement
		want []string
	}{
		{name: "in one name", req: corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}}},
		{name: "not in one name", req: corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"node-1"}}},
		{name: "in two names", req: corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}, want: []string{
			"r.values: Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
		}},
		{name: "not in no name", req: corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn}, want: []string{
			"r.values: Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
		}},
		{name: "exists", req: corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpExists}, want: []string{
			`r.operator: Invalid value: "Exists": not a valid selector operator`,
		}},
		{name: "unknown field, values unchecked", req: corev1.NodeSelectorRequirement{Key: "spec.unschedulable", Operator: corev1.NodeSelectorOpIn, Values: []string{"Not A Name"}}, want: []string{
			`r.key: Invalid value: "spec.unschedulable": not a valid field selector key`,
		}},
		{name: "invalid node name", req: corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"Node_1"}}, want: []string{
			`r.values[0]: Invalid value: "Node_1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectMessages(t, validateNodeFieldSelectorRequirement(tc.req, field.NewPath("r")), tc.want...)
		})
	}
}

func TestNodeSelector(t *testing.T) {
	expectMessages(t, validateNodeSelector(&corev1.NodeSelector{}, field.NewPath("ns")),
		"ns.nodeSelectorTerms: Required value: must have at least one node selector term")

	ns := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
		{},
		{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn}},
			MatchFields:      []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpGt, Values: []string{"a"}}},
		},
	}}
	expectMessages(t, validateNodeSelector(ns, field.NewPath("ns")),
		"ns.nodeSelectorTerms[1].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
		`ns.nodeSelectorTerms[1].matchFields[0].operator: Invalid value: "Gt": not a valid selector operator`)
}

func TestFinalizers(t *testing.T) {
	meta := &metav1.ObjectMeta{Name: "x", Namespace: "ns", ResourceVersion: "1", Finalizers: []string{"kubernetes", "orphan", "example.com/mine", "mine"}}
	want := `metadata.finalizers[3]: Invalid value: "mine": name is neither a standard finalizer name nor is it fully qualified`
	expectMessages(t, validateObjectMeta(meta, true, func(string, bool) []string { return nil }, field.NewPath("metadata")), want)
	expectMessages(t, validateObjectMetaUpdate(meta, meta, field.NewPath("metadata")), want)

	expectMessages(t, validateFinalizerName("kubernetes", field.NewPath("f")))
	expectMessages(t, validateFinalizerName("mine", field.NewPath("f")),
		`f: Invalid value: "mine": name is neither a standard finalizer name nor is it fully qualified`)
	expectMessages(t, validateFinalizerName("a/b/c", field.NewPath("f")),
		`f: Invalid value: "a/b/c": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`)
}

func TestLocalPaths(t *testing.T) {
	tests := []struct {
		path        string
		descending  []string
		nonReserved []string
	}{
		{path: "a/b"},
		{path: "a/..b"},
		{
			path:        "/etc/passwd",
			descending:  []string{`p: Invalid value: "/etc/passwd": must be a relative path`},
			nonReserved: []string{`p: Invalid value: "/etc/passwd": must be a relative path`},
		},
		{
			path:        "/a/../b",
			descending:  []string{`p: Invalid value: "/a/../b": must be a relative path`, `p: Invalid value: "/a/../b": must not contain '..'`},
			nonReserved: []string{`p: Invalid value: "/a/../b": must be a relative path`, `p: Invalid value: "/a/../b": must not contain '..'`},
		},
		{
			path:        "../../x",
			descending:  []string{`p: Invalid value: "../../x": must not contain '..'`},
			nonReserved: []string{`p: Invalid value: "../../x": must not contain '..'`},
		},
		{path: "..data", nonReserved: []string{`p: Invalid value: "..data": must not start with '..'`}},
		{
			path:        "..",
			descending:  []string{`p: Invalid value: "..": must not contain '..'`},
			nonReserved: []string{`p: Invalid value: "..": must not contain '..'`, `p: Invalid value: "..": must not start with '..'`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			expectMessages(t, validateLocalDescendingPath(tc.path, field.NewPath("p")), tc.descending...)
			expectMessages(t, validateLocalNonReservedPath(tc.path, field.NewPath("p")), tc.nonReserved...)
		})
	}
	expectMessages(t, validatePathNoBacksteps("/var/../etc", field.NewPath("p")), `p: Invalid value: "/var/../etc": must not contain '..'`)
	expectMessages(t, validatePathNoBacksteps("/var/log", field.NewPath("p")))
}

func TestContainerResourceName(t *testing.T) {
	tests := []struct {
		name corev1.ResourceName
		want []string
	}{
		{name: "cpu"},
		{name: "memory"},
		{name: "ephemeral-storage"},
		{name: "hugepages-2Mi"},
		{name: "example.com/gpu"},
		{name: "kubernetes.io/something"},
		{name: "pods", want: []string{`r: Invalid value: "pods": must be a standard resource for containers`}},
		{name: "requests.cpu", want: []string{`r: Invalid value: "requests.cpu": must be a standard resource for containers`}},
		{name: "gpu", want: []string{
			`r: Invalid value: "gpu": must be a standard resource type or fully qualified`,
			`r: Invalid value: "gpu": must be a standard resource for containers`,
		}},
		{name: "requests.example.com/gpu", want: []string{`r: Invalid value: "requests.example.com/gpu": doesn't follow extended resource name standard`}},
		{name: "bad name!", want: []string{
			`r: Invalid value: "bad name!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			`r: Invalid value: "bad name!": must be a standard resource for containers`,
		}},
	}
	for _, tc := range tests {
		t.Run(string(tc.name), func(t *testing.T) {
			expectMessages(t, validateContainerResourceName(tc.name, field.NewPath("r")), tc.want...)
		})
	}
}

func TestResourceNameClasses(t *testing.T) {
	tests := []struct {
		name                                       corev1.ResourceName
		standard, integer, extended, native, overc bool
	}{
		{name: "cpu", standard: true, native: true, overc: true},
		{name: "requests.storage", standard: true, native: true, overc: true},
		{name: "pods", standard: true, integer: true, native: true, overc: true},
		{name: "services.loadbalancers", standard: true, integer: true, native: true, overc: true},
		{name: "resourcequotas", standard: true, integer: true, native: true, overc: true},
		{name: "limits.ephemeral-storage", standard: true, native: true, overc: true},
		{name: "storage", standard: true, native: true, overc: true},
		{name: "limits.storage", native: true, overc: true},
		{name: "hugepages-1Gi", standard: true, native: true},
		{name: "requests.hugepages-1Gi", standard: true, native: true, overc: true},
		{name: "example.com/gpu", integer: true, extended: true},
		{name: "kubernetes.io/x", native: true, overc: true},
		{name: "requests.example.com/gpu"},
		{name: "gpu", native: true, overc: true},
	}
	for _, tc := range tests {
		t.Run(string(tc.name), func(t *testing.T) {
			got := []bool{isStandardResourceName(tc.name), isIntegerResourceName(tc.name), isExtendedResourceName(tc.name), isNativeResource(tc.name), isOvercommitAllowed(tc.name)}
			want := []bool{tc.standard, tc.integer, tc.extended, tc.native, tc.overc}
			if !slices.Equal(got, want) {
				t.Errorf("standard, integer, extended, native, overcommit = %v, want %v", got, want)
			}
		})
	}
}

func TestQuantities(t *testing.T) {
	q := resource.MustParse
	p := field.NewPath("q")
	expectMessages(t, validateResourceQuantityValue("cpu", q("500m"), p))
	expectMessages(t, validateResourceQuantityValue("cpu", q("-1"), p), `q: Invalid value: "-1": must be greater than or equal to 0`)
	expectMessages(t, validateResourceQuantityValue("pods", q("1500m"), p), `q: Invalid value: "1500m": must be an integer`)
	expectMessages(t, validateResourceQuantityValue("example.com/gpu", q("-500m"), p),
		`q: Invalid value: "-500m": must be greater than or equal to 0`, `q: Invalid value: "-500m": must be an integer`)
	expectMessages(t, validateNonnegativeQuantity(q("0"), p))
	expectMessages(t, validatePositiveQuantity(q("1m"), p))
	expectMessages(t, validatePositiveQuantity(q("0"), p), `q: Invalid value: "0": must be greater than zero`)
	expectMessages(t, validateHugePageValue("hugepages-2Mi", q("4Mi"), p))
	expectMessages(t, validateHugePageValue("hugepages-2Mi", q("3Mi"), p), `q: Invalid value: "3Mi": 3Mi is not positive integer multiple of hugepages-2Mi`)
	expectMessages(t, validateHugePageValue("hugepages-x", q("3Mi"), p), `q: Invalid value: "3Mi": 3Mi is not positive integer multiple of hugepages-x`)
	expectMessages(t, validateNonnegative(-1, p), `q: Invalid value: -1: must be greater than or equal to 0`)
	expectMessages(t, validateFileMode(ptrTo[int32](0o644), p))
	expectMessages(t, validateFileMode(ptrTo[int32](0o1000), p), `q: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive`)
	expectMessages(t, validateFileMode(ptrTo[int32](-1), p), `q: Invalid value: -1: must be a number between 0 and 0777 (octal), both inclusive`)
}

func TestNameRules(t *testing.T) {
	p := field.NewPath("n")
	expectMessages(t, validateDNS1123Label("ok-1", p))
	expectMessages(t, validateDNS1123Label("a.b", p), `n: Invalid value: "a.b": must not contain dots`)
	expectMessages(t, validateDNS1123Subdomain("a.b", p))
	expectMessages(t, validateQualifiedName("example.com/x", p))
	expectMessages(t, validateLabelValue("", p))
	expectMessages(t, validateLabelValue("-x", p), `n: Invalid value: "-x": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`)
}
