package apiserver

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	clientleaderelection "k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	componentbaseconfig "k8s.io/component-base/config"
	componentbaseoptions "k8s.io/component-base/config/options"
	componentbasevalidation "k8s.io/component-base/config/validation"
	"k8s.io/utils/clock"

	"github.com/idplane/idplane/internal/admission"
	"github.com/idplane/idplane/internal/admission/noderestriction"
	"github.com/idplane/idplane/internal/authz"
	"github.com/idplane/idplane/internal/gmsa"
	"github.com/idplane/idplane/internal/snapshot"
)

// Options are the settings of `idplane server`. The zero-flag defaults give a working control
// plane on 127.0.0.1:6443 with embedded etcd in ./idplane-data.
type Options struct {
	// genericReviews answers review creates with the library's generic create handler instead of
	// internal/reviewserving; no flag sets it: tests compare the two paths with it.
	genericReviews bool

	DataDir     string
	BindAddress net.IP
	// SecurePort 0 picks a free port; the admin kubeconfig names the real one.
	SecurePort int
	// AdvertiseAddress is the address other members of the cluster reach this replica at: it is
	// listed in the default/kubernetes Endpoints. Unset means AdvertisedAddress's default.
	AdvertiseAddress net.IP
	// ServiceClusterIPRange is the CIDR whose first address is the kubernetes Service's ClusterIP.
	ServiceClusterIPRange string

	// EtcdServers, when set, replace the embedded etcd.
	EtcdServers  []string
	EtcdCAFile   string
	EtcdCertFile string
	EtcdKeyFile  string
	// RequestTimeout bounds every request that is not a watch or other long-running one: the
	// server answers 504 when it passes, also while etcd has lost quorum.
	RequestTimeout time.Duration

	AuthorizationModes []string
	TokenAuthFile      string
	AnonymousAuth      bool
	// AuthenticationConfigFile is an AuthenticationConfiguration: external JWT issuers, and an
	// anonymous section that may open chosen paths (health, OIDC discovery) to anonymous requests.
	AuthenticationConfigFile string
	Admission                *genericoptions.AdmissionOptions

	ServiceAccounts ServiceAccountOptions
	// GMSA are the cluster admin's choices for the GMSA admission plugin.
	GMSA gmsa.Options

	// ClusterSigningDuration caps the lifetime of certificates the built-in signers issue.
	ClusterSigningDuration time.Duration
	// ClusterSigningFiles are, per built-in signer flag prefix, the CA certificate and key files;
	// empty means the signer's own CA in <data-dir>/pki for a signer of server certificates, the
	// cluster CA for the others.
	ClusterSigningFiles map[string]*SigningFiles
	// ApproveKubeletServing lets the approver approve a node's own kubelet serving CSRs for the
	// names its Node object shows.
	ApproveKubeletServing bool
	// NodeLifecycle times how soon a silent node is marked Unknown and tainted unreachable.
	NodeLifecycle NodeLifecycleOptions
	// PodCertificates are the settings of the built-in pod certificate signers.
	PodCertificates PodCertificateOptions
	// Memory steers the Go runtime's garbage collector.
	Memory MemoryOptions

	// LeaderElection makes the controllers run on one replica at a time; off, they run at once.
	LeaderElection componentbaseconfig.LeaderElectionConfiguration
	Shutdown       ShutdownOptions
	// FlowControl limits the requests served at once (API Priority and Fairness).
	FlowControl FlowControlOptions

	Encryption EncryptionOptions
	Audit      AuditOptions
	// ClusterInfo shapes kube-public/cluster-info, what token-joining nodes read first.
	ClusterInfo ClusterInfoOptions

	// kubernetesServiceClock drives the kubernetes Service's Lease renewals; nil is the real
	// clock, tests set a fake one.
	kubernetesServiceClock clock.WithTicker
	// Snapshots are the leader's scheduled snapshots of etcd and the keys.
	Snapshots snapshot.ScheduleOptions
}

// ShutdownOptions shape the graceful stop on SIGTERM, as kube-apiserver's flags of the same names.
type ShutdownOptions struct {
	// DelayDuration keeps serving, with /readyz failing, so load balancers move away first.
	DelayDuration time.Duration
	// WatchTerminationGracePeriod bounds how long the stop waits for open watches, which are told
	// to end as soon as it begins; 0 leaves them to be cut when the connections close.
	WatchTerminationGracePeriod time.Duration
	// SendRetryAfter keeps the listener open until in-flight requests drained, answering new
	// ones 429 with Retry-After instead of refusing connections.
	SendRetryAfter bool
}

