package validation

import (
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
)

func validFlowSchema() *flowcontrolv1.FlowSchema {
	return &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "nodes-first"},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "system"},
			MatchingPrecedence:         500,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{
					{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "system:nodes"}},
					{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "alice"}},
					{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: "kube-system", Name: "*"}},
				},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}, Namespaces: []string{"*"},
				}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"/healthz", "/api/*"}}},
			}},
		},
	}
}

func TestValidateFlowSchema(t *testing.T) {
	subject := func(fs *flowcontrolv1.FlowSchema) *flowcontrolv1.Subject { return &fs.Spec.Rules[0].Subjects[0] }
	resources := func(fs *flowcontrolv1.FlowSchema) *flowcontrolv1.ResourcePolicyRule {
		return &fs.Spec.Rules[0].ResourceRules[0]
	}
	urls := func(fs *flowcontrolv1.FlowSchema) *flowcontrolv1.NonResourcePolicyRule {
		return &fs.Spec.Rules[0].NonResourceRules[0]
	}
	const rule = "spec.rules[0]"
	tests := []struct {
		name   string
		mutate func(*flowcontrolv1.FlowSchema)
		want   []want
	}{
		{name: "valid", mutate: func(*flowcontrolv1.FlowSchema) {}},
		{name: "no distinguisher, cluster scope", mutate: func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.DistinguisherMethod = nil
			resources(fs).Namespaces, resources(fs).ClusterScope = nil, true
		}},
		{name: "bad name", mutate: func(fs *flowcontrolv1.FlowSchema) { fs.Name = "Bad_Name" }, want: []want{invalid("metadata.name")}},
		{name: "namespaced", mutate: func(fs *flowcontrolv1.FlowSchema) { fs.Namespace = "default" }, want: []want{forbidden("metadata.namespace")}},
		{name: "precedence zero", mutate: func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 0 }, want: []want{invalid("spec.matchingPrecedence")}},
		{name: "precedence too high", mutate: func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 10001 }, want: []want{invalid("spec.matchingPrecedence")}},
		{name: "precedence 10000 is the last allowed", mutate: func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 10000 }},
		{name: "precedence 1 is exempt's", mutate: func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 1 }, want: []want{invalid("spec.matchingPrecedence")}},
		{name: "unknown distinguisher", mutate: func(fs *flowcontrolv1.FlowSchema) { fs.Spec.DistinguisherMethod.Type = "ByPod" }, want: []want{notSupported("spec.distinguisherMethod.type")}},
		{name: "no priority level", mutate: func(fs *flowcontrolv1.FlowSchema) { fs.Spec.PriorityLevelConfiguration.Name = "" }, want: []want{required("spec.priorityLevelConfiguration.name")}},
		{name: "bad priority level name", mutate: func(fs *flowcontrolv1.FlowSchema) { fs.Spec.PriorityLevelConfiguration.Name = "A B" }, want: []want{invalid("spec.priorityLevelConfiguration.name")}},
		{name: "no subjects", mutate: func(fs *flowcontrolv1.FlowSchema) { fs.Spec.Rules[0].Subjects = nil }, want: []want{required(rule + ".subjects")}},
		{name: "no rules of either sort", mutate: func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.Rules[0].ResourceRules, fs.Spec.Rules[0].NonResourceRules = nil, nil
		}, want: []want{required(rule)}},
		{name: "unknown subject kind", mutate: func(fs *flowcontrolv1.FlowSchema) { subject(fs).Kind = "Node" }, want: []want{notSupported(rule + ".subjects[0].kind")}},
		{name: "group kind without group", mutate: func(fs *flowcontrolv1.FlowSchema) { subject(fs).Group = nil }, want: []want{required(rule + ".subjects[0].group")}},
		{name: "group without name", mutate: func(fs *flowcontrolv1.FlowSchema) { subject(fs).Group.Name = "" }, want: []want{required(rule + ".subjects[0].group.name")}},
		{name: "group kind with a user and a service account", mutate: func(fs *flowcontrolv1.FlowSchema) {
			subject(fs).User = &flowcontrolv1.UserSubject{Name: "bob"}
			subject(fs).ServiceAccount = &flowcontrolv1.ServiceAccountSubject{Namespace: "a", Name: "b"}
		}, want: []want{forbidden(rule + ".subjects[0].user"), forbidden(rule + ".subjects[0].serviceAccount")}},
		{name: "user kind without user", mutate: func(fs *flowcontrolv1.FlowSchema) { fs.Spec.Rules[0].Subjects[1].User = nil }, want: []want{required(rule + ".subjects[1].user")}},
		{name: "user kind with a group", mutate: func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.Rules[0].Subjects[1].Group = &flowcontrolv1.GroupSubject{Name: "g"}
		}, want: []want{forbidden(rule + ".subjects[1].group")}},
		{name: "service account without namespace, bad name", mutate: func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.Rules[0].Subjects[2].ServiceAccount = &flowcontrolv1.ServiceAccountSubject{Name: "Bad Name"}
		}, want: []want{required(rule + ".subjects[2].serviceAccount.namespace"), invalid(rule + ".subjects[2].serviceAccount.name")}},
		{name: "service account without name", mutate: func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.Rules[0].Subjects[2].ServiceAccount.Name = ""
		}, want: []want{required(rule + ".subjects[2].serviceAccount.name")}},
		{name: "no verbs", mutate: func(fs *flowcontrolv1.FlowSchema) { resources(fs).Verbs = nil }, want: []want{required(rule + ".resourceRules[0].verbs")}},
		{name: "wildcard verb with others", mutate: func(fs *flowcontrolv1.FlowSchema) { resources(fs).Verbs = []string{"*", "get"} }, want: []want{invalid(rule + ".resourceRules[0].verbs")}},
		{name: "unknown verb", mutate: func(fs *flowcontrolv1.FlowSchema) { resources(fs).Verbs = []string{"get", "escalate"} }, want: []want{notSupported(rule + ".resourceRules[0].verbs")}},
		{name: "no api groups, no resources", mutate: func(fs *flowcontrolv1.FlowSchema) { resources(fs).APIGroups, resources(fs).Resources = nil, nil },
			want: []want{required(rule + ".resourceRules[0].apiGroups"), required(rule + ".resourceRules[0].resources")}},
		{name: "wildcard group and resource with others", mutate: func(fs *flowcontrolv1.FlowSchema) {
			resources(fs).APIGroups, resources(fs).Resources = []string{"*", "apps"}, []string{"pods", "*"}
		}, want: []want{invalid(rule + ".resourceRules[0].apiGroups"), invalid(rule + ".resourceRules[0].resources")}},
		{name: "namespaced rule without namespaces", mutate: func(fs *flowcontrolv1.FlowSchema) { resources(fs).Namespaces = nil }, want: []want{required(rule + ".resourceRules[0].namespaces")}},
		{name: "wildcard namespace with others", mutate: func(fs *flowcontrolv1.FlowSchema) { resources(fs).Namespaces = []string{"*", "a"} }, want: []want{invalid(rule + ".resourceRules[0].namespaces")}},
		{name: "bad namespace", mutate: func(fs *flowcontrolv1.FlowSchema) { resources(fs).Namespaces = []string{"ok", "Not OK"} }, want: []want{invalid(rule + ".resourceRules[0].namespaces[1]")}},
		{name: "no URLs", mutate: func(fs *flowcontrolv1.FlowSchema) { urls(fs).NonResourceURLs = nil }, want: []want{required(rule + ".nonResourceRules[0].nonResourceURLs")}},
		{name: "wildcard URL with others", mutate: func(fs *flowcontrolv1.FlowSchema) { urls(fs).NonResourceURLs = []string{"*", "/x"} }, want: []want{invalid(rule + ".nonResourceRules[0].nonResourceURLs")}},
		{name: "bad URLs", mutate: func(fs *flowcontrolv1.FlowSchema) {
			urls(fs).NonResourceURLs = []string{"/", "healthz", "/a b", "/a//b", "/a*", "/a/*/*", "", "/metrics/*"}
		}, want: []want{
			invalid(rule + ".nonResourceRules[0].nonResourceURLs[1]"), invalid(rule + ".nonResourceRules[0].nonResourceURLs[2]"),
			invalid(rule + ".nonResourceRules[0].nonResourceURLs[3]"), invalid(rule + ".nonResourceRules[0].nonResourceURLs[4]"),
			invalid(rule + ".nonResourceRules[0].nonResourceURLs[5]"), invalid(rule + ".nonResourceRules[0].nonResourceURLs[6]"),
		}},
		{name: "duplicate and empty condition types", mutate: func(fs *flowcontrolv1.FlowSchema) {
			fs.Status.Conditions = []flowcontrolv1.FlowSchemaCondition{{Type: "Dangling"}, {Type: "Dangling"}, {}}
		}, want: []want{duplicate("status.conditions[1].type"), required("status.conditions[2].type")}},
		{name: "mandatory exempt schema changed", mutate: func(fs *flowcontrolv1.FlowSchema) {
			fs.Name, fs.Spec = "exempt", *bootstrap.MandatoryFlowSchemaExempt.Spec.DeepCopy()
			fs.Spec.Rules[0].Subjects[0].Group.Name = "system:nodes"
		}, want: []want{invalid("spec")}},
		{name: "mandatory catch-all as bootstrap says", mutate: func(fs *flowcontrolv1.FlowSchema) {
			fs.Name, fs.Spec = "catch-all", *bootstrap.MandatoryFlowSchemaCatchAll.Spec.DeepCopy()
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := validFlowSchema()
			tc.mutate(fs)
			expectErrors(t, ValidateFlowSchema(fs), tc.want...)
			expectErrors(t, ValidateFlowSchemaUpdate(fs, validFlowSchema()), tc.want...)
		})
	}
}

