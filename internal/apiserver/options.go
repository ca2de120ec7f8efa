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
	genericoptions "k8s.io/apiserver/pkg/server/options"

	"github.com/idplane/idplane/internal/admission"
	"github.com/idplane/idplane/internal/admission/noderestriction"
	"github.com/idplane/idplane/internal/authz"
	"github.com/idplane/idplane/internal/gmsa"
)

// Options are the settings of `idplane server`. The zero-flag defaults give a working control
// plane on 127.0.0.1:6443 with embedded etcd in ./idplane-data.
type Options struct {
	DataDir     string
	BindAddress net.IP
	// SecurePort 0 picks a free port; the admin kubeconfig names the real one.
	SecurePort int

	// EtcdServers, when set, replace the embedded etcd.
	EtcdServers  []string
	EtcdCAFile   string
	EtcdCertFile string
	EtcdKeyFile  string

	AuthorizationModes []string
	TokenAuthFile      string
	AnonymousAuth      bool
	// AuthenticationConfigFile is an AuthenticationConfiguration whose anonymous section may open
	// chosen paths (health, OIDC discovery) to anonymous requests.
	AuthenticationConfigFile string
	Admission                *genericoptions.AdmissionOptions

	ServiceAccounts ServiceAccountOptions
	// GMSA are the cluster admin's choices for the GMSA admission plugin.
	GMSA gmsa.Options

	// ClusterSigningDuration caps the lifetime of certificates the built-in signers issue.
	ClusterSigningDuration time.Duration
	// ClusterSigningFiles are, per built-in signer flag prefix, the CA certificate and key files;
	// empty means the cluster CA in <data-dir>/pki.
	ClusterSigningFiles map[string]*SigningFiles
	// ApproveKubeletServing lets the approver approve a node's own kubelet serving CSRs for the
	// names its Node object shows.
	ApproveKubeletServing bool

	Encryption EncryptionOptions
	Audit      AuditOptions
}

// ServiceAccountOptions are the service-account token settings.
type ServiceAccountOptions struct {
	// SigningKeyFile signs new tokens; empty means <data-dir>/pki/sa.key.
	SigningKeyFile string
	// KeyFiles hold further public keys whose tokens are still accepted, for key rotation.
	KeyFiles []string
	// Issuers: the first names new tokens, all are accepted. Empty means the server's own URL.
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
var clusterSigners = []struct{ flag, signer string }{
	{"kubelet-serving", certificatesv1.KubeletServingSignerName},
	{"kubelet-client", certificatesv1.KubeAPIServerClientKubeletSignerName},
	{"kube-apiserver-client", certificatesv1.KubeAPIServerClientSignerName},
	{"legacy-unknown", "kubernetes.io/legacy-unknown"},
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		DataDir:                "./idplane-data",
		BindAddress:            net.ParseIP("127.0.0.1"),
		SecurePort:             6443,
		AuthorizationModes:     append([]string(nil), authz.DefaultModes...),
		Admission:              admission.NewOptions(),
		ServiceAccounts:        ServiceAccountOptions{ExtendTokenExpiration: true},
		ClusterSigningDuration: 365 * 24 * time.Hour,
		ClusterSigningFiles: func() map[string]*SigningFiles {
			m := map[string]*SigningFiles{}
			for _, s := range clusterSigners {
				m[s.flag] = &SigningFiles{}
			}
			return m
		}(),
		Audit: NewAuditOptions(),
	}
}