// ServiceAccountOptions are the service-account token settings.
type ServiceAccountOptions struct {
	// SigningKeyFile signs new tokens; empty means <data-dir>/pki/sa.key.
	SigningKeyFile string
	// KeyFiles hold further public keys whose tokens are still accepted, for key rotation.
	KeyFiles []string
	// Issuers: the first names new tokens, all are accepted. Empty means the one recorded in the data directory, else the server's own URL.
	Issuers []string
	// APIAudiences are the audiences the server identifies as; empty means the issuers.
	APIAudiences []string
	// MaxTokenExpiration, when set, shortens longer TokenRequests to it.
	MaxTokenExpiration time.Duration
	// ExtendTokenExpiration issues the admission plugin's pod tokens for a year, warning after the
	// requested hour.
	ExtendTokenExpiration bool
	// JWKSURI overrides where discovery says the key set is.
	JWKSURI string
	// SigningEndpoint is the unix socket of an external signer that signs tokens and publishes
	// their keys instead of the key files.
	SigningEndpoint string
}

// maxTokenExpiration is the longest lifetime a token's 32-bit times can express.
const maxTokenExpiration = (1 << 32) * time.Second

func isURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme != "" && u.Host != ""
}

// SigningFiles are one built-in signer's CA files.
type SigningFiles struct{ CertFile, KeyFile string }

// clusterSigners name the built-in signers by the prefix of their CA flags, as kube-controller-manager does.
// A signer with ownCA signs, unless its flags say otherwise, with a CA of its own
// (<data-dir>/pki/<flag>-ca.crt, created at first start) rather than the cluster CA: what it
// issues are server certificates, which must not verify as the API server to everyone who
// trusts the cluster CA.
var clusterSigners = []struct {
	flag, signer string
	ownCA        bool
}{
	{"kubelet-serving", certificatesv1.KubeletServingSignerName, true},
	{"kubelet-client", certificatesv1.KubeAPIServerClientKubeletSignerName, false},
	{"kube-apiserver-client", certificatesv1.KubeAPIServerClientSignerName, false},
	{"legacy-unknown", "kubernetes.io/legacy-unknown", false},
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		DataDir:                "./idplane-data",
		BindAddress:            net.ParseIP("127.0.0.1"),
		SecurePort:             6443,
		ServiceClusterIPRange:  defaultServiceClusterIPRange,
		RequestTimeout:         time.Minute,
		AuthorizationModes:     authz.DefaultModes(),
		Admission:              admission.NewOptions(),
		ServiceAccounts:        ServiceAccountOptions{ExtendTokenExpiration: true},
		ClusterSigningDuration: 365 * 24 * time.Hour,
		PodCertificates:        newPodCertificateOptions(),
		ClusterSigningFiles: func() map[string]*SigningFiles {
			m := map[string]*SigningFiles{}
			for _, s := range clusterSigners {
				m[s.flag] = &SigningFiles{}
			}
			return m
		}(),
		LeaderElection: componentbaseconfig.LeaderElectionConfiguration{
			LeaderElect:       true,
			LeaseDuration:     metav1.Duration{Duration: 15 * time.Second},
			RenewDeadline:     metav1.Duration{Duration: 10 * time.Second},
			RetryPeriod:       metav1.Duration{Duration: 2 * time.Second},
			ResourceLock:      resourcelock.LeasesResourceLock,
			ResourceNamespace: metav1.NamespaceSystem,
			ResourceName:      "idplane-controllers",
		},
		Shutdown: ShutdownOptions{WatchTerminationGracePeriod: 5 * time.Second},
		Audit:    NewAuditOptions(),

		// Nodes joining with a token read cluster-info before they hold any credential.
		ClusterInfo: ClusterInfoOptions{Anonymous: true},

		Snapshots: snapshot.NewScheduleOptions(),

		NodeLifecycle: defaultNodeLifecycleOptions(),

		FlowControl: defaultFlowControlOptions(),
	}
}

