package nodeidentity

import (
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
)

func TestNodeName(t *testing.T) {
	cases := []struct {
		name     string
		user     user.Info
		wantName string
		wantNode bool
	}{
		{"node", &user.DefaultInfo{Name: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}}, "n1", true},
		{"node with empty name", &user.DefaultInfo{Name: "system:node:", Groups: []string{"system:nodes"}}, "", true},
		{"prefix without the group", &user.DefaultInfo{Name: "system:node:n1", Groups: []string{"system:authenticated"}}, "", false},
		{"group without the prefix", &user.DefaultInfo{Name: "n1", Groups: []string{"system:nodes"}}, "", false},
		{"similar prefix", &user.DefaultInfo{Name: "system:nodes:n1", Groups: []string{"system:nodes"}}, "", false},
		{"no user", nil, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name, isNode := NodeName(tc.user)
			if name != tc.wantName || isNode != tc.wantNode {
				t.Errorf("NodeName = %q, %v; want %q, %v", name, isNode, tc.wantName, tc.wantNode)
			}
		})
	}
}
