package apiserver

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/idplane/idplane/internal/registry/apiextensions/customresourcedefinition"
	"github.com/idplane/idplane/internal/registry/authentication/selfsubjectreview"
	"github.com/idplane/idplane/internal/registry/coordination/lease"
	"github.com/idplane/idplane/internal/registry/core/configmap"
	"github.com/idplane/idplane/internal/registry/core/event"
	"github.com/idplane/idplane/internal/registry/core/namespace"
	"github.com/idplane/idplane/internal/registry/core/node"
	"github.com/idplane/idplane/internal/registry/core/persistentvolume"
	"github.com/idplane/idplane/internal/registry/core/persistentvolumeclaim"
	"github.com/idplane/idplane/internal/registry/core/pod"
	"github.com/idplane/idplane/internal/registry/core/secret"
	"github.com/idplane/idplane/internal/registry/core/serviceaccount"
)

type restConstructor func(runtime.ObjectTyper, generic.RESTOptionsGetter) (map[string]rest.Storage, error)

// groups are the served API groups, each with its version and the constructors of its resources.
var groups = []struct {
	group, version string
	resources      []restConstructor
}{
	{"", "v1", []restConstructor{
		namespace.NewREST, node.NewREST, pod.NewREST, secret.NewREST, configmap.NewREST,
		serviceaccount.NewREST, persistentvolume.NewREST, persistentvolumeclaim.NewREST, event.NewREST,
	}},
	{"coordination.k8s.io", "v1", []restConstructor{lease.NewREST}},
	{"authentication.k8s.io", "v1", []restConstructor{staticREST("selfsubjectreviews", &selfsubjectreview.REST{})}},
	{"apiextensions.k8s.io", "v1", []restConstructor{staticREST("customresourcedefinitions", customresourcedefinition.New())}},
}

func staticREST(resource string, s rest.Storage) restConstructor {
	return func(runtime.ObjectTyper, generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
		return map[string]rest.Storage{resource: s}, nil
	}
}

func installAPIs(srv *genericapiserver.GenericAPIServer, optsGetter generic.RESTOptionsGetter) error {
	for _, g := range groups {
		info := genericapiserver.NewDefaultAPIGroupInfo(g.group, Scheme, ParameterCodec, Codecs)
		storage := map[string]rest.Storage{}
		for _, newREST := range g.resources {
			resources, err := newREST(Scheme, optsGetter)
			if err != nil {
				return err
			}
			for path, s := range resources {
				storage[path] = s
			}
		}
		info.VersionedResourcesStorageMap[g.version] = storage
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
	return nil
}
