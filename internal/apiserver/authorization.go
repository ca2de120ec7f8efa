package apiserver

import (
	"fmt"
	"slices"

	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/idplane/idplane/internal/authz"
	"github.com/idplane/idplane/internal/authz/node"
	"github.com/idplane/idplane/internal/authz/rbac"
	"github.com/idplane/idplane/internal/storage/etcdprogress"
)

// authorizers are what the authorization step built besides the server's authorizer chain.
type authorizers struct {
	// rbac is the RBAC index; it exists whatever the modes: escalation checks on roles and
	// bindings need it even when RBAC does not authorize requests.
	rbac *rbac.Authorizer
	// node and nodeGraph are the Node authorizer and the populator of its graph; nil without mode Node.
	node      *node.Authorizer
	nodeGraph *node.Populator
}

// authorization puts the authorizer chain together from --authorization-mode: the RBAC index
// always, the Node authorizer with its graph and its reads of the store's progress for mode
// Node. The etcd client of those reads is closed by closers.
func (a *assembly) authorization(closers *closerStack) (authorizers, error) {
	rbacIndex, err := rbac.New(a.loopback.informers.Rbac().V1())
	if err != nil {
		return authorizers{}, fmt.Errorf("building the RBAC index: %w", err)
	}
	built := authorizers{rbac: rbacIndex}
	sources := authz.Sources{RBAC: rbacIndex}
	// The node graph watches every pod and reads the store's progress: only mode Node needs it.
	if slices.Contains(a.o.AuthorizationModes, authz.ModeNode) {
		etcdClient, err := newEtcdClient(a.in.etcdServers, a.o.EtcdCAFile, a.o.EtcdCertFile, a.o.EtcdKeyFile)
		if err != nil {
			return authorizers{}, err
		}
		closers.push(func() { etcdClient.Close() })
		prefixes, err := graphKeyPrefixes(a.cfg.RESTOptionsGetter)
		if err != nil {
			return authorizers{}, err
		}
		factory := a.loopback.informers
		built.node, built.nodeGraph, err = nodeAuthorizer(etcdprogress.NewReader(etcdClient, prefixes),
			factory.Core().V1().Pods(), factory.Core().V1().PersistentVolumes(), factory.Storage().V1().VolumeAttachments(),
			factory.Certificates().V1().PodCertificateRequests())
		if err != nil {
			return authorizers{}, err
		}
		sources.Node = built.node
	}
	a.cfg.Authorization.Authorizer, a.cfg.RuleResolver, err = authz.New(a.o.AuthorizationModes, sources)
	if err != nil {
		return authorizers{}, err
	}
	return built, nil
}

// installDebugPaths serves, with mode Node, why a node may read an object.
func (z authorizers) installDebugPaths(srv *genericapiserver.GenericAPIServer) {
	if z.node != nil {
		srv.Handler.NonGoRestfulMux.HandleFunc(nodePathURL, nodePathHandler(z.node))
	}
}
