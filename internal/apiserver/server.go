// Package apiserver assembles idplane's Kubernetes-compatible API server: scheme, storage on etcd,
// authentication, authorization, admission, the served API groups and the built-in controllers.
package apiserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/emicklei/go-restful/v3"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/server/routes"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/compatibility"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	windowsv1 "github.com/idplane/idplane/api/windows/v1"
	"github.com/idplane/idplane/internal/admission"
	gmsaadmission "github.com/idplane/idplane/internal/admission/gmsa"
	"github.com/idplane/idplane/internal/authn"
	"github.com/idplane/idplane/internal/authn/bootstraptoken"
	"github.com/idplane/idplane/internal/authz"
	"github.com/idplane/idplane/internal/authz/node"
	"github.com/idplane/idplane/internal/authz/rbac"
	generated "github.com/idplane/idplane/internal/generated/openapi"
	"github.com/idplane/idplane/internal/kubeconfig"
	"github.com/idplane/idplane/internal/leaderelection"
	"github.com/idplane/idplane/internal/pki"
	"github.com/idplane/idplane/internal/registry/rbac/escalation"
	"github.com/idplane/idplane/internal/version"
)

// kubernetesVersion is the release whose API and library behaviour idplane follows.
const kubernetesVersion = "1.37.2"

// Server is a running idplane API server.
type Server struct {
	// URL is the HTTPS address clients use.
	URL string
	// AdminKubeconfig is the path of the system:masters kubeconfig.
	AdminKubeconfig string

	etcd *embeddedEtcd
	// identity names this replica in the controllers' Lease.
	identity string
	done     chan struct{}
	err      error
}

// Wait blocks until the server has stopped (its context ended) and returns why it stopped.
func (s *Server) Wait() error {
	<-s.done
	return s.err
}

// Start prepares the data directory, starts etcd and serves the API until ctx ends. It returns
// once the server listens; /readyz turns ready when the start-up hooks are done.
func Start(ctx context.Context, o *Options) (*Server, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data directory: %w", err)
	}
	files := pki.Files{Dir: filepath.Join(o.DataDir, "pki")}
	now := time.Now()
	ca, err := pki.EnsureCA(files, "idplane-ca", now)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(o.BindAddress.String(), strconv.Itoa(o.SecurePort)))
	if err != nil {
		return nil, fmt.Errorf("listening on %s:%d: %w", o.BindAddress, o.SecurePort, err)
	}
	srv, err := start(ctx, o, files, ca, ln, now)
	if err != nil {
		ln.Close()
		return nil, err
	}
	return srv, nil
}

func start(ctx context.Context, o *Options, files pki.Files, ca *pki.CA, ln net.Listener, now time.Time) (*Server, error) {
	port := ln.Addr().(*net.TCPAddr).Port
	host := o.BindAddress.String()
	if o.BindAddress.IsUnspecified() {
		host = "127.0.0.1"
	}
	url := "https://" + net.JoinHostPort(host, strconv.Itoa(port))

	names := pki.ServingNames{
		DNS: []string{"localhost", genericapiserver.LoopbackClientServerNameOverride},
		IPs: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
	}
	if !o.BindAddress.IsUnspecified() {
		names.IPs = append(names.IPs, o.BindAddress)
	}
	servingCert, servingKey, err := pki.EnsureServingCert(files, ca, names, now)
	if err != nil {
		return nil, err
	}
	if _, err := pki.EnsureServiceAccountKey(files); err != nil {
		return nil, err
	}
	encryptionConfig, secretsTransformer, err := o.Encryption.configFile(files)
	if err != nil {
		return nil, err
	}
	tokens, err := serviceAccountTokens(o, files, url)
	if err != nil {
		return nil, err
	}
	adminCert, adminKey, err := pki.EnsureAdminCert(files, ca, now)
	if err != nil {
		return nil, err
	}
	adminKubeconfig := filepath.Join(o.DataDir, "admin.kubeconfig")
	err = kubeconfig.Write(adminKubeconfig, "idplane", kubeconfig.Credentials{
		Server: url, CAPEM: ca.CertPEM, CertPEM: adminCert, KeyPEM: adminKey,
	})
	if err != nil {
		return nil, err
	}

	var etcd *embeddedEtcd
	etcdServers := o.EtcdServers
	if len(etcdServers) == 0 {
		etcd, err = startEmbeddedEtcd(o.DataDir)
		if err != nil {
			return nil, err
		}
		etcdServers = []string{etcd.clientURL}
	}
	if err := verifyStoredSecrets(ctx, o, etcdServers, secretsTransformer, encryptionConfig); err != nil {
		if etcd != nil {
			etcd.Close()
		}
		return nil, err
	}
	var identity string
	if o.LeaderElection.LeaderElect {
		if identity, err = leaderelection.NewIdentity(); err != nil {
			if etcd != nil {
				etcd.Close()
			}
			return nil, err
		}
	}
	s := &Server{URL: url, AdminKubeconfig: adminKubeconfig, etcd: etcd, identity: identity, done: make(chan struct{})}
	prepared, err := build(ctx, o, buildInput{
		listener: ln, servingCert: servingCert, servingKey: servingKey, caPEM: ca.CertPEM,
		etcdServers: etcdServers, tokens: tokens, identity: identity, encryptionConfig: encryptionConfig,
	})
	if err != nil {
		if etcd != nil {
			etcd.Close()
		}
		return nil, err
	}
	go func() {
		defer close(s.done)
		s.err = prepared.RunWithContext(ctx)
		if s.etcd != nil {
			// Close etcd only after the server stopped serving, so no request sees a closed store.
			s.etcd.Close()
		}
	}()
	return s, nil
}