func queuing(queues, handSize, limit int32) *flowcontrolv1.PriorityLevelConfiguration {
	return &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "batch"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptrTo[int32](10), LendablePercent: ptrTo[int32](50), BorrowingLimitPercent: ptrTo[int32](200),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{
					Queues: queues, HandSize: handSize, QueueLengthLimit: limit,
				}},
			},
		},
	}
}

func TestValidatePriorityLevelConfiguration(t *testing.T) {
	const limited = "spec.limited"
	tests := []struct {
		name   string
		mutate func(*flowcontrolv1.PriorityLevelConfiguration)
		want   []want
	}{
		{name: "valid", mutate: func(*flowcontrolv1.PriorityLevelConfiguration) {}},
		{name: "zero shares are allowed in v1", mutate: func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.NominalConcurrencyShares = ptrTo[int32](0)
		}},
		{name: "reject", mutate: func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LimitResponse = flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}
		}},
		{name: "bad name", mutate: func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Name = "B A D" }, want: []want{invalid("metadata.name")}},
		{name: "unknown type", mutate: func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Spec.Type = "Unlimited" }, want: []want{notSupported("spec.type")}},
		{name: "exempt type under another name", mutate: func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec = flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt}
		}, want: []want{invalid("spec.type")}},
		{name: "exempt with limited", mutate: func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Name, pl.Spec.Type = "exempt", flowcontrolv1.PriorityLevelEnablementExempt
		}, want: []want{forbidden("spec.limited"), invalid("spec")}},
		{name: "limited without limited", mutate: func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Spec.Limited = nil }, want: []want{required("spec.limited")}},
		{name: "limited with exempt", mutate: func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Exempt = &flowcontrolv1.ExemptPriorityLevelConfiguration{}
		}, want: []want{forbidden("spec.exempt")}},
		{name: "negative shares, lendable out of range, negative borrowing", mutate: func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.NominalConcurrencyShares = ptrTo[int32](-1)
			pl.Spec.Limited.LendablePercent = ptrTo[int32](101)
			pl.Spec.Limited.BorrowingLimitPercent = ptrTo[int32](-1)
		}, want: []want{invalid(limited + ".nominalConcurrencyShares"), invalid(limited + ".lendablePercent"), invalid(limited + ".borrowingLimitPercent")}},
		{name: "unknown limit response", mutate: func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Spec.Limited.LimitResponse.Type = "Drop" },
			want: []want{notSupported(limited + ".limitResponse.type")}},
		{name: "reject with queuing", mutate: func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LimitResponse.Type = flowcontrolv1.LimitResponseTypeReject
		}, want: []want{forbidden(limited + ".limitResponse.queuing")}},
		{name: "queue without queuing", mutate: func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Spec.Limited.LimitResponse.Queuing = nil },
			want: []want{required(limited + ".limitResponse.queuing")}},
		{name: "non-positive queuing", mutate: func(pl *flowcontrolv1.PriorityLevelConfiguration) { *pl = *queuing(0, 0, 0) },
			want: []want{invalid(limited + ".limitResponse.queuing.queues"), invalid(limited + ".limitResponse.queuing.handSize"), invalid(limited + ".limitResponse.queuing.queueLengthLimit")}},
		{name: "too many queues", mutate: func(pl *flowcontrolv1.PriorityLevelConfiguration) { *pl = *queuing(10*1000*1000+1, 1, 1) },
			want: []want{invalid(limited + ".limitResponse.queuing.queues")}},
		{name: "hand larger than the deck", mutate: func(pl *flowcontrolv1.PriorityLevelConfiguration) { *pl = *queuing(8, 9, 50) },
			want: []want{invalid(limited + ".limitResponse.queuing.handSize")}},
		{name: "hand needing more than 60 bits of entropy", mutate: func(pl *flowcontrolv1.PriorityLevelConfiguration) { *pl = *queuing(128, 20, 50) },
			want: []want{invalid(limited + ".limitResponse.queuing.handSize")}},
		{name: "mandatory catch-all changed", mutate: func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Name, pl.Spec = "catch-all", *bootstrap.MandatoryPriorityLevelConfigurationCatchAll.Spec.DeepCopy()
			pl.Spec.Limited.NominalConcurrencyShares = ptrTo[int32](100)
		}, want: []want{invalid("spec")}},
		{name: "exempt's shares and lendable percent are the admin's", mutate: func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Name, pl.Spec = "exempt", *bootstrap.MandatoryPriorityLevelConfigurationExempt.Spec.DeepCopy()
			pl.Spec.Exempt.NominalConcurrencyShares, pl.Spec.Exempt.LendablePercent = ptrTo[int32](10), ptrTo[int32](20)
		}},
		{name: "exempt's shares still bounded", mutate: func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Name, pl.Spec = "exempt", *bootstrap.MandatoryPriorityLevelConfigurationExempt.Spec.DeepCopy()
			pl.Spec.Exempt.NominalConcurrencyShares, pl.Spec.Exempt.LendablePercent = ptrTo[int32](-1), ptrTo[int32](-1)
		}, want: []want{invalid("spec.exempt.nominalConcurrencyShares"), invalid("spec.exempt.lendablePercent")}},
		{name: "exempt repurposed as limited", mutate: func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Name = "exempt"
			pl.Spec.Exempt = &flowcontrolv1.ExemptPriorityLevelConfiguration{}
		}, want: []want{invalid("spec.type"), forbidden("spec.exempt"), invalid("spec")}},
		{name: "v1beta3's zero-shares annotation", mutate: func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Annotations = map[string]string{"flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares": ""}
		}, want: []want{forbidden("metadata.annotations")}},
		{name: "duplicate condition", mutate: func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Status.Conditions = []flowcontrolv1.PriorityLevelConfigurationCondition{{Type: "ConcurrencyShared"}, {Type: "ConcurrencyShared"}}
		}, want: []want{duplicate("status.conditions[1].type")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl := queuing(64, 8, 50)
			tc.mutate(pl)
			expectErrors(t, ValidatePriorityLevelConfiguration(pl), tc.want...)
			expectErrors(t, ValidatePriorityLevelConfigurationUpdate(pl, queuing(64, 8, 50)), tc.want...)
		})
	}
}

