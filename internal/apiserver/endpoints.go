package apiserver

import (
	"github.com/emicklei/go-restful/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/routes"
	"k8s.io/klog/v2"

	"github.com/idplane/idplane/internal/registry/rbac/escalation"
	"github.com/idplane/idplane/internal/version"
)

// endpoints installs what the server serves beside the library's own paths: idplane's /version,
// the authorizers' debug paths, OIDC discovery and the API groups.
func (a *assembly) endpoints(srv *genericapiserver.GenericAPIServer, authz authorizers, tokens tokenParts) error {
	replaceVersionRoute(srv.Handler.GoRestfulContainer)
	authz.installDebugPaths(srv)
	if err := a.in.tokens.installDiscovery(srv, a.cfg.ExternalAddress); err != nil {
		return err
	}
	installSPIFFEBundle(srv, a.podCerts)
	readables, err := a.nodeReadables(srv, authz)
	if err != nil {
		return err
	}
	reviews := reviewStorage{}
	served, readableStorage := reviews.add, rest.Storage(nil)
	if readables != nil {
		readableStorage = readables.storage
		served = func(gv schema.GroupVersion, storage map[string]rest.Storage) {
			reviews.add(gv, storage)
			readables.served(gv, storage)
		}
	}
	if err := installAPIs(srv, apiDeps{
		optsGetter: a.cfg.RESTOptionsGetter,
		authorizer: a.cfg.Authorization.Authorizer,
		rules:      a.cfg.RuleResolver,
		guard:      &escalation.Guard{Authorizer: a.cfg.Authorization.Authorizer, Rules: authz.rbac},
		authn:      a.cfg.Authentication.Authenticator,
		audiences:  a.in.tokens.audiences,
		tokens:     tokens.config,
		served:     served,

		nodeReadables: readableStorage,
	}); err != nil {
		return err
	}
	return a.installReviews(reviews)
}

// replaceVersionRoute serves idplane's version at /version: the library's route reports the
// component-base build, which says nothing about idplane unless linked with special flags.
func replaceVersionRoute(c *restful.Container) {
	for _, ws := range c.RegisteredWebServices() {
		if ws.RootPath() == "/version" {
			if err := c.Remove(ws); err != nil {
				klog.ErrorS(err, "Removing the library's /version route")
			}
		}
	}
	routes.Version{Version: version.Info()}.Install(c)
}
