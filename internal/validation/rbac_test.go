package validation

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func validRole() *rbacv1.Role {
	return &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-reader", Namespace: "team-a"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods", "pods/log"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"settings"}, Verbs: []string{"get"}},
		},
	}
}

func validClusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "system:metrics-reader"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get"}},
			{NonResourceURLs: []string{"/metrics", "/healthz/*"}, Verbs: []string{"get"}},
		},
	}
}

func TestValidateRole(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*rbacv1.Role)
		want   []want
	}{
		{name: "valid", mutate: func(*rbacv1.Role) {}},
		{name: "no rules", mutate: func(r *rbacv1.Role) { r.Rules = nil }},
		{name: "name with colon and uppercase", mutate: func(r *rbacv1.Role) { r.Name = "Team:Readers" }},
		{name: "name with slash", mutate: func(r *rbacv1.Role) { r.Name = "a/b" }, want: []want{invalid("metadata.name")}},
		{name: "name with percent", mutate: func(r *rbacv1.Role) { r.Name = "a%b" }, want: []want{invalid("metadata.name")}},
		{name: "dot-dot name", mutate: func(r *rbacv1.Role) { r.Name = ".." }, want: []want{invalid("metadata.name")}},
		{name: "missing namespace", mutate: func(r *rbacv1.Role) { r.Namespace = "" }, want: []want{required("metadata.namespace")}},
		{name: "rule without verbs", mutate: func(r *rbacv1.Role) { r.Rules[1].Verbs = nil }, want: []want{required("rules[1].verbs")}},
		{
			name:   "resource rule without groups and resources",
			mutate: func(r *rbacv1.Role) { r.Rules[0] = rbacv1.PolicyRule{Verbs: []string{"get"}} },
			want:   []want{required("rules[0].apiGroups"), required("rules[0].resources")},
		},
		{
			name:   "resource names on several resources",
			mutate: func(r *rbacv1.Role) { r.Rules[0].ResourceNames = []string{"a"} },
		},
		{
			name: "non-resource URL in a namespaced role",
			mutate: func(r *rbacv1.Role) {
				r.Rules[0] = rbacv1.PolicyRule{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}
			},
			want: []want{invalid("rules[0].nonResourceURLs")},
		},
		{
			name: "non-resource URL mixed with resources in a namespaced role",
			mutate: func(r *rbacv1.Role) {
				r.Rules[0].NonResourceURLs = []string{"/metrics"}
				r.Rules[0].Verbs = nil
			},
			want: []want{invalid("rules[0].nonResourceURLs"), invalid("rules[0].nonResourceURLs"), required("rules[0].verbs")},
		},
		{name: "unqualified finalizer", mutate: func(r *rbacv1.Role) { r.Finalizers = []string{"mine"} }, want: []want{invalid("metadata.finalizers[0]")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := validRole()
			tc.mutate(r)
			expectErrors(t, ValidateRole(r), tc.want...)
		})
	}
}

func TestValidateRoleUpdate(t *testing.T) {
	old := validRole()
	old.ResourceVersion = "7"
	tests := []struct {
		name   string
		mutate func(*rbacv1.Role)
		want   []want
	}{
		{name: "rules change", mutate: func(r *rbacv1.Role) { r.Rules = r.Rules[:1] }},
		{name: "invalid new rule", mutate: func(r *rbacv1.Role) { r.Rules[0].Resources = nil }, want: []want{required("rules[0].resources")}},
		{name: "rename", mutate: func(r *rbacv1.Role) { r.Name = "other" }, want: []want{invalid("metadata.name")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := old.DeepCopy()
			tc.mutate(r)
			expectErrors(t, ValidateRoleUpdate(r, old), tc.want...)
		})
	}
}

