package apiserver

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"

	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/compatibility"

	generated "github.com/idplane/idplane/internal/generated/openapi"
	"github.com/idplane/idplane/internal/stackreserve"
	"github.com/idplane/idplane/internal/version"
)

// newServerConfig is the first assembly step: the library's server configuration with what
// every later step relies on (version, request handling, audit, serving certificate, loopback
// client, shutdown sequence, OpenAPI documents). The steps after it fill in their own parts.
func newServerConfig(o *Options, in buildInput) (*genericapiserver.Config, error) {
	cfg := genericapiserver.NewConfig(codecs)
	cfg.EffectiveVersion = compatibility.NewEffectiveVersionFromString(kubernetesVersion, "", "")
	cfg.FeatureGate = utilfeature.DefaultFeatureGate
	cfg.RequestTimeout = o.RequestTimeout
	cfg.BuildHandlerChainFunc = func(h http.Handler, c *genericapiserver.Config) http.Handler {
		return stackreserve.Handler(genericapiserver.DefaultBuildHandlerChain(withAnswerMargin(h), c))
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

	namer := openapinamer.NewDefinitionNamer(externalScheme)
	cfg.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(generated.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIConfig.Info.Title, cfg.OpenAPIConfig.Info.Version = "idplane", version.String()
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(generated.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIV3Config.Info.Title, cfg.OpenAPIV3Config.Info.Version = "idplane", version.String()
	return cfg, nil
}

func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating loopback token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// loopback is how the server's own parts (authentication, authorization, admission, controllers)
// reach its API: clients on the loopback connection and the informers they share.
type loopback struct {
	client    kubernetes.Interface
	dyn       dynamic.Interface
	informers informers.SharedInformerFactory
}

func newLoopback(config *rest.Config) (loopback, error) {
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return loopback{}, fmt.Errorf("building loopback client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		return loopback{}, fmt.Errorf("building loopback dynamic client: %w", err)
	}
	f := newInformerFactory(client)
	narrowSecretInformer(f)
	return loopback{client: client, dyn: dyn, informers: f}, nil
}

// newInformerFactory is how the server's parts get their informers: without managed fields,
// which none of them reads, and with pods slimmed to what their readers read (informerTransform).
func newInformerFactory(client kubernetes.Interface) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(client, 10*time.Minute, informers.WithTransform(informerTransform))
}
