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

func validNode() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1.example.com", Labels: map[string]string{corev1.LabelHostname: "node-1"}},
		Spec: corev1.NodeSpec{
			Taints: []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}},
		},
		Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("4"),
				corev1.ResourceMemory: resource.MustParse("16Gi"),
				corev1.ResourcePods:   resource.MustParse("110"),
			},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
		},
	}
}

func TestValidateNode(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*corev1.Node)
		want   []want
	}{
		{name: "valid", mutate: func(*corev1.Node) {}},
		{
			name: "valid dual-stack pod CIDRs",
			mutate: func(n *corev1.Node) {
				n.Spec.PodCIDR = "10.244.1.0/24"
				n.Spec.PodCIDRs = []string{"10.244.1.0/24", "fd00:10:244:1::/64"}
			},
		},
		{name: "invalid name", mutate: func(n *corev1.Node) { n.Name = "Node_1" }, want: []want{invalid("metadata.name")}},
		{name: "namespaced", mutate: func(n *corev1.Node) { n.Namespace = "default" }, want: []want{forbidden("metadata.namespace")}},
		{name: "invalid taint key", mutate: func(n *corev1.Node) { n.Spec.Taints[0].Key = "bad key" }, want: []want{invalid("spec.taints[0].key")}},
		{name: "missing taint effect", mutate: func(n *corev1.Node) { n.Spec.Taints[0].Effect = "" }, want: []want{required("spec.taints[0].effect")}},
		{name: "unsupported taint effect", mutate: func(n *corev1.Node) { n.Spec.Taints[0].Effect = "NoRun" }, want: []want{notSupported("spec.taints[0].effect")}},
		{
			name: "duplicate taint",
			mutate: func(n *corev1.Node) {
				n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: n.Spec.Taints[0].Key, Value: "x", Effect: corev1.TaintEffectNoSchedule})
			},
			want: []want{duplicate("spec.taints[1]")},
		},
		{
			name: "same key different effect",
			mutate: func(n *corev1.Node) {
				n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: n.Spec.Taints[0].Key, Effect: corev1.TaintEffectNoExecute})
			},
		},
		{name: "invalid pod CIDR", mutate: func(n *corev1.Node) { n.Spec.PodCIDR = "10.244.1.0/33" }, want: []want{invalid("spec.podCIDR")}},
		{
			name: "pod CIDR disagrees with pod CIDRs",
			mutate: func(n *corev1.Node) {
				n.Spec.PodCIDR = "10.244.1.0/24"
				n.Spec.PodCIDRs = []string{"10.244.2.0/24"}
			},
			want: []want{invalid("spec.podCIDR")},
		},
		{
			name:   "two IPv4 pod CIDRs",
			mutate: func(n *corev1.Node) { n.Spec.PodCIDRs = []string{"10.244.1.0/24", "10.244.2.0/24"} },
			want:   []want{invalid("spec.podCIDRs")},
		},
		{
			name:   "three pod CIDRs",
			mutate: func(n *corev1.Node) { n.Spec.PodCIDRs = []string{"10.244.1.0/24", "fd00::/64", "10.244.2.0/24"} },
			want:   []want{invalid("spec.podCIDRs")},
		},
		{
			name:   "negative capacity",
			mutate: func(n *corev1.Node) { n.Status.Capacity[corev1.ResourceMemory] = resource.MustParse("-1") },
			want:   []want{invalid("status.capacity[memory]")},
		},
		{
			name: "fractional pods",
			mutate: func(n *corev1.Node) {
				n.Status.Allocatable = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1500m")}
			},
			want: []want{invalid("status.allocatable[pods]")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := validNode()
			tc.mutate(n)
			expectErrors(t, ValidateNode(n), tc.want...)
		})
	}
}