// AddFlags registers the flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "Directory for the PKI, the admin kubeconfig and the embedded etcd.")
	fs.IPVar(&o.BindAddress, "bind-address", o.BindAddress, "Address to serve HTTPS on.")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "Port to serve HTTPS on; 0 picks a free port.")
	fs.StringSliceVar(&o.EtcdServers, "etcd-servers", o.EtcdServers, "External etcd endpoints (https://host:port,...). Empty runs an embedded etcd in <data-dir>/etcd.")
	fs.StringVar(&o.EtcdCAFile, "etcd-cafile", o.EtcdCAFile, "CA bundle verifying the external etcd servers.")
	fs.StringVar(&o.EtcdCertFile, "etcd-certfile", o.EtcdCertFile, "Client certificate for the external etcd.")
	fs.StringVar(&o.EtcdKeyFile, "etcd-keyfile", o.EtcdKeyFile, "Client key for the external etcd.")
	fs.StringSliceVar(&o.AuthorizationModes, "authorization-mode", o.AuthorizationModes, fmt.Sprintf("Ordered authorizers; the first to allow or deny decides (known: %v). Group system:masters is always allowed.", authz.Modes()))
	fs.StringVar(&o.TokenAuthFile, "token-auth-file", o.TokenAuthFile, "Static bearer tokens, CSV: token,user,uid,\"group1,group2\".")
	fs.BoolVar(&o.AnonymousAuth, "anonymous-auth", o.AnonymousAuth, "Treat requests without credentials as user system:anonymous instead of refusing them.")
	fs.StringVar(&o.AuthenticationConfigFile, "authentication-config", o.AuthenticationConfigFile, "AuthenticationConfiguration file (apiserver.config.k8s.io/v1); its anonymous section may allow anonymous requests on listed paths only. Excludes --anonymous-auth.")
	sa := &o.ServiceAccounts
	fs.StringVar(&sa.SigningKeyFile, "service-account-signing-key-file", sa.SigningKeyFile, "PEM private key (ECDSA or RSA) that signs service-account tokens (default <data-dir>/pki/sa.key, created at first start).")
	fs.StringArrayVar(&sa.KeyFiles, "service-account-key-file", sa.KeyFiles, "PEM file of public keys (or certificates) whose service-account tokens are still accepted, for key rotation. Repeatable.")
	fs.StringArrayVar(&sa.Issuers, "service-account-issuer", sa.Issuers, "Issuer of service-account tokens; the first names new tokens, every one given is accepted. Repeatable (default https://<bind-address>:<port>).")
	fs.StringSliceVar(&sa.APIAudiences, "api-audiences", sa.APIAudiences, "Audiences of the API: tokens must name one of them (default: the service-account issuers).")
	fs.DurationVar(&sa.MaxTokenExpiration, "service-account-max-token-expiration", sa.MaxTokenExpiration, "Longest lifetime of a requested service-account token; longer requests are shortened (0: no limit).")
	fs.BoolVar(&sa.ExtendTokenExpiration, "service-account-extend-token-expiration", sa.ExtendTokenExpiration, "Issue the tokens the ServiceAccount admission plugin requests for pods (3607 s) for a year, with a warnafter claim at the requested expiry.")
	fs.StringVar(&sa.JWKSURI, "service-account-jwks-uri", sa.JWKSURI, "URL of the key set published in OIDC discovery, when relying parties fetch it elsewhere than from this server (https).")
	fs.BoolVar(&o.GMSA.AuthorizeRequester, "gmsa-authorize-requester", o.GMSA.AuthorizeRequester, "GMSA admission also checks that the user creating a pod may use the GMSACredentialSpecs it names, not only the pod's service account.")
	fs.BoolVar(&o.GMSA.AlphaAnnotations, "gmsa-alpha-annotations", o.GMSA.AlphaAnnotations, "GMSA admission also expands and checks the alpha annotations (pod.alpha.windows.kubernetes.io/gmsa-credential-spec-name and friends), for clusters migrating from alpha.")
	o.Admission.AddFlags(fs)
	fs.DurationVar(&o.ClusterSigningDuration, "cluster-signing-duration", o.ClusterSigningDuration, "Longest lifetime of a certificate the built-in kubernetes.io signers issue; a CSR's expirationSeconds can only shorten it.")
	fs.BoolVar(&o.ApproveKubeletServing, "approve-kubelet-serving", o.ApproveKubeletServing, "Approve kubernetes.io/kubelet-serving CSRs that a node asks for itself (CN system:node:<name>, O system:nodes, usages digital signature[, key encipherment], server auth) when every DNS and IP name is among its Node's status.addresses or kubernetes.io/hostname label; others stay pending.")
	for _, s := range clusterSigners {
		f := o.ClusterSigningFiles[s.flag]
		fs.StringVar(&f.CertFile, "cluster-signing-"+s.flag+"-cert-file", f.CertFile, "CA certificate signing for "+s.signer+" (default: the cluster CA). Read again when it changes.")
		fs.StringVar(&f.KeyFile, "cluster-signing-"+s.flag+"-key-file", f.KeyFile, "CA key signing for "+s.signer+" (default: the cluster CA's key).")
	}
	o.Encryption.AddFlags(fs)
	o.Audit.AddFlags(fs)
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
	for _, iss := range o.ServiceAccounts.Issuers {
		if iss == "" || (strings.Contains(iss, ":") && !isURL(iss)) {
			errs = append(errs, fmt.Errorf("--service-account-issuer %q must be a URL or a string without colons", iss))
		}
	}
	if o.AnonymousAuth && o.AuthenticationConfigFile != "" {
		errs = append(errs, errors.New("--anonymous-auth and --authentication-config exclude each other: configure anonymous access in the file"))
	}
	if o.ClusterSigningDuration <= 0 {
		errs = append(errs, fmt.Errorf("--cluster-signing-duration %v must be positive", o.ClusterSigningDuration))
	}
	for _, s := range clusterSigners {
		if f := o.ClusterSigningFiles[s.flag]; (f.CertFile == "") != (f.KeyFile == "") {
			errs = append(errs, fmt.Errorf("--cluster-signing-%s-cert-file and --cluster-signing-%s-key-file go together", s.flag, s.flag))
		}
	}
	errs = append(errs, o.Encryption.Validate()...)
	errs = append(errs, o.Audit.Validate()...)
	return errors.Join(errs...)
}