// AddFlags registers the flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "Directory for the PKI, the admin kubeconfig and the embedded etcd.")
	fs.IPVar(&o.BindAddress, "bind-address", o.BindAddress, "Address to serve HTTPS on.")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "Port to serve HTTPS on; 0 picks a free port.")
	fs.IPVar(&o.AdvertiseAddress, "advertise-address", o.AdvertiseAddress, "Address the rest of the cluster reaches this replica at: listed in the default/kubernetes Endpoints and covered by the serving certificate. It must be reachable from nodes and pods (default: --bind-address, or the host's primary address (that of the default route) when --bind-address is 0.0.0.0 or ::).")
	fs.StringVar(&o.ServiceClusterIPRange, "service-cluster-ip-range", o.ServiceClusterIPRange, "CIDR of Service cluster IPs; its first address is the ClusterIP of the default/kubernetes Service. idplane has no service proxy: nothing routes it, and the agent gives containers the server's own address instead.")
	fs.StringSliceVar(&o.EtcdServers, "etcd-servers", o.EtcdServers, "External etcd endpoints (https://host:port,...). Empty runs an embedded etcd in <data-dir>/etcd.")
	fs.StringVar(&o.EtcdCAFile, "etcd-cafile", o.EtcdCAFile, "CA bundle verifying the external etcd servers.")
	fs.StringVar(&o.EtcdCertFile, "etcd-certfile", o.EtcdCertFile, "Client certificate for the external etcd.")
	fs.StringVar(&o.EtcdKeyFile, "etcd-keyfile", o.EtcdKeyFile, "Client key for the external etcd.")
	fs.DurationVar(&o.RequestTimeout, "request-timeout", o.RequestTimeout, "Longest time a request other than a watch may take before the server answers 504 Timeout; also how long a stopping server waits for requests in flight.")
	fs.StringSliceVar(&o.AuthorizationModes, "authorization-mode", o.AuthorizationModes, fmt.Sprintf("Ordered authorizers; the first to allow or deny decides (known: %v). Group system:masters is always allowed.", authz.Modes()))
	fs.StringVar(&o.TokenAuthFile, "token-auth-file", o.TokenAuthFile, "Static bearer tokens, CSV: token,user,uid,\"group1,group2\".")
	fs.BoolVar(&o.AnonymousAuth, "anonymous-auth", o.AnonymousAuth, "Treat requests without credentials as user system:anonymous instead of refusing them.")
	fs.StringVar(&o.AuthenticationConfigFile, "authentication-config", o.AuthenticationConfigFile, "AuthenticationConfiguration file (apiserver.config.k8s.io/v1): JWT issuers whose tokens are accepted (with CEL claim mappings), and an anonymous section that may allow anonymous requests on listed paths only. Re-read when it changes (the anonymous section only at start). --anonymous-auth is refused with a file that has an anonymous section.")
	sa := &o.ServiceAccounts
	fs.StringVar(&sa.SigningKeyFile, "service-account-signing-key-file", sa.SigningKeyFile, "PEM private key (ECDSA or RSA) that signs service-account tokens (default <data-dir>/pki/sa.key, created at first start).")
	fs.StringArrayVar(&sa.KeyFiles, "service-account-key-file", sa.KeyFiles, "PEM file of public keys (or certificates) whose service-account tokens are still accepted, for key rotation. Repeatable.")
	fs.StringArrayVar(&sa.Issuers, "service-account-issuer", sa.Issuers, "Issuer of service-account tokens; the first names new tokens, every one given is accepted. Repeatable (default: https://<bind-address>:<port> of the first start, recorded in <data-dir>/pki/service-account-issuer so that restarts on another port keep tokens valid).")
	fs.StringSliceVar(&sa.APIAudiences, "api-audiences", sa.APIAudiences, "Audiences of the API: tokens must name one of them (default: the service-account issuers).")
	fs.DurationVar(&sa.MaxTokenExpiration, "service-account-max-token-expiration", sa.MaxTokenExpiration, "Longest lifetime of a requested service-account token; longer requests are shortened (0: no limit).")
	fs.BoolVar(&sa.ExtendTokenExpiration, "service-account-extend-token-expiration", sa.ExtendTokenExpiration, "Issue the tokens the ServiceAccount admission plugin requests for pods (3607 s) for a year, with a warnafter claim at the requested expiry.")
	fs.StringVar(&sa.SigningEndpoint, "service-account-signing-endpoint", sa.SigningEndpoint, signingEndpointHelp)
	fs.StringVar(&sa.JWKSURI, "service-account-jwks-uri", sa.JWKSURI, "URL of the key set published in OIDC discovery, when relying parties fetch it elsewhere than from this server (https).")
	fs.BoolVar(&o.GMSA.AuthorizeRequester, "gmsa-authorize-requester", o.GMSA.AuthorizeRequester, "GMSA admission also checks that the user creating a pod may use the GMSACredentialSpecs it names, not only the pod's service account.")
	fs.BoolVar(&o.GMSA.AlphaAnnotations, "gmsa-alpha-annotations", o.GMSA.AlphaAnnotations, "GMSA admission also expands and checks the alpha annotations (pod.alpha.windows.kubernetes.io/gmsa-credential-spec-name and friends), for clusters migrating from alpha.")
	o.Admission.AddFlags(fs)
	fs.DurationVar(&o.ClusterSigningDuration, "cluster-signing-duration", o.ClusterSigningDuration, "Longest lifetime of a certificate the built-in kubernetes.io signers issue; a CSR's expirationSeconds can only shorten it.")
	fs.BoolVar(&o.ApproveKubeletServing, "approve-kubelet-serving", o.ApproveKubeletServing, "Approve kubernetes.io/kubelet-serving CSRs that a node asks for itself (CN system:node:<name>, O system:nodes, usages digital signature[, key encipherment], server auth) when every DNS and IP name is among its Node's status.addresses or kubernetes.io/hostname label and is no one else's: never a loopback name or address, a wildcard, the API server's names (its serving certificate's, kubernetes.default.svc...) or a name another Node reports; others stay pending, the latter with a KubeletServingNameRefused event.")
	for _, s := range clusterSigners {
		f := o.ClusterSigningFiles[s.flag]
		defaultCert, defaultKey := "the cluster CA", "the cluster CA's key"
		if s.ownCA {
			defaultCert, defaultKey = "<data-dir>/pki/"+s.flag+"-ca.crt, created at first start", "<data-dir>/pki/"+s.flag+"-ca.key"
		}
		fs.StringVar(&f.CertFile, "cluster-signing-"+s.flag+"-cert-file", f.CertFile, "CA certificate signing for "+s.signer+" (default: "+defaultCert+"). Read again when it changes.")
		fs.StringVar(&f.KeyFile, "cluster-signing-"+s.flag+"-key-file", f.KeyFile, "CA key signing for "+s.signer+" (default: "+defaultKey+").")
	}
	o.PodCertificates.AddFlags(fs)
	o.NodeLifecycle.AddFlags(fs)
	o.Memory.AddFlags(fs)
	componentbaseoptions.BindLeaderElectionFlags(&o.LeaderElection, fs)
	fs.DurationVar(&o.Shutdown.DelayDuration, "shutdown-delay-duration", o.Shutdown.DelayDuration, "On SIGTERM, keep serving this long with /readyz failing before refusing new requests, so that load balancers stop sending them.")
	fs.DurationVar(&o.Shutdown.WatchTerminationGracePeriod, "shutdown-watch-termination-grace-period", o.Shutdown.WatchTerminationGracePeriod, "On SIGTERM, open watches are told to end and the stop waits for them up to this long (0: watches are cut when their connections close).")
	fs.BoolVar(&o.Shutdown.SendRetryAfter, "shutdown-send-retry-after", o.Shutdown.SendRetryAfter, "On SIGTERM, keep listening until in-flight requests drained and answer new requests 429 with Retry-After instead of refusing connections.")
	o.Encryption.AddFlags(fs)
	o.Audit.AddFlags(fs)
	o.ClusterInfo.AddFlags(fs)
	o.Snapshots.AddFlags(fs)
	o.FlowControl.AddFlags(fs)
}

