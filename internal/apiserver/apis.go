package apiserver

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/emicklei/go-restful/v3"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/utils/clock"

	nodev1alpha1 "github.com/idplane/idplane/api/node/v1alpha1"
	windowsv1 "github.com/idplane/idplane/api/windows/v1"
	"github.com/idplane/idplane/internal/registry/apiextensions/customresourcedefinition"
	"github.com/idplane/idplane/internal/registry/authentication/selfsubjectreview"
	"github.com/idplane/idplane/internal/registry/authentication/tokenreview"
	"github.com/idplane/idplane/internal/registry/authorization/localsubjectaccessreview"
	"github.com/idplane/idplane/internal/registry/authorization/selfsubjectaccessreview"
	"github.com/idplane/idplane/internal/registry/authorization/selfsubjectrulesreview"
	"github.com/idplane/idplane/internal/registry/authorization/subjectaccessreview"
	"github.com/idplane/idplane/internal/registry/certificates/certificatesigningrequest"
	"github.com/idplane/idplane/internal/registry/certificates/podcertificaterequest"
	"github.com/idplane/idplane/internal/registry/core/namespace"
	"github.com/idplane/idplane/internal/registry/core/pod"
	"github.com/idplane/idplane/internal/registry/core/serviceaccount"
	"github.com/idplane/idplane/internal/registry/rbac/clusterrole"
	"github.com/idplane/idplane/internal/registry/rbac/clusterrolebinding"
	"github.com/idplane/idplane/internal/registry/rbac/escalation"
	"github.com/idplane/idplane/internal/registry/rbac/role"
	"github.com/idplane/idplane/internal/registry/rbac/rolebinding"
	"github.com/idplane/idplane/internal/registry/resources"
	"github.com/idplane/idplane/internal/registry/windows/gmsacredentialspec"
)

// apiDeps are what the resources' storage is built from.
type apiDeps struct {
	optsGetter generic.RESTOptionsGetter
	// authorizer and rules are the whole chain, for the review APIs.
	authorizer authorizer.Authorizer
	rules      authorizer.RuleResolver
	// guard refuses roles and bindings that would grant more than their author holds.
	guard *escalation.Guard
	// authn and audiences judge the tokens of TokenReviews; tokens answers TokenRequests.
	authn     authenticator.Request
	audiences authenticator.Audiences
	tokens    serviceaccount.TokenConfig
	// served, when set, is told the storage each group version serves.
	served func(schema.GroupVersion, map[string]rest.Storage)
	// nodeReadables serves node.idplane.io nodereadables; nil without mode Node.
	nodeReadables rest.Storage
}

type restConstructor func(apiDeps) (map[string]rest.Storage, error)

type apiGroup struct {
	group string
	// versions are served in order of preference. Every version shares the group's storage.
	versions  []apiVersion
	resources []restConstructor
	// linked builds storage that reads the group's other resources' storage.
	linked func(apiDeps, map[string]rest.Storage) map[string]rest.Storage
}

type apiVersion struct {
	name string
	// only, when set, limits the version to these resources and their subresources.
	only []string
}

// v serves every resource of the group at one version.
func v(name string) []apiVersion { return []apiVersion{{name: name}} }

// storageFor returns the group's storage a version serves.
func (av apiVersion) storageFor(all map[string]rest.Storage) map[string]rest.Storage {
	if av.only == nil {
		return all
	}
	out := map[string]rest.Storage{}
	for path, s := range all {
		resource, _, _ := strings.Cut(path, "/")
		if slices.Contains(av.only, resource) {
			out[path] = s
		}
	}
	return out
}

