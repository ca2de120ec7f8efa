package authz

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
)

func TestNewRejectsBadModes(t *testing.T) {
	cases := []struct {
		name  string
		modes []string
	}{
		{"none", nil},
		{"unknown", []string{"Webhook"}},
		{"duplicate", []string{ModeAlwaysDeny, ModeAlwaysDeny}},
		{"RBAC without its index", []string{ModeRBAC}},
		{"Node without its graph", []string{ModeNode}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := New(tc.modes, Sources{}); err == nil {
				t.Errorf("New(%v) succeeded", tc.modes)
			}
		})
	}
}

func TestDecisions(t *testing.T) {
	masters := &user.DefaultInfo{Name: "root", Groups: []string{user.SystemPrivilegedGroup}}
	dev := &user.DefaultInfo{Name: "dev", Groups: []string{"devs"}}
	cases := []struct {
		name  string
		modes []string
		user  user.Info
		want  authorizer.Decision
	}{
		{"masters pass AlwaysDeny", []string{ModeAlwaysDeny}, masters, authorizer.DecisionAllow},
		// As upstream, AlwaysDeny has no opinion: with no later mode the request is refused.
		{"others are refused under AlwaysDeny", []string{ModeAlwaysDeny}, dev, authorizer.DecisionNoOpinion},
		{"others pass AlwaysAllow", []string{ModeAlwaysAllow}, dev, authorizer.DecisionAllow},
		{"a later mode decides after AlwaysDeny", []string{ModeAlwaysDeny, ModeAlwaysAllow}, dev, authorizer.DecisionAllow},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, _, err := New(tc.modes, Sources{})
			if err != nil {
				t.Fatal(err)
			}
			got, reason, err := a.Authorize(context.Background(), authorizer.AttributesRecord{
				User: tc.user, Verb: "get", Resource: "secrets", Namespace: "default", ResourceRequest: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("decision %v (%q), want %v", got, reason, tc.want)
			}
		})
	}
}

// fixedMode answers every request with one decision.
type fixedMode struct{ decision authorizer.Decision }

func (m fixedMode) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return m.decision, "fixed", nil
}

func (m fixedMode) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(m.Authorize(ctx, a))
}

func (m fixedMode) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionNoOpinion, "no conditions", nil
}

func (fixedMode) RulesFor(context.Context, user.Info, string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	return nil, nil, false, nil
}

func TestDecisionMetrics(t *testing.T) {
	dev := &user.DefaultInfo{Name: "dev"}
	decisions := func(mode string) map[string]float64 {
		t.Helper()
		got, err := testutil.GetCounterValuesFromGatherer(legacyregistry.DefaultGatherer, "apiserver_authorization_decisions_total",
			map[string]string{"type": mode, "name": strings.ToLower(mode)}, "decision")
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	cases := []struct {
		name     string
		node     authorizer.Decision
		rbac     authorizer.Decision
		wantNode map[string]float64
		wantRBAC map[string]float64
	}{
		{name: "Node allows", node: authorizer.DecisionAllow, rbac: authorizer.DecisionDeny, wantNode: map[string]float64{"allowed": 1}},
		// No opinion is not a decision: it is not counted, and the next mode decides.
		{name: "RBAC denies after Node", node: authorizer.DecisionNoOpinion, rbac: authorizer.DecisionDeny, wantRBAC: map[string]float64{"denied": 1}},
		{name: "RBAC allows after Node", node: authorizer.DecisionNoOpinion, rbac: authorizer.DecisionAllow, wantRBAC: map[string]float64{"allowed": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, _, err := New([]string{ModeNode, ModeRBAC}, Sources{Node: fixedMode{tc.node}, RBAC: fixedMode{tc.rbac}})
			if err != nil {
				t.Fatal(err)
			}
			beforeNode, beforeRBAC := decisions(ModeNode), decisions(ModeRBAC)
			if _, _, err := a.Authorize(context.Background(), authorizer.AttributesRecord{User: dev, Verb: "get", Resource: "pods", ResourceRequest: true}); err != nil {
				t.Fatal(err)
			}
			for _, check := range []struct {
				mode         string
				before, want map[string]float64
			}{{ModeNode, beforeNode, tc.wantNode}, {ModeRBAC, beforeRBAC, tc.wantRBAC}} {
				after := decisions(check.mode)
				for _, d := range []string{"allowed", "denied"} {
					if got := after[d] - check.before[d]; got != check.want[d] {
						t.Errorf("%s %s decisions counted %v, want %v", check.mode, d, got, check.want[d])
					}
				}
			}
		})
	}
}
