package authz

import (
	"context"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
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