// Validate reports every invalid setting.
func (o *Options) Validate() error {
	var errs []error
	if o.DataDir == "" {
		errs = append(errs, errors.New("--data-dir is required"))
	}
	if o.SecurePort < 0 || o.SecurePort > 65535 {
		errs = append(errs, fmt.Errorf("--secure-port %d is not in 0..65535", o.SecurePort))
	}
	if o.BindAddress == nil {
		errs = append(errs, errors.New("--bind-address is required"))
	}
	if len(o.EtcdServers) == 0 && (o.EtcdCAFile != "" || o.EtcdCertFile != "" || o.EtcdKeyFile != "") {
		errs = append(errs, errors.New("--etcd-cafile, --etcd-certfile and --etcd-keyfile need --etcd-servers"))
	}
	if (o.EtcdCertFile == "") != (o.EtcdKeyFile == "") {
		errs = append(errs, errors.New("--etcd-certfile and --etcd-keyfile go together"))
	}
	if o.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--request-timeout %v must be positive", o.RequestTimeout))
	}
	if err := authz.ValidateModes(o.AuthorizationModes); err != nil {
		errs = append(errs, err)
	}
	if slices.Contains(o.AuthorizationModes, authz.ModeNode) && !admission.Enabled(o.Admission, noderestriction.PluginName) {
		errs = append(errs, errors.New("--authorization-mode Node needs the NodeRestriction admission plugin: "+
			"without it a node could create a pod bound to itself that names any secret and then read that secret; "+
			"enable NodeRestriction or leave Node out of --authorization-mode"))
	}
	errs = append(errs, o.Admission.Validate()...)
	if d := o.ServiceAccounts.MaxTokenExpiration; d != 0 && (d < time.Hour || d > maxTokenExpiration) {
		errs = append(errs, fmt.Errorf("--service-account-max-token-expiration %v must be between 1h and 2^32 seconds", d))
	}
	errs = append(errs, o.ServiceAccounts.validateSigningEndpoint()...)
	for _, iss := range o.ServiceAccounts.Issuers {
		if iss == "" || (strings.Contains(iss, ":") && !isURL(iss)) {
			errs = append(errs, fmt.Errorf("--service-account-issuer %q must be a URL or a string without colons", iss))
		}
	}
	if o.ClusterSigningDuration <= 0 {
		errs = append(errs, fmt.Errorf("--cluster-signing-duration %v must be positive", o.ClusterSigningDuration))
	}
	for _, s := range clusterSigners {
		if f := o.ClusterSigningFiles[s.flag]; (f.CertFile == "") != (f.KeyFile == "") {
			errs = append(errs, fmt.Errorf("--cluster-signing-%s-cert-file and --cluster-signing-%s-key-file go together", s.flag, s.flag))
		}
	}
	errs = append(errs, o.PodCertificates.Validate()...)
	for _, err := range componentbasevalidation.ValidateLeaderElectionConfiguration(&o.LeaderElection, field.NewPath("leaderElection")) {
		errs = append(errs, err)
	}
	if le := o.LeaderElection; le.LeaderElect {
		if le.ResourceLock != resourcelock.LeasesResourceLock {
			errs = append(errs, fmt.Errorf("--leader-elect-resource-lock %q: only %q is supported", le.ResourceLock, resourcelock.LeasesResourceLock))
		}
		// client-go's own condition: a renewal attempt must fit in the renew deadline.
		if float64(le.RenewDeadline.Duration) <= clientleaderelection.JitterFactor*float64(le.RetryPeriod.Duration) {
			errs = append(errs, fmt.Errorf("--leader-elect-renew-deadline %v must be more than %v times --leader-elect-retry-period %v",
				le.RenewDeadline.Duration, clientleaderelection.JitterFactor, le.RetryPeriod.Duration))
		}
	}
	if o.Shutdown.DelayDuration < 0 || o.Shutdown.WatchTerminationGracePeriod < 0 {
		errs = append(errs, errors.New("--shutdown-delay-duration and --shutdown-watch-termination-grace-period must not be negative"))
	}
	if _, err := o.KubernetesServiceIP(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, o.NodeLifecycle.Validate()...)
	errs = append(errs, o.Memory.Validate()...)
	errs = append(errs, o.Encryption.Validate()...)
	errs = append(errs, o.Audit.Validate()...)
	errs = append(errs, o.ClusterInfo.Validate()...)
	errs = append(errs, o.Snapshots.Validate()...)
	errs = append(errs, o.FlowControl.Validate()...)
	return errors.Join(errs...)
}

