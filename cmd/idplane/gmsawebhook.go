package main

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/dynamic"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	logsapi "k8s.io/component-base/logs/api/v1"
	logsjson "k8s.io/component-base/logs/json"
	"k8s.io/klog/v2"

	"github.com/idplane/idplane/internal/gmsa/webhook"
	"github.com/idplane/idplane/internal/version"
)

func gmsaWebhookCommand() *cobra.Command {
	var (
		opts                       webhook.Options
		kubeconfig                 string
		qps                        float32
		burst                      int
		certFile, keyFile, address string
		port                       int
		shutdownDelay              time.Duration
	)
	cmd := &cobra.Command{
		Use:   "gmsa-webhook",
		Short: "Serve the GMSA expander and authorizer as admission webhooks for a Kubernetes cluster",
		Long: "Serve AdmissionReview v1 over HTTPS: /mutate fills the contents of the GMSA credential specs pods name, " +
			"/validate checks that the pod's service account may use them and that contents match; /health answers 200. " +
			"Logs are JSON lines on standard error. Manifests: deploy/gmsa-webhook/.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			flush, err := jsonLogs(cmd)
			if err != nil {
				return err
			}
			defer flush()
			ctx := genericapiserver.SetupSignalContext()

			cfg, err := clientConfig(kubeconfig)
			if err != nil {
				return err
			}
			cfg.QPS, cfg.Burst = qps, burst
			cfg.UserAgent = "idplane-gmsa-webhook/" + version.String()
			dyn, err := dynamic.NewForConfig(cfg)
			if err != nil {
				return fmt.Errorf("creating the dynamic client: %w", err)
			}
			authz, err := authorizationv1client.NewForConfig(cfg)
			if err != nil {
				return fmt.Errorf("creating the authorization client: %w", err)
			}
			h := webhook.NewHandler(webhook.ClusterCredSpecs(dyn), webhook.SubjectAccessReviews(authz), opts)
			srv, err := webhook.NewServer(h, certFile, keyFile)
			if err != nil {
				return err
			}
			srv.ShutdownDelay = shutdownDelay
			ln, err := net.Listen("tcp", net.JoinHostPort(address, strconv.Itoa(port)))
			if err != nil {
				return fmt.Errorf("listening: %w", err)
			}
			klog.InfoS("Serving GMSA admission webhooks", "version", version.String(), "address", ln.Addr().String(), "cluster", cfg.Host,
				"authorizeRequester", opts.AuthorizeRequester, "alphaAnnotations", opts.AlphaAnnotations, "randomHostname", opts.RandomHostname)
			return srv.Serve(ctx, ln)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to serve; empty: the in-cluster configuration of the pod")
	fs.Float32Var(&qps, "qps", 50, "queries per second to the cluster's API server (a review costs a GET per credential spec and a LocalSubjectAccessReview per spec and user)")
	fs.IntVar(&burst, "burst", 100, "burst of queries to the cluster's API server")
	fs.StringVar(&certFile, "tls-cert-file", "", "PEM serving certificate (with its chain), read again when it changes")
	fs.StringVar(&keyFile, "tls-private-key-file", "", "PEM private key of --tls-cert-file, read again when it changes")
	fs.StringVar(&address, "bind-address", "", "address to listen on; empty: every interface")
	fs.IntVar(&port, "port", 8443, "HTTPS port")
	fs.DurationVar(&shutdownDelay, "shutdown-delay", 0, "on SIGTERM, keep serving this long before closing, while the cluster stops routing to the pod")
	fs.BoolVar(&opts.AuthorizeRequester, "authorize-requester", false, "also require the user creating the pod to be allowed use of its credential specs")
	fs.BoolVar(&opts.AlphaAnnotations, "alpha-annotations", false, "handle the alpha annotations (pod.alpha.windows.kubernetes.io/gmsa-credential-spec-name, …) like the fields")
	fs.BoolVar(&opts.RandomHostname, "random-hostname", false, "give new pods that use a credential spec and set no spec.hostname a random 15-character hostname (NetBIOS limit)")
	for _, required := range []string{"tls-cert-file", "tls-private-key-file"} {
		if err := cmd.MarkFlagRequired(required); err != nil {
			panic(err)
		}
	}
	return cmd
}

// clientConfig is the kubeconfig's configuration, or the pod's in-cluster one without it.
func clientConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster configuration (outside a pod, pass --kubeconfig): %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
	}
	return cfg, nil
}

// jsonLogs sends klog, the webhook's and the Kubernetes libraries', as JSON lines to standard
// error (Kubernetes' JSON log format), at the verbosity of -v, which klog also checks first.
func jsonLogs(cmd *cobra.Command) (flush func(), err error) {
	v := 0
	if f := cmd.Flag("v"); f != nil {
		if v, err = strconv.Atoi(f.Value.String()); err != nil {
			return nil, fmt.Errorf("-v %q: %w", f.Value.String(), err)
		}
	}
	logger, control := logsjson.NewJSONLogger(logsapi.VerbosityLevel(v), zapcore.Lock(logsjson.AddNopSync(os.Stderr)), nil, nil)
	klog.SetLogger(logger)
	return func() {
		klog.Flush()
		control.Flush()
	}, nil
}
