// Package authz assembles the authorizer chain: members of system:masters are always allowed,
// then the configured modes are asked in order; the first to allow or deny decides.
package authz

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/authorization/union"
)

// Mode names accepted by --authorization-mode.
const (
	ModeAlwaysAllow = "AlwaysAllow"
	ModeAlwaysDeny  = "AlwaysDeny"
)

// DefaultModes is the default --authorization-mode: only system:masters passes.
var DefaultModes = []string{ModeAlwaysDeny}

type mode interface {
	authorizer.Authorizer
	authorizer.RuleResolver
}

var modes = map[string]func() mode{
	ModeAlwaysAllow: func() mode { return authorizerfactory.NewAlwaysAllowAuthorizer() },
	ModeAlwaysDeny:  func() mode { return authorizerfactory.NewAlwaysDenyAuthorizer() },
}

// Modes lists the known mode names, sorted.
func Modes() []string {
	names := make([]string, 0, len(modes))
	for name := range modes {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// New returns the authorizer for the ordered mode names, and the rule resolver that answers
// "what may this user do" for the same chain.
func New(modeNames []string) (authorizer.Authorizer, authorizer.RuleResolver, error) {
	if len(modeNames) == 0 {
		return nil, nil, fmt.Errorf("at least one authorization mode is required (known: %s)", strings.Join(Modes(), ","))
	}
	chain := []union.NamedAuthorizer{{
		AuthorizerName: "privileged-groups",
		Authorizer:     authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup),
	}}
	var resolvers []authorizer.RuleResolver
	for _, name := range modeNames {
		newMode, ok := modes[name]
		if !ok {
			return nil, nil, fmt.Errorf("unknown authorization mode %q (known: %s)", name, strings.Join(Modes(), ","))
		}
		if slices.ContainsFunc(chain, func(a union.NamedAuthorizer) bool { return a.AuthorizerName == name }) {
			return nil, nil, fmt.Errorf("authorization mode %q given twice", name)
		}
		m := newMode()
		chain = append(chain, union.NamedAuthorizer{AuthorizerName: name, Authorizer: m})
		resolvers = append(resolvers, m)
	}
	a, err := union.New(chain...)
	if err != nil {
		return nil, nil, fmt.Errorf("building authorizer chain: %w", err)
	}
	return a, union.NewRuleResolvers(resolvers...), nil
}