func TestValidateClusterRole(t *testing.T) {
	selector := func(sel metav1.LabelSelector) func(*rbacv1.ClusterRole) {
		return func(r *rbacv1.ClusterRole) {
			r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{sel}}
		}
	}
	tests := []struct {
		name   string
		mutate func(*rbacv1.ClusterRole)
		want   []want
	}{
		{name: "valid", mutate: func(*rbacv1.ClusterRole) {}},
		{name: "aggregated", mutate: selector(metav1.LabelSelector{MatchLabels: map[string]string{"rbac.example.com/aggregate-to-view": "true"}})},
		{name: "namespace set", mutate: func(r *rbacv1.ClusterRole) { r.Namespace = "team-a" }, want: []want{forbidden("metadata.namespace")}},
		{
			name:   "non-resource URL mixed with resources",
			mutate: func(r *rbacv1.ClusterRole) { r.Rules[1].Resources = []string{"pods"} },
			want:   []want{invalid("rules[1].nonResourceURLs")},
		},
		{
			name:   "aggregation rule without selectors",
			mutate: func(r *rbacv1.ClusterRole) { r.AggregationRule = &rbacv1.AggregationRule{} },
			want:   []want{required("aggregationRule.clusterRoleSelectors")},
		},
		{
			name:   "invalid selector label value",
			mutate: selector(metav1.LabelSelector{MatchLabels: map[string]string{"tier": "not valid!"}}),
			want:   []want{invalid("aggregationRule.clusterRoleSelectors[0].matchLabels"), invalid("aggregationRule.clusterRoleSelectors[0]")},
		},
		{
			name: "unknown selector operator",
			mutate: selector(metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "tier", Operator: "Near", Values: []string{"a"}},
			}}),
			want: []want{invalid("aggregationRule.clusterRoleSelectors[0].matchExpressions[0].operator"), invalid("aggregationRule.clusterRoleSelectors[0]")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := validClusterRole()
			tc.mutate(r)
			expectErrors(t, ValidateClusterRole(r), tc.want...)
		})
	}
}

func TestValidateClusterRoleUpdate(t *testing.T) {
	badValue := []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"not valid!"}},
	}}}
	goodValue := []metav1.LabelSelector{{MatchLabels: map[string]string{"tier": "front"}}}

	tests := []struct {
		name string
		old  []metav1.LabelSelector
		new  []metav1.LabelSelector
		want []want
	}{
		{name: "valid selectors", old: goodValue, new: goodValue},
		{
			// The selector-as-selector conversion still refuses the value, as upstream.
			name: "invalid value kept from the stored object",
			old:  badValue,
			new:  badValue,
			want: []want{invalid("aggregationRule.clusterRoleSelectors[0]")},
		},
		{
			name: "invalid value introduced",
			old:  goodValue,
			new:  badValue,
			want: []want{invalid("aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values[0]"), invalid("aggregationRule.clusterRoleSelectors[0]")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := validClusterRole()
			old.ResourceVersion = "3"
			old.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: tc.old}
			r := old.DeepCopy()
			r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: tc.new}
			expectErrors(t, ValidateClusterRoleUpdate(r, old), tc.want...)
		})
	}
}

func validRoleBinding() *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "readers", Namespace: "team-a"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-reader"},
		Subjects: []rbacv1.Subject{
			{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice@example.com"},
			{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:authenticated"},
			{Kind: rbacv1.ServiceAccountKind, Name: "builder"},
		},
	}
}

func validClusterRoleBinding() *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-readers"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{
			{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "readers"},
			{Kind: rbacv1.ServiceAccountKind, Namespace: "kube-system", Name: "builder"},
		},
	}
}

