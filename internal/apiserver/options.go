package apiserver

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/spf13/pflag"
	certificatesv1 "k8s.io/api/certificates/v1"
	genericoptions "k8s.io/apiserver/pkg/server/options"

	"github.com/idplane/idplane/internal/admission"
	"github.com/idplane/idplane/internal/admission/noderestriction"
	"github.com/idplane/idplane/internal/authz"
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
	Admission          *genericoptions.AdmissionOptions

	// ClusterSigningDuration caps the lifetime of certificates the built-in signers issue.
	ClusterSigningDuration time.Duration
	// ClusterSigningFiles are, per built-in signer flag prefix, the CA certificate and key files;
	// empty means the cluster CA in <data-dir>/pki.
	ClusterSigningFiles map[string]*SigningFiles
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
		ClusterSigningDuration: 365 * 24 * time.Hour,
		ClusterSigningFiles: func() map[string]*SigningFiles {
			m := map[string]*SigningFiles{}
			for _, s := range clusterSigners {
				m[s.flag] = &SigningFiles{}
			}
			return m
		}(),
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
	o.Admission.AddFlags(fs)
	fs.DurationVar(&o.ClusterSigningDuration, "cluster-signing-duration", o.ClusterSigningDuration, "Longest lifetime of a certificate the built-in kubernetes.io signers issue; a CSR's expirationSeconds can only shorten it.")
	for _, s := range clusterSigners {
		f := o.ClusterSigningFiles[s.flag]
		fs.StringVar(&f.CertFile, "cluster-signing-"+s.flag+"-cert-file", f.CertFile, "CA certificate signing for "+s.signer+" (default: the cluster CA). Read again when it changes.")
		fs.StringVar(&f.KeyFile, "cluster-signing-"+s.flag+"-key-file", f.KeyFile, "CA key signing for "+s.signer+" (default: the cluster CA's key).")
	}
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
	if o.ClusterSigningDuration <= 0 {
		errs = append(errs, fmt.Errorf("--cluster-signing-duration %v must be positive", o.ClusterSigningDuration))
	}
	for _, s := range clusterSigners {
		if f := o.ClusterSigningFiles[s.flag]; (f.CertFile == "") != (f.KeyFile == "") {
			errs = append(errs, fmt.Errorf("--cluster-signing-%s-cert-file and --cluster-signing-%s-key-file go together", s.flag, s.flag))
		}
	}
	return errors.Join(errs...)
}
