package apiserver

import (
	"context"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	windowsv1 "github.com/idplane/idplane/api/windows/v1"
)

// openEtcd gives the server its store: the etcd of --etcd-servers, else an embedded one whose
// close goes on closers. It returns the embedded etcd (nil for an external one) and the servers to
// connect to, once it has checked that the store holds no secret the encryption configuration
// cannot read. The configuration is loaded before etcd starts, so a bad file is refused first.
func openEtcd(ctx context.Context, o *Options, encryptionConfig string, closers *closerStack) (*embeddedEtcd, []string, error) {
	secrets, stopSecrets, err := loadSecretsTransformer(encryptionConfig, o.Encryption.AutomaticReload)
	if err != nil {
		return nil, nil, err
	}
	defer stopSecrets()
	var etcd *embeddedEtcd
	servers := o.EtcdServers
	if len(servers) == 0 {
		var err error
		etcd, err = startEmbeddedEtcd(o.DataDir)
		if err != nil {
			return nil, nil, err
		}
		closers.push(etcd.Close)
		servers = []string{etcd.clientURL}
	}
	if err := verifyStoredSecrets(ctx, o, servers, secrets, encryptionConfig); err != nil {
		return nil, nil, err
	}
	return etcd, servers, nil
}

// storagePrefix is where the storage layer keeps every resource in etcd, each under
// <storagePrefix>/<resource>/ (kube-apiserver's default, so tools that read etcd find objects
// where they expect them).
const storagePrefix = "/registry"

// storage configures the storage layer: the etcd servers and credentials, encryption at rest,
// the served group versions and how each resource is encoded in etcd.
func (a *assembly) storage() error {
	if err := withoutMemoryHungryGates(); err != nil {
		return err
	}
	etcdOpts := genericoptions.NewEtcdOptions(storagebackend.NewDefaultConfig(storagePrefix, nil))
	etcdOpts.StorageConfig.Transport.ServerList = a.in.etcdServers
	etcdOpts.StorageConfig.Transport.TrustedCAFile = a.o.EtcdCAFile
	etcdOpts.StorageConfig.Transport.CertFile = a.o.EtcdCertFile
	etcdOpts.StorageConfig.Transport.KeyFile = a.o.EtcdKeyFile
	etcdOpts.DefaultStorageMediaType = "application/vnd.kubernetes.protobuf"
	// No garbage collector runs: deletions are never held for orphaning or foreground cascades.
	etcdOpts.EnableGarbageCollection = false
	etcdOpts.EncryptionProviderConfigFilepath = a.in.encryptionConfig
	etcdOpts.EncryptionProviderConfigAutomaticReload = a.o.Encryption.AutomaticReload
	// As kube-apiserver does, events skip the watch cache: they are many, short-lived and rarely
	// watched, and a cached copy of each would only hold memory.
	etcdOpts.WatchCacheSizes = []string{"events#0"}
	resourceConfig := serverstorage.NewResourceConfig()
	for _, g := range served {
		resourceConfig.EnableVersions(g.gv)
	}
	encoding := serverstorage.NewDefaultResourceEncodingConfig(scheme)
	// The library would store ClusterTrustBundles and PodCertificateRequests as v1beta1 until v1 is old enough to roll back
	// to; idplane stores what it serves as preferred, and has no older release to roll back to.
	for _, resource := range []string{"clustertrustbundles", "podcertificaterequests"} {
		encoding.SetResourceEncoding(certificatesv1.Resource(resource), certificatesv1.SchemeGroupVersion,
			schema.GroupVersion{Group: certificatesv1.GroupName, Version: runtime.APIVersionInternal})
	}
	storageFactory := serverstorage.NewDefaultStorageFactory(etcdOpts.StorageConfig, etcdOpts.DefaultStorageMediaType,
		codecs, encoding, resourceConfig, nil)
	// CRDs are never stored; JSON keeps the storage factory from asking for a protobuf codec.
	storageFactory.SetSerializer(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, "application/json", nil)
	// idplane's own types have no protobuf form.
	storageFactory.SetSerializer(windowsv1.Resource("gmsacredentialspecs"), "application/json", nil)
	if err := etcdOpts.ApplyWithStorageFactoryTo(storageFactory, a.cfg); err != nil {
		return fmt.Errorf("configuring etcd storage: %w", err)
	}
	return nil
}
