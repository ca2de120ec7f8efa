package apiserver

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/informers"

	"github.com/idplane/idplane/internal/authz/node"
	"github.com/idplane/idplane/internal/authz/rbac/bootstrap"
	"github.com/idplane/idplane/internal/storage/etcdprogress"
)

// staleGraphWait bounds how long a node request that would be refused waits for the graph to
// catch up with the store.
const staleGraphWait = 250 * time.Millisecond

// graphKeyPrefixes are the etcd key prefixes of the resources the Node authorizer's graph is built
// from; the library stores each resource under /registry/<resource>/.
var graphKeyPrefixes = map[string]string{
	"pods":              "/registry/pods/",
	"persistentvolumes": "/registry/persistentvolumes/",
	"volumeattachments": "/registry/volumeattachments/",
}

// nodeAuthorizer builds the Node authorizer: the graph, its populator on the shared informers,
// and the freshness wait backed by the store's own progress.
func nodeAuthorizer(ctx context.Context, etcd *clientv3.Client, factory informers.SharedInformerFactory) (*node.Authorizer, *node.Populator, error) {
	tracker := etcdprogress.Start(ctx, etcd, graphKeyPrefixes)
	node.RegisterMetrics()
	graph := node.NewGraph()
	populator, err := node.NewPopulator(graph, factory.Core().V1().Pods(), factory.Core().V1().PersistentVolumes(), factory.Storage().V1().VolumeAttachments())
	if err != nil {
		return nil, nil, fmt.Errorf("building the node graph populator: %w", err)
	}
	fresh := node.NewFreshness(tracker, populator, staleGraphWait)
	// Options.Validate refuses mode Node without NodeRestriction, so the plugin judges node writes.
	return node.NewAuthorizer(graph, fresh, bootstrap.NodeRules(), node.WithNodeRestriction()), populator, nil
}

// newEtcdClient connects to the same etcd as the storage layer, with the same credentials.
func newEtcdClient(servers []string, caFile, certFile, keyFile string) (*clientv3.Client, error) {
	var tlsConfig *tls.Config
	if caFile != "" || certFile != "" {
		info := transport.TLSInfo{CertFile: certFile, KeyFile: keyFile, TrustedCAFile: caFile}
		var err error
		tlsConfig, err = info.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("etcd client TLS: %w", err)
		}
	}
	client, err := clientv3.New(clientv3.Config{Endpoints: servers, TLS: tlsConfig, DialTimeout: 20 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("connecting to etcd: %w", err)
	}
	return client, nil
}

// nodePathURL is where an admin asks why a node may read an object.
const nodePathURL = "/debug/node-authorizer/path"

// nodePathHandler answers, for an admin, why a node may read an object: the path through the
// Node authorizer's graph. GET /debug/node-authorizer/path?node=N&kind=secret&namespace=NS&name=X
func nodePathHandler(a *node.Authorizer) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		nodeName, kind, namespace, name := q.Get("node"), q.Get("kind"), q.Get("namespace"), q.Get("name")
		if nodeName == "" || kind == "" || name == "" {
			http.Error(w, "query parameters node, kind and name are required (namespace for namespaced kinds)", http.StatusBadRequest)
			return
		}
		// No path is an answer, not an error: it says the node may not read the object.
		path, ok := a.Explain(nodeName, kind, namespace, name)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(struct {
			Node    string   `json:"node"`
			Allowed bool     `json:"allowed"`
			Path    []string `json:"path"`
		}{nodeName, ok, path})
	}
}