// TestBootstrapConfigurationIsValid: every object the server ensures at start-up passes.
func TestBootstrapConfigurationIsValid(t *testing.T) {
	for _, pl := range append(append([]*flowcontrolv1.PriorityLevelConfiguration{}, bootstrap.MandatoryPriorityLevelConfigurations...), bootstrap.SuggestedPriorityLevelConfigurations...) {
		expectErrors(t, ValidatePriorityLevelConfiguration(pl))
	}
	for _, fs := range append(append([]*flowcontrolv1.FlowSchema{}, bootstrap.MandatoryFlowSchemas...), bootstrap.SuggestedFlowSchemas...) {
		expectErrors(t, ValidateFlowSchema(fs))
	}
}

// TestFlowControlMessages pins the messages users read, as upstream words them.
func TestFlowControlMessages(t *testing.T) {
	fs := validFlowSchema()
	fs.Spec.MatchingPrecedence = 1
	fs.Spec.Rules[0].NonResourceRules[0].NonResourceURLs = []string{"/a*"}
	pl := queuing(8, 9, 50)
	exempt := bootstrap.MandatoryPriorityLevelConfigurationExempt.DeepCopy()
	exempt.Spec.Limited = queuing(8, 4, 50).Spec.Limited
	for _, tc := range []struct{ got, want string }{
		{ValidatePriorityLevelConfiguration(exempt).ToAggregate().Error(), "spec: Invalid value: "},
		{ValidatePriorityLevelConfiguration(exempt).ToAggregate().Error(), "spec of 'exempt' except the 'spec.exempt' field must equal the fixed value"},
		{ValidatePriorityLevelConfiguration(queuing(512, 8, 100)).ToAggregate().Error(), "required entropy bits of deckSize 512 and handSize 8 should not be greater than 60"},
		{ValidateFlowSchema(fs).ToAggregate().Error(), "spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1"},
		{ValidateFlowSchema(fs).ToAggregate().Error(), `spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: "/a*": wildcard can only do suffix matching`},
		{ValidatePriorityLevelConfiguration(pl).ToAggregate().Error(), "spec.limited.limitResponse.queuing.handSize: Invalid value: 9: should not be greater than queues (8)"},
	} {
		if !strings.Contains(tc.got, tc.want) {
			t.Errorf("errors %q do not contain %q", tc.got, tc.want)
		}
	}
}