// AdvertisedAddress is the address this replica publishes for the rest of the cluster: in the
// default/kubernetes Endpoints and the serving certificate. It is --advertise-address, else the
// bind address, else, for a bind address of 0.0.0.0 or ::, the host's primary address as
// kube-apiserver picks it (the address of the default route's interface).
func (o *Options) AdvertisedAddress() (net.IP, error) {
	if o.AdvertiseAddress != nil && !o.AdvertiseAddress.IsUnspecified() {
		return o.AdvertiseAddress, nil
	}
	// Unlike kube-apiserver, a loopback bind address is advertised as it is: nothing else
	// listens for this server on the host's other addresses.
	if o.BindAddress != nil && !o.BindAddress.IsUnspecified() {
		return o.BindAddress, nil
	}
	ip, err := utilnet.ResolveBindAddress(o.BindAddress)
	if err != nil {
		return nil, fmt.Errorf("choosing the address to advertise for --bind-address %s (set --advertise-address): %w", o.BindAddress, err)
	}
	return ip, nil
}

// KubernetesServiceIP is the ClusterIP of the default/kubernetes Service: the first address of
// --service-cluster-ip-range.
func (o *Options) KubernetesServiceIP() (net.IP, error) {
	return firstServiceIP(o.ServiceClusterIPRange)
}
