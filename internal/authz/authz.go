// Package authz assembles the authorizer chain: members of system:masters are always allowed,
// then the configured modes are asked in order; the first to allow or deny decides.
package authz

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	authzmetrics "k8s.io/apiserver/pkg/authorization/metrics"
	"k8s.io/apiserver/pkg/authorization/union"
)

// Mode names accepted by --authorization-mode.
const (
	ModeAlwaysAllow = "AlwaysAllow"
	ModeAlwaysDeny  = "AlwaysDeny"
	ModeRBAC        = "RBAC"
	ModeNode        = "Node"
)

// DefaultModes is the default --authorization-mode: nodes by their graph, everyone by RBAC. Each
// call returns a new slice, so that no caller changes the default for the others.
func DefaultModes() []string { return []string{ModeNode, ModeRBAC} }

// Mode is one authorizer of the chain; it can also list what a user may do.
type Mode interface {
	authorizer.Authorizer
	authorizer.RuleResolver
}

// Sources are the server-state-backed authorizers the modes are built from.
type Sources struct {
	// RBAC answers mode RBAC from its index of roles and bindings.
	RBAC Mode
	// Node answers mode Node from its graph of what each node's pods use.
	Node Mode
}

var modes = map[string]func(Sources) (Mode, error){
	ModeAlwaysAllow: func(Sources) (Mode, error) { return authorizerfactory.NewAlwaysAllowAuthorizer(), nil },
	ModeAlwaysDeny:  func(Sources) (Mode, error) { return authorizerfactory.NewAlwaysDenyAuthorizer(), nil },
	ModeRBAC: func(s Sources) (Mode, error) {
		if s.RBAC == nil {
			return nil, errors.New("mode RBAC needs the RBAC index")
		}
		return s.RBAC, nil
	},
	ModeNode: func(s Sources) (Mode, error) {
		if s.Node == nil {
			return nil, errors.New("mode Node needs the node graph")
		}
		return s.Node, nil
	},
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

// ValidateModes checks a --authorization-mode value: known names, each once, at least one.
func ValidateModes(modeNames []string) error {
	if len(modeNames) == 0 {
		return fmt.Errorf("at least one authorization mode is required (known: %s)", strings.Join(Modes(), ","))
	}
	for i, name := range modeNames {
		if _, ok := modes[name]; !ok {
			return fmt.Errorf("unknown authorization mode %q (known: %s)", name, strings.Join(Modes(), ","))
		}
		if slices.Contains(modeNames[:i], name) {
			return fmt.Errorf("authorization mode %q given twice", name)
		}
	}
	return nil
}

// New returns the authorizer for the ordered mode names, and the rule resolver that answers
// "what may this user do" for the same chain.
func New(modeNames []string, src Sources) (authorizer.Authorizer, authorizer.RuleResolver, error) {
	if err := ValidateModes(modeNames); err != nil {
		return nil, nil, err
	}
	chain := []union.NamedAuthorizer{{
		AuthorizerName: "privileged-groups",
		Authorizer:     authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup),
	}}
	var resolvers []authorizer.RuleResolver
	for _, name := range modeNames {
		m, err := modes[name](src)
		if err != nil {
			return nil, nil, fmt.Errorf("authorization mode %s: %w", name, err)
		}
		// Each mode's allows and denies count in apiserver_authorization_decisions_total, typed by
		// mode and named in lower case, as kube-apiserver names its built-in modes.
		instrumented := authzmetrics.InstrumentedAuthorizer(name, strings.ToLower(name), m)
		chain = append(chain, union.NamedAuthorizer{AuthorizerName: name, Authorizer: instrumented})
		resolvers = append(resolvers, m)
	}
	a, err := union.New(chain...)
	if err != nil {
		return nil, nil, fmt.Errorf("building authorizer chain: %w", err)
	}
	return a, union.NewRuleResolvers(resolvers...), nil
}