type buildInput struct {
	listener                net.Listener
	servingCert, servingKey []byte
	caPEM                   []byte
	etcdServers             []string
	tokens                  *tokenSettings
	// identity names this replica in the controllers' Lease.
	identity string
	// encryptionConfig is the EncryptionConfiguration file the storage layer encrypts with.
	encryptionConfig string
}

func build(ctx context.Context, o *Options, in buildInput) (_ *preparedServer, err error) {
	cfg := genericapiserver.NewConfig(Codecs)
	cfg.EffectiveVersion = compatibility.NewEffectiveVersionFromString(kubernetesVersion, "", "")
	cfg.FeatureGate = utilfeature.DefaultFeatureGate
	cfg.RequestTimeout = o.RequestTimeout
	cfg.BuildHandlerChainFunc = func(h http.Handler, c *genericapiserver.Config) http.Handler {
		return genericapiserver.DefaultBuildHandlerChain(withAnswerMargin(h), c)
	}
	if err := o.Audit.ApplyTo(cfg); err != nil {
		return nil, err
	}

	cert, err := dynamiccertificates.NewStaticCertKeyContent("serving-cert", in.servingCert, in.servingKey)
	if err != nil {
		return nil, fmt.Errorf("loading serving certificate: %w", err)
	}
	clientCA, err := dynamiccertificates.NewStaticCAContent("client-ca", in.caPEM)
	if err != nil {
		return nil, fmt.Errorf("loading client CA: %w", err)
	}
	cfg.SecureServing = &genericapiserver.SecureServingInfo{Listener: in.listener, Cert: cert, ClientCA: clientCA}
	loopbackToken, err := randomToken()
	if err != nil {
		return nil, err
	}
	cfg.LoopbackClientConfig, err = cfg.SecureServing.NewLoopbackClientConfig(loopbackToken, in.caPEM)
	if err != nil {
		return nil, fmt.Errorf("building loopback client: %w", err)
	}
	// The in-process clients (admission, controllers) are the server's own; do not let client-side
	// throttling slow them down.
	cfg.LoopbackClientConfig.QPS, cfg.LoopbackClientConfig.Burst = -1, -1
	cfg.ExternalAddress = in.listener.Addr().String()
	// On SIGTERM the library turns /readyz red, waits the delay, stops accepting, drains in-flight
	// requests (bounded by the request timeout) and, with a grace period, tells watches to end;
	// the leader lease is released in a pre-shutdown hook, before any of that refuses requests.
	cfg.ShutdownDelayDuration = o.Shutdown.DelayDuration
	cfg.ShutdownWatchTerminationGracePeriod = o.Shutdown.WatchTerminationGracePeriod
	cfg.ShutdownSendRetryAfter = o.Shutdown.SendRetryAfter

	client, err := kubernetes.NewForConfig(cfg.LoopbackClientConfig)
	if err != nil {
		return nil, fmt.Errorf("building loopback client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg.LoopbackClientConfig)
	if err != nil {
		return nil, fmt.Errorf("building loopback dynamic client: %w", err)
	}
	informerFactory := informers.NewSharedInformerFactory(client, 10*time.Minute)

	tokens, err := in.tokens.build(client, informerFactory)
	if err != nil {
		return nil, err
	}
	authnConfig := authn.Config{
		ClientCA: clientCA, TokenAuthFile: o.TokenAuthFile, Anonymous: o.AnonymousAuth,
		ServiceAccounts: tokens.authenticator, APIAudiences: in.tokens.audiences,
		BootstrapTokens: bootstraptoken.New(informerFactory.Core().V1().Secrets().Lister().Secrets(metav1.NamespaceSystem), clock.RealClock{}),
	}
	if o.AuthenticationConfigFile != "" {
		anonymous, err := authn.LoadConfigFile(o.AuthenticationConfigFile)
		if err != nil {
			return nil, err
		}
		if anonymous != nil {
			authnConfig.Anonymous, authnConfig.AnonymousPaths = anonymous.Enabled, anonymous.Paths
		}
	}
	cfg.Authentication.APIAudiences = in.tokens.audiences
	cfg.Authentication.Authenticator, err = authn.New(authnConfig)
	if err != nil {
		return nil, err
	}
	// The RBAC index exists whatever the modes: escalation checks on roles and bindings need it
	// even when RBAC does not authorize requests.
	rbacIndex, err := rbac.New(informerFactory.Rbac().V1())
	if err != nil {
		return nil, fmt.Errorf("building the RBAC index: %w", err)
	}
	sources := authz.Sources{RBAC: rbacIndex}
	var (
		nodeAuthz     *node.Authorizer
		nodePopulator *node.Populator
		closers       []func()
	)
	defer func() {
		if err != nil {
			for _, c := range closers {
				c()
			}
		}
	}()
	// The node graph watches every pod and reads the store's progress: only mode Node needs it.
	if slices.Contains(o.AuthorizationModes, authz.ModeNode) {
		etcdClient, err := newEtcdClient(in.etcdServers, o.EtcdCAFile, o.EtcdCertFile, o.EtcdKeyFile)
		if err != nil {
			return nil, err
		}
		closers = append(closers, func() { etcdClient.Close() })
		nodeAuthz, nodePopulator, err = nodeAuthorizer(etcdClient, cfg,
			informerFactory.Core().V1().Pods(), informerFactory.Core().V1().PersistentVolumes(), informerFactory.Storage().V1().VolumeAttachments())
		if err != nil {
			return nil, err
		}
		sources.Node = nodeAuthz
	}
	cfg.Authorization.Authorizer, cfg.RuleResolver, err = authz.New(o.AuthorizationModes, sources)
	if err != nil {
		return nil, err
	}

	namer := openapinamer.NewDefinitionNamer(ExternalScheme)
	cfg.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(generated.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIConfig.Info.Title, cfg.OpenAPIConfig.Info.Version = "idplane", version.String()
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(generated.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIV3Config.Info.Title, cfg.OpenAPIV3Config.Info.Version = "idplane", version.String()

	etcdOpts := genericoptions.NewEtcdOptions(storagebackend.NewDefaultConfig("/registry", nil))
	etcdOpts.StorageConfig.Transport.ServerList = in.etcdServers
	etcdOpts.StorageConfig.Transport.TrustedCAFile = o.EtcdCAFile
	etcdOpts.StorageConfig.Transport.CertFile = o.EtcdCertFile
	etcdOpts.StorageConfig.Transport.KeyFile = o.EtcdKeyFile
	etcdOpts.DefaultStorageMediaType = "application/vnd.kubernetes.protobuf"
	// No garbage collector runs: deletions are never held for orphaning or foreground cascades.
	etcdOpts.EnableGarbageCollection = false
	etcdOpts.EncryptionProviderConfigFilepath = in.encryptionConfig
	etcdOpts.EncryptionProviderConfigAutomaticReload = o.Encryption.AutomaticReload
	resourceConfig := serverstorage.NewResourceConfig()
	for _, g := range served {
		resourceConfig.EnableVersions(g.gv)
	}
	encoding := serverstorage.NewDefaultResourceEncodingConfig(Scheme)
	// The library would store ClusterTrustBundles as v1beta1 until v1 is old enough to roll back
	// to; idplane stores what it serves as preferred, and has no older release to roll back to.
	encoding.SetResourceEncoding(certificatesv1.Resource("clustertrustbundles"), certificatesv1.SchemeGroupVersion,
		schema.GroupVersion{Group: certificatesv1.GroupName, Version: runtime.APIVersionInternal})
	storageFactory := serverstorage.NewDefaultStorageFactory(etcdOpts.StorageConfig, etcdOpts.DefaultStorageMediaType,
		Codecs, encoding, resourceConfig, nil)
	// CRDs are never stored; JSON keeps the storage factory from asking for a protobuf codec.
	storageFactory.SetSerializer(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, "application/json", nil)
	// idplane's own types have no protobuf form.
	storageFactory.SetSerializer(windowsv1.Resource("gmsacredentialspecs"), "application/json", nil)
	if err := etcdOpts.ApplyWithStorageFactoryTo(storageFactory, cfg); err != nil {
		return nil, fmt.Errorf("configuring etcd storage: %w", err)
	}

	// idplane's own resources have no typed informers: GMSACredentialSpecs come from a dynamic one.
	dynamicInformers := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 10*time.Minute)
	ownInitializer := admission.Initializer{
		APIAudiences: in.tokens.audiences,
		GMSA:         gmsaadmission.Config{Specs: gmsaadmission.NewInformerCredSpecs(dynamicInformers, dyn), Options: o.GMSA},
	}
	if err := o.Admission.ApplyTo(cfg, informerFactory, client, dyn, cfg.FeatureGate, cfg.EffectiveVersion, ownInitializer); err != nil {
		return nil, fmt.Errorf("configuring admission: %w", err)
	}

	srv, err := cfg.Complete(informerFactory).New("idplane", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, fmt.Errorf("creating API server: %w", err)
	}
	replaceVersionRoute(srv.Handler.GoRestfulContainer)
	if nodeAuthz != nil {
		srv.Handler.NonGoRestfulMux.HandleFunc(nodePathURL, nodePathHandler(nodeAuthz))
	}
	if err := in.tokens.installDiscovery(srv, cfg.ExternalAddress); err != nil {
		return nil, err
	}
	err = installAPIs(srv, apiDeps{
		optsGetter: cfg.RESTOptionsGetter,
		authorizer: cfg.Authorization.Authorizer,
		rules:      cfg.RuleResolver,
		guard:      &escalation.Guard{Authorizer: cfg.Authorization.Authorizer, Rules: rbacIndex},
		authn:      cfg.Authentication.Authenticator,
		audiences:  in.tokens.audiences,
		tokens:     tokens.config,
	})
	if err != nil {
		return nil, err
	}
	err = srv.AddPostStartHook("start-dynamic-informers", func(ctx genericapiserver.PostStartHookContext) error {
		dynamicInformers.Start(ctx.Done())
		return nil
	})
	if err != nil {
		return nil, err
	}
	signers, err := loadClusterSigners(o, time.Now())
	if err != nil {
		return nil, err
	}
	apiServerNames, err := servingCertNames(in.servingCert)
	if err != nil {
		return nil, err
	}
	controllers := controllerContext{
		client: client, dyn: dyn, authorizer: cfg.Authorization.Authorizer,
		caPEM: in.caPEM, issuer: tokens.config.Issuer,
		signers: signers, signingDuration: o.ClusterSigningDuration,
		approveKubeletServing: o.ApproveKubeletServing, apiServerNames: apiServerNames,
	}
	var elector *leaderelection.Elector
	if le := o.LeaderElection; le.LeaderElect {
		elector, err = leaderelection.New(leaderelection.Config{
			Leases: client.CoordinationV1(), Namespace: le.ResourceNamespace, Name: le.ResourceName, Identity: in.identity,
			LeaseDuration: le.LeaseDuration.Duration, RenewDeadline: le.RenewDeadline.Duration, RetryPeriod: le.RetryPeriod.Duration,
			Lead: func(ctx context.Context) { runControllers(ctx, controllers) },
		})
		if err != nil {
			return nil, err
		}
	}
	if err := addControllers(srv, controllers, informerFactory, rbacIndex, nodePopulator, elector); err != nil {
		return nil, err
	}
	return &preparedServer{
		prepared: srv.PrepareRun(),
		closers:  closers,
	}, nil
}

type preparedServer struct {
	prepared interface{ RunWithContext(context.Context) error }
	// closers release, in order, what the server used once it has stopped serving.
	closers []func()
}

func (p *preparedServer) RunWithContext(ctx context.Context) error {
	err := p.prepared.RunWithContext(ctx)
	for _, c := range p.closers {
		c()
	}
	return err
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

func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating loopback token: %w", err)
	}
	return hex.EncodeToString(b), nil
}