func TestValidateRoleBinding(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*rbacv1.RoleBinding)
		want   []want
	}{
		{name: "valid", mutate: func(*rbacv1.RoleBinding) {}},
		{name: "no subjects", mutate: func(b *rbacv1.RoleBinding) { b.Subjects = nil }},
		{name: "cluster role", mutate: func(b *rbacv1.RoleBinding) { b.RoleRef.Kind = "ClusterRole" }},
		{name: "role ref name with colon", mutate: func(b *rbacv1.RoleBinding) { b.RoleRef.Name = "system:controller:x" }},
		{name: "missing namespace", mutate: func(b *rbacv1.RoleBinding) { b.Namespace = "" }, want: []want{required("metadata.namespace")}},
		{name: "wrong role ref group", mutate: func(b *rbacv1.RoleBinding) { b.RoleRef.APIGroup = "" }, want: []want{notSupported("roleRef.apiGroup")}},
		{name: "wrong role ref kind", mutate: func(b *rbacv1.RoleBinding) { b.RoleRef.Kind = "Group" }, want: []want{notSupported("roleRef.kind")}},
		{name: "missing role ref name", mutate: func(b *rbacv1.RoleBinding) { b.RoleRef.Name = "" }, want: []want{required("roleRef.name")}},
		{name: "role ref name with slash", mutate: func(b *rbacv1.RoleBinding) { b.RoleRef.Name = "a/b" }, want: []want{invalid("roleRef.name")}},
		{name: "subject without name", mutate: func(b *rbacv1.RoleBinding) { b.Subjects[0].Name = "" }, want: []want{required("subjects[0].name")}},
		{name: "user without group", mutate: func(b *rbacv1.RoleBinding) { b.Subjects[0].APIGroup = "" }, want: []want{notSupported("subjects[0].apiGroup")}},
		{name: "group in another group", mutate: func(b *rbacv1.RoleBinding) { b.Subjects[1].APIGroup = "example.com" }, want: []want{notSupported("subjects[1].apiGroup")}},
		{name: "service account with group", mutate: func(b *rbacv1.RoleBinding) { b.Subjects[2].APIGroup = rbacv1.GroupName }, want: []want{notSupported("subjects[2].apiGroup")}},
		{name: "service account with invalid name", mutate: func(b *rbacv1.RoleBinding) { b.Subjects[2].Name = "Builder" }, want: []want{invalid("subjects[2].name")}},
		{
			name:   "service account without name",
			mutate: func(b *rbacv1.RoleBinding) { b.Subjects[2].Name = "" },
			want:   []want{required("subjects[2].name")},
		},
		{name: "unknown subject kind", mutate: func(b *rbacv1.RoleBinding) { b.Subjects[0].Kind = "Robot" }, want: []want{notSupported("subjects[0].kind")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := validRoleBinding()
			tc.mutate(b)
			expectErrors(t, ValidateRoleBinding(b), tc.want...)
		})
	}
}

func TestValidateClusterRoleBinding(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*rbacv1.ClusterRoleBinding)
		want   []want
	}{
		{name: "valid", mutate: func(*rbacv1.ClusterRoleBinding) {}},
		{name: "role kind", mutate: func(b *rbacv1.ClusterRoleBinding) { b.RoleRef.Kind = "Role" }, want: []want{notSupported("roleRef.kind")}},
		{
			name:   "service account without namespace",
			mutate: func(b *rbacv1.ClusterRoleBinding) { b.Subjects[1].Namespace = "" },
			want:   []want{required("subjects[1].namespace")},
		},
		{
			name:   "empty role ref",
			mutate: func(b *rbacv1.ClusterRoleBinding) { b.RoleRef = rbacv1.RoleRef{} },
			want:   []want{notSupported("roleRef.apiGroup"), notSupported("roleRef.kind"), required("roleRef.name")},
		},
		{name: "namespace set", mutate: func(b *rbacv1.ClusterRoleBinding) { b.Namespace = "team-a" }, want: []want{forbidden("metadata.namespace")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := validClusterRoleBinding()
			tc.mutate(b)
			expectErrors(t, ValidateClusterRoleBinding(b), tc.want...)
		})
	}
}

