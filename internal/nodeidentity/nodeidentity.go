// Package nodeidentity says whether a request comes from a node, and which: the user is in group
// system:nodes and named system:node:<nodeName>. The Node authorizer and NodeRestriction admission
// both decide from it, so they cannot disagree about who is a node.
package nodeidentity

import (
	"slices"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
)

const (
	// NodesGroup is the group every node's credentials carry.
	NodesGroup = user.NodesGroup
	// UserPrefix begins every node's user name.
	UserPrefix = "system:node:"
)

// NodeName returns the node a user is, and whether it is a node at all. A user in system:nodes
// named exactly "system:node:" is a node with an empty name: callers must refuse it rather than
// treat it as some node. Any other user, including one in system:nodes without the prefix, is
// not a node.
func NodeName(u user.Info) (name string, isNode bool) {
	if u == nil || !slices.Contains(u.GetGroups(), NodesGroup) {
		return "", false
	}
	name, ok := strings.CutPrefix(u.GetName(), UserPrefix)
	if !ok {
		return "", false
	}
	return name, true
}
