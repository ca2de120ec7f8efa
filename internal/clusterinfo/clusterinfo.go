// Package clusterinfo is the kube-public/cluster-info ConfigMap as kubeadm and the bootstrap
// signer shape it: a kubeconfig naming the cluster's address and CA under "kubeconfig", and one
// detached JWS of that kubeconfig per bootstrap token allowed to sign (jws-kubeconfig-<token-id>).
// A joining node that holds a token checks the signature of its token before it believes the
// kubeconfig; the server publishes and signs it.
package clusterinfo

import (
	"crypto/x509"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/cluster-bootstrap/token/jws"
)

// Where the ConfigMap lives; the names are Kubernetes', which kubeadm join looks for.
const (
	Namespace = metav1.NamespacePublic
	Name      = bootstrapapi.ConfigMapClusterInfo
	// Path is the one URL anonymous clients may GET it at.
	Path = "/api/v1/namespaces/" + Namespace + "/configmaps/" + Name
)

// SignatureKey is the data key of the signature made with the token tokenID.
func SignatureKey(tokenID string) string { return bootstrapapi.JWSSignatureKeyPrefix + tokenID }

// Kubeconfig is what the ConfigMap publishes: the cluster's server and CA, no user and no
// context, with the cluster unnamed, as kubeadm writes it.
func Kubeconfig(server string, caPEM []byte) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[""] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("encoding the cluster-info kubeconfig: %w", err)
	}
	return data, nil
}

// Cluster is what a verified cluster-info says.
type Cluster struct {
	Server string
	CAPEM  []byte
	CAs    []*x509.Certificate
}

// ErrNotSigned is a cluster-info that has no signature by the token (yet: the signer may not
// have seen the token) or no kubeconfig. Any other Verify error is a cluster-info that is there
// and wrong.
var ErrNotSigned = errors.New("not signed")

// Verify checks that cm's kubeconfig is signed with the token id.secret and returns the cluster
// it names.
func Verify(cm *corev1.ConfigMap, tokenID, tokenSecret string) (Cluster, error) {
	kubeconfig, ok := cm.Data[bootstrapapi.KubeConfigKey]
	if !ok || kubeconfig == "" {
		return Cluster{}, fmt.Errorf("configmap %s/%s has no %s: %w", Namespace, Name, bootstrapapi.KubeConfigKey, ErrNotSigned)
	}
	sig, ok := cm.Data[SignatureKey(tokenID)]
	if !ok {
		return Cluster{}, fmt.Errorf("configmap %s/%s has no signature for token id %q (%s): %w", Namespace, Name, tokenID, SignatureKey(tokenID), ErrNotSigned)
	}
	if !jws.DetachedTokenIsValid(sig, kubeconfig, tokenID, tokenSecret) {
		return Cluster{}, fmt.Errorf("the signature %s of configmap %s/%s does not verify with the token: "+
			"its kubeconfig was not signed by a holder of this token's secret", SignatureKey(tokenID), Namespace, Name)
	}
	return Parse([]byte(kubeconfig))
}

// Parse reads the cluster a cluster-info kubeconfig names: that of its current context, else its
// only cluster.
func Parse(kubeconfig []byte) (Cluster, error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return Cluster{}, fmt.Errorf("parsing the cluster-info kubeconfig: %w", err)
	}
	var c *clientcmdapi.Cluster
	if ctx, ok := cfg.Contexts[cfg.CurrentContext]; ok {
		c = cfg.Clusters[ctx.Cluster]
	} else if len(cfg.Clusters) == 1 {
		for _, only := range cfg.Clusters {
			c = only
		}
	}
	if c == nil {
		return Cluster{}, fmt.Errorf("the cluster-info kubeconfig names %d clusters and no current context: which one is meant is unknown", len(cfg.Clusters))
	}
	if c.Server == "" {
		return Cluster{}, errors.New("the cluster-info kubeconfig names no server")
	}
	if len(c.CertificateAuthorityData) == 0 {
		return Cluster{}, errors.New("the cluster-info kubeconfig carries no certificate-authority-data")
	}
	cas, err := certutil.ParseCertsPEM(c.CertificateAuthorityData)
	if err != nil {
		return Cluster{}, fmt.Errorf("the cluster-info kubeconfig's certificate-authority-data: %w", err)
	}
	return Cluster{Server: c.Server, CAPEM: c.CertificateAuthorityData, CAs: cas}, nil
}