func TestValidateBindingUpdates(t *testing.T) {
	oldRB := validRoleBinding()
	oldRB.ResourceVersion = "5"
	oldCRB := validClusterRoleBinding()
	oldCRB.ResourceVersion = "5"

	rbCases := []struct {
		name   string
		mutate func(*rbacv1.RoleBinding)
		want   []want
	}{
		{name: "subjects change", mutate: func(b *rbacv1.RoleBinding) { b.Subjects = b.Subjects[:1] }},
		{name: "role ref name change", mutate: func(b *rbacv1.RoleBinding) { b.RoleRef.Name = "pod-writer" }, want: []want{invalid("roleRef")}},
		{name: "role ref kind change", mutate: func(b *rbacv1.RoleBinding) { b.RoleRef.Kind = "ClusterRole" }, want: []want{invalid("roleRef")}},
	}
	for _, tc := range rbCases {
		t.Run("role binding: "+tc.name, func(t *testing.T) {
			b := oldRB.DeepCopy()
			tc.mutate(b)
			expectErrors(t, ValidateRoleBindingUpdate(b, oldRB), tc.want...)
		})
	}

	crbCases := []struct {
		name   string
		mutate func(*rbacv1.ClusterRoleBinding)
		want   []want
	}{
		{name: "subjects change", mutate: func(b *rbacv1.ClusterRoleBinding) { b.Subjects = nil }},
		{name: "role ref name change", mutate: func(b *rbacv1.ClusterRoleBinding) { b.RoleRef.Name = "cluster-admin" }, want: []want{invalid("roleRef")}},
		{
			name:   "role ref group cleared",
			mutate: func(b *rbacv1.ClusterRoleBinding) { b.RoleRef.APIGroup = "" },
			want:   []want{invalid("roleRef"), notSupported("roleRef.apiGroup")},
		},
	}
	for _, tc := range crbCases {
		t.Run("cluster role binding: "+tc.name, func(t *testing.T) {
			b := oldCRB.DeepCopy()
			tc.mutate(b)
			expectErrors(t, ValidateClusterRoleBindingUpdate(b, oldCRB), tc.want...)
		})
	}
}

// TestPolicyRuleMessages pins what a user reads for each policy rule check.
func TestPolicyRuleMessages(t *testing.T) {
	tests := []struct {
		name       string
		rule       rbacv1.PolicyRule
		namespaced bool
		want       []string
	}{
		{name: "resource rule", rule: rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}, namespaced: true},
		{name: "url rule", rule: rbacv1.PolicyRule{NonResourceURLs: []string{"/healthz"}, Verbs: []string{"get"}}},
		{name: "empty", rule: rbacv1.PolicyRule{}, want: []string{
			"r.verbs: Required value: verbs must contain at least one value",
			"r.apiGroups: Required value: resource rules must supply at least one api group",
			"r.resources: Required value: resource rules must supply at least one resource",
		}},
		{name: "url in namespaced rule", rule: rbacv1.PolicyRule{NonResourceURLs: []string{"/healthz"}, Verbs: []string{"get"}}, namespaced: true, want: []string{
			`r.nonResourceURLs: Invalid value: ["/healthz"]: namespaced rules cannot apply to non-resource URLs`,
		}},
		{name: "url with resource names", rule: rbacv1.PolicyRule{NonResourceURLs: []string{"/healthz"}, ResourceNames: []string{"x"}, Verbs: []string{"get"}}, want: []string{
			`r.nonResourceURLs: Invalid value: ["/healthz"]: rules cannot apply to both regular resources and non-resource URLs`,
		}},
		{name: "url with groups, namespaced", rule: rbacv1.PolicyRule{NonResourceURLs: []string{"/a"}, APIGroups: []string{""}}, namespaced: true, want: []string{
			"r.verbs: Required value: verbs must contain at least one value",
			`r.nonResourceURLs: Invalid value: ["/a"]: namespaced rules cannot apply to non-resource URLs`,
			`r.nonResourceURLs: Invalid value: ["/a"]: rules cannot apply to both regular resources and non-resource URLs`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectMessages(t, validatePolicyRule(tc.rule, tc.namespaced, field.NewPath("r")), tc.want...)
		})
	}
}