// groups are the served API groups, each with its version and the constructors of its resources.
var groups = []apiGroup{
	{"", v("v1"), append(described(""), stored(namespace.NewREST), stored(pod.NewREST)), func(d apiDeps, core map[string]rest.Storage) map[string]rest.Storage {
		getters := serviceaccount.Getters{
			ServiceAccounts: core["serviceaccounts"].(rest.Getter), Pods: core["pods"].(rest.Getter),
			Secrets: core["secrets"].(rest.Getter), Nodes: core["nodes"].(rest.Getter),
		}
		return map[string]rest.Storage{"serviceaccounts/token": serviceaccount.NewTokenREST(d.tokens, getters)}
	}},
	{"coordination.k8s.io", v("v1"), described("coordination.k8s.io"), nil},
	{"discovery.k8s.io", v("v1"), described("discovery.k8s.io"), nil},
	{"authentication.k8s.io", v("v1"), []restConstructor{
		static("selfsubjectreviews", &selfsubjectreview.REST{}),
		func(d apiDeps) (map[string]rest.Storage, error) {
			return map[string]rest.Storage{"tokenreviews": tokenreview.NewREST(d.authn, d.audiences)}, nil
		},
	}, nil},
	{"authorization.k8s.io", v("v1"), []restConstructor{func(d apiDeps) (map[string]rest.Storage, error) {
		return map[string]rest.Storage{
			"subjectaccessreviews":      subjectaccessreview.NewREST(d.authorizer),
			"selfsubjectaccessreviews":  selfsubjectaccessreview.NewREST(d.authorizer),
			"localsubjectaccessreviews": localsubjectaccessreview.NewREST(d.authorizer),
			"selfsubjectrulesreviews":   selfsubjectrulesreview.NewREST(d.rules),
		}, nil
	}}, nil},
	{"rbac.authorization.k8s.io", v("v1"), []restConstructor{
		guarded(role.NewREST), guarded(rolebinding.NewREST), guarded(clusterrole.NewREST), guarded(clusterrolebinding.NewREST),
	}, nil},
	{"certificates.k8s.io", []apiVersion{{name: "v1"}, {name: "v1beta1", only: []string{"certificatesigningrequests", "podcertificaterequests"}}},
		append(described("certificates.k8s.io"), stored(certificatesigningrequest.NewREST), podCertificateRequests), nil},
	{"storage.k8s.io", v("v1"), described("storage.k8s.io"), nil},
	{"flowcontrol.apiserver.k8s.io", v("v1"), described("flowcontrol.apiserver.k8s.io"), nil},
	{"apiextensions.k8s.io", v("v1"), []restConstructor{static("customresourcedefinitions", customresourcedefinition.New(gmsacredentialspec.CRD()))}, nil},
	{"windows.k8s.io", []apiVersion{{name: "v1"}, {name: "v1alpha1"}}, described("windows.k8s.io"), nil},
	{nodev1alpha1.GroupName, v("v1alpha1"), []restConstructor{nodeReadables}, nil},
}

// nodeReadables are served only with the Node authorizer, whose graph they follow.
func nodeReadables(d apiDeps) (map[string]rest.Storage, error) {
	if d.nodeReadables == nil {
		return nil, nil
	}
	return map[string]rest.Storage{nodev1alpha1.ResourceName: d.nodeReadables}, nil
}

// podCertificateRequests' /status asks the authorizer who may sign.
func podCertificateRequests(d apiDeps) (map[string]rest.Storage, error) {
	return podcertificaterequest.NewREST(scheme, d.optsGetter, d.authorizer, clock.RealClock{})
}

func stored(newREST func(runtime.ObjectTyper, generic.RESTOptionsGetter) (map[string]rest.Storage, error)) restConstructor {
	return func(d apiDeps) (map[string]rest.Storage, error) { return newREST(scheme, d.optsGetter) }
}

// described are the constructors of the group's resources that the registry's table describes.
func described(group string) []restConstructor {
	var out []restConstructor
	for _, build := range resources.Of(group) {
		out = append(out, stored(build))
	}
	return out
}