func TestValidateNodeUpdate(t *testing.T) {
	withCIDRs := func(n *corev1.Node) {
		n.Spec.PodCIDR = "10.244.1.0/24"
		n.Spec.PodCIDRs = []string{"10.244.1.0/24"}
		n.Spec.ProviderID = "aws:///us-east-1a/i-123"
	}
	tests := []struct {
		name   string
		old    func(*corev1.Node)
		mutate func(*corev1.Node)
		want   []want
	}{
		{name: "assign CIDRs and provider", mutate: withCIDRs},
		{name: "cordon and untaint", mutate: func(n *corev1.Node) { n.Spec.Unschedulable = true; n.Spec.Taints = nil }},
		{
			name:   "change pod CIDRs",
			old:    withCIDRs,
			mutate: func(n *corev1.Node) { n.Spec.PodCIDR = "10.244.2.0/24"; n.Spec.PodCIDRs = []string{"10.244.2.0/24"} },
			want:   []want{forbidden("spec.podCIDR"), forbidden("spec.podCIDRs")},
		},
		{
			name:   "add a second family",
			old:    withCIDRs,
			mutate: func(n *corev1.Node) { n.Spec.PodCIDRs = append(n.Spec.PodCIDRs, "fd00::/64") },
			want:   []want{forbidden("spec.podCIDRs")},
		},
		{name: "change provider", old: withCIDRs, mutate: func(n *corev1.Node) { n.Spec.ProviderID = "other" }, want: []want{forbidden("spec.providerID")}},
		{name: "invalid taint", mutate: func(n *corev1.Node) { n.Spec.Taints[0].Effect = "Later" }, want: []want{notSupported("spec.taints[0].effect")}},
		{
			name:   "duplicate address",
			mutate: func(n *corev1.Node) { n.Status.Addresses = append(n.Status.Addresses, n.Status.Addresses[0]) },
			want:   []want{duplicate("status.addresses[1]")},
		},
		{name: "rename", mutate: func(n *corev1.Node) { n.Name = "node-2" }, want: []want{invalid("metadata.name")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldN := validNode()
			oldN.ResourceVersion = "9"
			if tc.old != nil {
				tc.old(oldN)
			}
			newN := oldN.DeepCopy()
			tc.mutate(newN)
			expectErrors(t, ValidateNodeUpdate(newN, oldN), tc.want...)
			expectErrors(t, ValidateNodeStatusUpdate(newN, oldN), tc.want...)
		})
	}
}

// TestValidateNodeTaintsMessages pins the whole error a client sees for each taint rule: type,
// field path, value and detail, in the order the rules report them.
func TestValidateNodeTaintsMessages(t *testing.T) {
	const key = "example.com/k"
	tests := []struct {
		name   string
		taints []corev1.Taint
		want   []string
	}{
		{
			name: "every supported effect, same key",
			taints: []corev1.Taint{
				{Key: key, Value: "v", Effect: corev1.TaintEffectNoSchedule},
				{Key: key, Value: "v", Effect: corev1.TaintEffectPreferNoSchedule},
				{Key: key, Value: "v", Effect: corev1.TaintEffectNoExecute},
			},
		},
		{
			name:   "every rule of one taint fails, in order",
			taints: []corev1.Taint{{Key: "bad key", Value: "bad value", Effect: "Later"}},
			want: []string{
				`spec.taints[0].key: Invalid value: "bad key": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
				`spec.taints[0].value: Invalid value: "bad value": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
				`spec.taints[0].effect: Unsupported value: "Later": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`,
			},
		},
		{
			name:   "value too long and badly formed joins both problems",
			taints: []corev1.Taint{{Key: key, Value: "-" + strings.Repeat("a", 63), Effect: corev1.TaintEffectNoSchedule}},
			want: []string{
				`spec.taints[0].value: Invalid value: "-` + strings.Repeat("a", 63) + `": must be no more than 63 bytes;a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
			},
		},
		{
			name:   "missing effect",
			taints: []corev1.Taint{{Key: key}},
			want:   []string{`spec.taints[0].effect: Required value`},
		},
		{
			name: "duplicate key and effect, reported at the later one",
			taints: []corev1.Taint{
				{Key: key, Value: "a", Effect: corev1.TaintEffectNoSchedule},
				{Key: key, Value: "b", Effect: corev1.TaintEffectNoExecute},
				{Key: key, Value: "c", Effect: corev1.TaintEffectNoSchedule},
				{Key: key, Value: "d", Effect: corev1.TaintEffectNoSchedule},
			},
			want: []string{
				`spec.taints[2]: Duplicate value: {"key":"example.com/k","value":"c","effect":"NoSchedule"}: taints must be unique by key and effect pair`,
				`spec.taints[3]: Duplicate value: {"key":"example.com/k","value":"d","effect":"NoSchedule"}: taints must be unique by key and effect pair`,
			},
		},
		{
			name: "a duplicate is still checked on its own first",
			taints: []corev1.Taint{
				{Key: key, Effect: "Soon"},
				{Key: key, Value: "bad value", Effect: "Soon"},
			},
			want: []string{
				`spec.taints[0].effect: Unsupported value: "Soon": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`,
				`spec.taints[1].value: Invalid value: "bad value": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
				`spec.taints[1].effect: Unsupported value: "Soon": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`,
				`spec.taints[1]: Duplicate value: {"key":"example.com/k","value":"bad value","effect":"Soon"}: taints must be unique by key and effect pair`,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, err := range validateNodeTaints(tc.taints, field.NewPath("spec", "taints")) {
				got = append(got, err.Error())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