// TestBindingMessages pins what a user reads for role references and subjects.
func TestBindingMessages(t *testing.T) {
	rb := validRoleBinding()
	rb.RoleRef = rbacv1.RoleRef{APIGroup: "example.com", Kind: "Group", Name: "a/b"}
	rb.Subjects = []rbacv1.Subject{
		{Kind: rbacv1.UserKind},
		{Kind: rbacv1.GroupKind, Name: "g", APIGroup: "example.com"},
		{Kind: rbacv1.ServiceAccountKind, Name: "Builder", APIGroup: rbacv1.GroupName},
		{Kind: "Robot", Name: "r2"},
		{Kind: rbacv1.ServiceAccountKind, Name: "builder"},
	}
	expectMessages(t, ValidateRoleBinding(rb),
		`roleRef.apiGroup: Unsupported value: "example.com": supported values: "rbac.authorization.k8s.io"`,
		`roleRef.kind: Unsupported value: "Group": supported values: "Role", "ClusterRole"`,
		`roleRef.name: Invalid value: "a/b": may not contain '/'`,
		`subjects[0].name: Required value`,
		`subjects[0].apiGroup: Unsupported value: "": supported values: "rbac.authorization.k8s.io"`,
		`subjects[1].apiGroup: Unsupported value: "example.com": supported values: "rbac.authorization.k8s.io"`,
		`subjects[2].name: Invalid value: "Builder": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		`subjects[2].apiGroup: Unsupported value: "rbac.authorization.k8s.io": supported values: ""`,
		`subjects[3].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"`,
	)

	crb := validClusterRoleBinding()
	crb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role"}
	crb.Subjects = []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind}}
	expectMessages(t, ValidateClusterRoleBinding(crb),
		`roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"`,
		`roleRef.name: Required value`,
		`subjects[0].name: Required value`,
		`subjects[0].namespace: Required value`,
	)

	old := validRoleBinding()
	old.ResourceVersion = "1"
	changed := old.DeepCopy()
	changed.RoleRef.Name = "other"
	expectMessages(t, ValidateRoleBindingUpdate(changed, old),
		`roleRef: Invalid value: {"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"other"}: cannot change roleRef`)
}

// TestClusterRoleMessages pins the aggregation rule messages.
func TestClusterRoleMessages(t *testing.T) {
	r := validClusterRole()
	r.AggregationRule = &rbacv1.AggregationRule{}
	expectMessages(t, ValidateClusterRole(r),
		"aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil")

	r.AggregationRule.ClusterRoleSelectors = []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}}}
	expectMessages(t, ValidateClusterRole(r),
		`aggregationRule.clusterRoleSelectors[0].matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator`,
		`aggregationRule.clusterRoleSelectors[0]: Invalid value: {"matchExpressions":[{"key":"tier","operator":"Near"}]}: invalid label selector.`)
}

// TestSubjectMessages walks the table of subject kinds, in a role binding
// (which lends its namespace) and in a cluster role binding.
func TestSubjectMessages(t *testing.T) {
	tests := []struct {
		name        string
		subject     rbacv1.Subject
		inNamespace bool
		want        []string
	}{
		{name: "user", subject: rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "Alice Smith"}},
		{name: "group", subject: rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:masters"}},
		{name: "service account in a role binding", subject: rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "builder"}, inNamespace: true},
		{name: "service account with namespace", subject: rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "builder", Namespace: "ci"}},
		{name: "service account without namespace", subject: rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "builder"}, want: []string{
			"s.namespace: Required value",
		}},
		{name: "user without group", subject: rbacv1.Subject{Kind: rbacv1.UserKind, Name: "alice"}, want: []string{
			`s.apiGroup: Unsupported value: "": supported values: "rbac.authorization.k8s.io"`,
		}},
		{name: "group without name", subject: rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName}, inNamespace: true, want: []string{
			"s.name: Required value",
		}},
		{name: "service account with group and no name", subject: rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, APIGroup: "v1"}, want: []string{
			"s.name: Required value",
			`s.apiGroup: Unsupported value: "v1": supported values: ""`,
			"s.namespace: Required value",
		}},
		{name: "unknown kind, no name", subject: rbacv1.Subject{Kind: "Robot", APIGroup: "x"}, want: []string{
			"s.name: Required value",
			`s.kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectMessages(t, validateSubject(tc.subject, tc.inNamespace, field.NewPath("s")), tc.want...)
		})
	}
}
