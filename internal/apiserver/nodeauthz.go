package apiserver

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/registry/generic"
	certificatesinformers "k8s.io/client-go/informers/certificates/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	storageinformers "k8s.io/client-go/informers/storage/v1"

	"github.com/idplane/idplane/internal/authz/node"
	"github.com/idplane/idplane/internal/authz/rbac/bootstrap"
)

// staleGraphWait bounds how long a node request that would be refused waits for the graph to
// catch up with the store.
const staleGraphWait = 250 * time.Millisecond

// nodeAuthorizer builds the Node authorizer: the graph, its populator on the given informers,
// and the freshness wait, which reads the store's progress from store.
func nodeAuthorizer(store node.RevisionSource, pods coreinformers.PodInformer,
	pvs coreinformers.PersistentVolumeInformer, attachments storageinformers.VolumeAttachmentInformer,
	pcrs certificatesinformers.PodCertificateRequestInformer) (*node.Authorizer, *node.Populator, error) {
	node.RegisterMetrics()
	graph := node.NewGraph()
	populator, err := node.NewPopulator(graph, pods, pvs, attachments, pcrs)
	if err != nil {
		return nil, nil, fmt.Errorf("building the node graph populator: %w", err)
	}
	fresh := node.NewFreshness(store, populator, staleGraphWait)
	// Options.Validate refuses mode Node without NodeRestriction, so the plugin judges node writes.
	return node.NewAuthorizer(graph, fresh, bootstrap.NodeRules(), node.WithNodeRestriction()), populator, nil
}

// graphKeyPrefixes returns the etcd key prefix of each resource the graph is built from, as
// the storage layer writes its keys: the storage prefix, then the resource's prefix.
func graphKeyPrefixes(storage generic.RESTOptionsGetter) (map[string]string, error) {
	resources := []struct {
		name     string
		resource schema.GroupResource
		example  runtime.Object
	}{
		{node.ResourcePods, corev1.Resource("pods"), &corev1.Pod{}},
		{node.ResourcePersistentVolumes, corev1.Resource("persistentvolumes"), &corev1.PersistentVolume{}},
		{node.ResourceVolumeAttachments, storagev1.Resource("volumeattachments"), &storagev1.VolumeAttachment{}},
		{node.ResourcePodCertificateRequests, certificatesv1.Resource("podcertificaterequests"), &certificatesv1.PodCertificateRequest{}},
	}
	prefixes := make(map[string]string, len(resources))
	for _, r := range resources {
		opts, err := storage.GetRESTOptions(r.resource, r.example)
		if err != nil {
			return nil, fmt.Errorf("finding where %s are stored: %w", r.resource, err)
		}
		prefixes[r.name] = path.Join("/", opts.StorageConfig.Prefix, opts.ResourcePrefix) + "/"
	}
	return prefixes, nil
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
// A question it cannot answer is a 400 Status, which kubectl shows with its message.
func nodePathHandler(a *node.Authorizer) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		nodeName, kind, namespace, name := q.Get("node"), q.Get("kind"), q.Get("namespace"), q.Get("name")
		if msg := nodePathQueryError(nodeName, kind, namespace, name); msg != "" {
			responsewriters.ErrorNegotiated(apierrors.NewBadRequest(msg), codecs, corev1.SchemeGroupVersion, w, r)
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

// nodePathQueryError says what is wrong with a path question, or "" when nothing is.
func nodePathQueryError(nodeName, kind, namespace, name string) string {
	const usage = "query parameters node, kind and name are required, and namespace for namespaced kinds"
	if nodeName == "" || kind == "" || name == "" {
		return usage
	}
	namespaced, ok := node.ExplainKind(kind)
	switch {
	case !ok:
		return fmt.Sprintf("unknown kind %q: one of %s (singular or plural)", kind, strings.Join(node.ExplainKinds(), ", "))
	case namespaced && namespace == "":
		return fmt.Sprintf("kind %q is namespaced: %s", kind, usage)
	case !namespaced && namespace != "":
		return fmt.Sprintf("kind %q is not namespaced: namespace must be empty", kind)
	}
	return ""
}
