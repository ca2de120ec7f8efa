package authn

import (
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
)

func TestAnonymousGets(t *testing.T) {
	const clusterInfo = "/api/v1/namespaces/kube-public/configmaps/cluster-info"
	cases := []struct {
		name           string
		config         Config
		method, target string
		anonymous      bool
	}{
		{"GET of the path", Config{AnonymousGets: []string{clusterInfo}}, "GET", clusterInfo, true},
		{"GET of the path with a query", Config{AnonymousGets: []string{clusterInfo}}, "GET", clusterInfo + "?resourceVersion=0", true},
		{"PUT of the path", Config{AnonymousGets: []string{clusterInfo}}, "PUT", clusterInfo, false},
		{"PATCH of the path", Config{AnonymousGets: []string{clusterInfo}}, "PATCH", clusterInfo, false},
		{"DELETE of the path", Config{AnonymousGets: []string{clusterInfo}}, "DELETE", clusterInfo, false},
		{"HEAD of the path", Config{AnonymousGets: []string{clusterInfo}}, "HEAD", clusterInfo, false},
		{"another configmap", Config{AnonymousGets: []string{clusterInfo}}, "GET", "/api/v1/namespaces/kube-public/configmaps/other", false},
		{"the list", Config{AnonymousGets: []string{clusterInfo}}, "GET", "/api/v1/namespaces/kube-public/configmaps", false},
		{"the list filtered to it", Config{AnonymousGets: []string{clusterInfo}}, "GET", "/api/v1/namespaces/kube-public/configmaps?fieldSelector=metadata.name%3Dcluster-info", false},
		{"the legacy watch path", Config{AnonymousGets: []string{clusterInfo}}, "GET", "/api/v1/watch/namespaces/kube-public/configmaps/cluster-info", false},
		{"a trailing slash", Config{AnonymousGets: []string{clusterInfo}}, "GET", clusterInfo + "/", false},
		{"another namespace's", Config{AnonymousGets: []string{clusterInfo}}, "GET", "/api/v1/namespaces/default/configmaps/cluster-info", false},
		{"merged with configured paths: the configured one", Config{Anonymous: true, AnonymousPaths: []string{"/livez"}, AnonymousGets: []string{clusterInfo}}, "GET", "/livez", true},
		{"merged with configured paths: the GET", Config{Anonymous: true, AnonymousPaths: []string{"/livez"}, AnonymousGets: []string{clusterInfo}}, "GET", clusterInfo, true},
		{"merged with configured paths: still GET only", Config{Anonymous: true, AnonymousPaths: []string{"/livez"}, AnonymousGets: []string{clusterInfo}}, "DELETE", clusterInfo, false},
		{"merged with configured paths: others refused", Config{Anonymous: true, AnonymousPaths: []string{"/livez"}, AnonymousGets: []string{clusterInfo}}, "GET", "/api/v1/secrets", false},
		{"anonymous everywhere stays everywhere", Config{Anonymous: true, AnonymousGets: []string{clusterInfo}}, "DELETE", "/api/v1/secrets", true},
		{"none given", Config{}, "GET", clusterInfo, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			auth, err := New(tc.config)
			if err != nil {
				t.Fatal(err)
			}
			resp, ok, err := auth.AuthenticateRequest(httptest.NewRequest(tc.method, tc.target, nil))
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.anonymous {
				t.Fatalf("authenticated = %v, want %v", ok, tc.anonymous)
			}
			if ok && (resp.User.GetName() != user.Anonymous || len(resp.User.GetGroups()) != 1 || resp.User.GetGroups()[0] != user.AllUnauthenticated) {
				t.Errorf("user = %+v, want %s in %s only", resp.User, user.Anonymous, user.AllUnauthenticated)
			}
		})
	}
}