func guarded(newREST func(runtime.ObjectTyper, generic.RESTOptionsGetter, *escalation.Guard) (map[string]rest.Storage, error)) restConstructor {
	return func(d apiDeps) (map[string]rest.Storage, error) { return newREST(scheme, d.optsGetter, d.guard) }
}

func static(resource string, s rest.Storage) restConstructor {
	return func(apiDeps) (map[string]rest.Storage, error) { return map[string]rest.Storage{resource: s}, nil }
}

func installAPIs(srv *genericapiserver.GenericAPIServer, d apiDeps) error {
	for _, g := range groups {
		info := genericapiserver.NewDefaultAPIGroupInfo(g.group, scheme, parameterCodec, codecs)
		storage := map[string]rest.Storage{}
		for _, newREST := range g.resources {
			resources, err := newREST(d)
			if err != nil {
				return err
			}
			for path, s := range resources {
				storage[path] = s
			}
		}
		if len(storage) == 0 {
			continue // a group whose resources this configuration does not serve
		}
		if g.linked != nil {
			for path, s := range g.linked(d, storage) {
				storage[path] = s
			}
		}
		for _, av := range g.versions {
			info.VersionedResourcesStorageMap[av.name] = av.storageFor(storage)
			if d.served != nil {
				d.served(schema.GroupVersion{Group: g.group, Version: av.name}, info.VersionedResourcesStorageMap[av.name])
			}
		}
		var err error
		if g.group == "" {
			err = srv.InstallLegacyAPIGroup(genericapiserver.DefaultLegacyAPIPrefix, &info)
		} else {
			err = srv.InstallAPIGroup(&info)
		}
		if err != nil {
			return fmt.Errorf("installing API group %q: %w", g.group, err)
		}
	}
	for _, gr := range freeForm {
		if err := refuseStrategicMergePatch(srv.Handler.GoRestfulContainer, gr); err != nil {
			return err
		}
	}
	return nil
}

// freeForm are the resources whose objects hold free-form JSON documents. A strategic merge patch
// cannot reach inside those: it looks every key up in the Go type, and the library answers 500 for
// a key it does not find. Like custom resources, they therefore take every patch type but that
// one, and say so in the OpenAPI documents, so kubectl apply and patch choose a JSON merge patch;
// server-side apply merges the documents field by field.
var freeForm = []schema.GroupResource{windowsv1.Resource("gmsacredentialspecs")}

// refuseStrategicMergePatch removes strategic merge patch from what the resource's PATCH routes
// consume, in every served version: go-restful then answers 415 and the OpenAPI documents, built
// from the routes, leave it out.
func refuseStrategicMergePatch(c *restful.Container, gr schema.GroupResource) error {
	isPatch := func(r restful.Route) bool {
		return r.Method == http.MethodPatch && strings.HasSuffix(r.Path, "/"+gr.Resource+"/{name}")
	}
	isStrategic := func(mediaType string) bool { return mediaType == string(types.StrategicMergePatchType) }
	changed := 0
	for _, ws := range c.RegisteredWebServices() {
		if !strings.HasPrefix(ws.RootPath(), "/apis/"+gr.Group+"/") {
			continue
		}
		// While a web service's routes are static, as the library's are, Routes returns the
		// service's own slice, so the routes change in place. Checked below rather than trusted.
		routes := ws.Routes()
		for i := range routes {
			if isPatch(routes[i]) {
				routes[i].Consumes = slices.DeleteFunc(slices.Clone(routes[i].Consumes), isStrategic)
			}
		}
		for _, r := range ws.Routes() {
			if !isPatch(r) {
				continue
			}
			if slices.ContainsFunc(r.Consumes, isStrategic) {
				return fmt.Errorf("removing strategic merge patch from %s %s: the route did not change", r.Method, r.Path)
			}
			changed++
		}
	}
	if changed == 0 {
		return fmt.Errorf("removing strategic merge patch from %s: no PATCH route found", gr)
	}
	return nil
}
