// Package jointoken issues the bootstrap tokens nodes join the cluster with (`idplane token
// create`): it stores a new random token as a bootstrap.kubernetes.io/token secret in
// kube-system, through an admin's client, and writes the bootstrap kubeconfig a node agent joins
// with; internal/authn/bootstraptoken authenticates the tokens. It also reads what idplane adds to
// such a secret beyond the bootstrap-token format: the one node a token may join (Binding).
package jointoken

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	"k8s.io/cluster-bootstrap/util/tokens"
	"k8s.io/utils/clock"

	"github.com/idplane/idplane/internal/pubkeypin"
)

// Description is what the secrets of the tokens this package creates say about themselves.
const Description = "Bootstrap token created by 'idplane token create'"

// attempts bounds the retries on a token id that is taken: ids are 6 random characters of 36.
const attempts = 5

// requestTimeout keeps an unreachable server from hanging the command.
const requestTimeout = 30 * time.Second

// Token is a stored bootstrap token.
type Token struct {
	ID, Secret string
	// Expiration is when it stops working; zero means never.
	Expiration time.Time
}

// String is the bearer token, <id>.<secret>.
func (t Token) String() string { return bootstraputil.TokenFromIDAndSecret(t.ID, t.Secret) }

// Data keys idplane adds to a bootstrap token secret; the bootstrap-token format ignores keys it
// does not know, so the token authenticates as any other. A data key may not contain '/', hence
// "idplane.io." rather than a label-style "idplane.io/" prefix.
const (
	// NodeNameKey names the one node whose client certificate the token may obtain.
	NodeNameKey = "idplane.io.node-name"
	// SingleUseKey "true" has the token deleted once a client certificate was issued with it.
	SingleUseKey = "idplane.io.single-use"
)

// Binding is what a token's secret says about the nodes it may join.
type Binding struct {
	// NodeName is the one node the token may get a client certificate for; "" means any node,
	// as upstream.
	NodeName string
	// SingleUse has the token deleted once a client certificate was issued with it.
	SingleUse bool
}

// Validate refuses a binding no token should carry: a node name that is not one, and single use
// without a node (the token could become any node first; see README).
func (b Binding) Validate() error {
	if b.NodeName != "" {
		if msgs := validation.IsDNS1123Subdomain(b.NodeName); len(msgs) > 0 {
			return fmt.Errorf("node name %q is not a valid node name: %s", b.NodeName, strings.Join(msgs, "; "))
		}
	}
	if b.SingleUse && b.NodeName == "" {
		return errors.New("a single-use token must be bound to a node: give its node name too")
	}
	return nil
}

// BindingOf reads the binding of a token secret. A secret whose idplane keys are malformed
// (a bad node name, single-use other than "true", single use without a node) is an error: its
// tokens are bound to something nobody can tell, and callers must not treat them as unbound.
func BindingOf(s *corev1.Secret) (Binding, error) {
	var b Binding
	if v, ok := s.Data[NodeNameKey]; ok {
		if len(v) == 0 {
			return Binding{}, fmt.Errorf("token secret %s/%s: %s is empty", s.Namespace, s.Name, NodeNameKey)
		}
		b.NodeName = string(v)
	}
	if v, ok := s.Data[SingleUseKey]; ok {
		if string(v) != "true" {
			return Binding{}, fmt.Errorf("token secret %s/%s: %s is %q, not \"true\"", s.Namespace, s.Name, SingleUseKey, v)
		}
		b.SingleUse = true
	}
	if err := b.Validate(); err != nil {
		return Binding{}, fmt.Errorf("token secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return b, nil
}

// Create stores a new random token that authenticates for ttl (0: for ever) and may sign
// cluster-info, as kubeadm's default tokens, with binding's keys.
func Create(ctx context.Context, client kubernetes.Interface, clk clock.PassiveClock, ttl time.Duration, binding Binding) (Token, error) {
	if ttl < 0 {
		return Token{}, fmt.Errorf("ttl %v is negative", ttl)
	}
	if err := binding.Validate(); err != nil {
		return Token{}, err
	}
	for range attempts {
		raw, err := bootstraputil.GenerateBootstrapToken()
		if err != nil {
			return Token{}, fmt.Errorf("generating a bootstrap token: %w", err)
		}
		id, secret, err := tokens.ParseToken(raw)
		if err != nil {
			return Token{}, fmt.Errorf("generating a bootstrap token: %w", err)
		}
		t := Token{ID: id, Secret: secret}
		if ttl > 0 {
			// Whole seconds: the stored RFC 3339 time has no fraction.
			t.Expiration = clk.Now().Add(ttl).UTC().Truncate(time.Second)
		}
		_, err = client.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, secretOf(t, binding), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return Token{}, fmt.Errorf("creating bootstrap token secret %s/%s: %w", metav1.NamespaceSystem, bootstraputil.BootstrapTokenSecretName(id), err)
		}
		return t, nil
	}
	return Token{}, fmt.Errorf("creating a bootstrap token secret: %d random token ids were all taken", attempts)
}

func secretOf(t Token, b Binding) *corev1.Secret {
	data := map[string][]byte{
		bootstrapapi.BootstrapTokenIDKey:               []byte(t.ID),
		bootstrapapi.BootstrapTokenSecretKey:           []byte(t.Secret),
		bootstrapapi.BootstrapTokenUsageAuthentication: []byte("true"),
		bootstrapapi.BootstrapTokenUsageSigningKey:     []byte("true"),
		bootstrapapi.BootstrapTokenDescriptionKey:      []byte(Description),
	}
	if !t.Expiration.IsZero() {
		data[bootstrapapi.BootstrapTokenExpirationKey] = []byte(t.Expiration.Format(time.RFC3339))
	}
	if b.NodeName != "" {
		data[NodeNameKey] = []byte(b.NodeName)
	}
	if b.SingleUse {
		data[SingleUseKey] = []byte("true")
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstraputil.BootstrapTokenSecretName(t.ID), Namespace: metav1.NamespaceSystem},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		Data:       data,
	}
}

// Cluster is the API server an agent joins: its URL and the CA that verifies it.
type Cluster struct {
	Server string
	CAPEM  []byte
}

// Kubeconfig returns a kubeconfig that reaches the cluster with the bearer token alone.
func Kubeconfig(c Cluster, t Token) ([]byte, error) {
	const cluster, user = "idplane", "tls-bootstrap-token-user"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[cluster] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthorityData: c.CAPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: t.String()}
	context := user + "@" + cluster
	cfg.Contexts[context] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: user}
	cfg.CurrentContext = context
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("encoding the bootstrap kubeconfig: %w", err)
	}
	return data, nil
}

// JoinCommand is the one line that joins a node with the token by discovery: the server, the
// token, and the hash of every CA certificate the cluster's CA bundle holds, so that the agent
// trusts no other; and the node's name when the token is bound to one.
func JoinCommand(c Cluster, t Token, b Binding) (string, error) {
	cas, err := certutil.ParseCertsPEM(c.CAPEM)
	if err != nil {
		return "", fmt.Errorf("the cluster's certificate authority: %w", err)
	}
	args := []string{"idplane", "agent", "--server", c.Server, "--token", t.String()}
	for _, ca := range cas {
		args = append(args, "--discovery-token-ca-cert-hash", pubkeypin.Hash(ca))
	}
	if b.NodeName != "" {
		args = append(args, "--node-name", b.NodeName)
	}
	return strings.Join(args, " ") + "\n", nil
}

// Request is one `idplane token create`.
type Request struct {
	// Admin reaches the server with the right to create secrets in kube-system: a kubeconfig
	// found as kubectl finds one (--kubeconfig, else $KUBECONFIG, else ~/.kube/config).
	Admin clientcmd.ClientConfig
	// TTL is how long the token authenticates; 0 means for ever.
	TTL time.Duration
	// Binding restricts the nodes the token may join.
	Binding Binding
	Clock   clock.PassiveClock
	// PrintJoinCommand has Issue return the agent's join command instead of a kubeconfig.
	PrintJoinCommand bool
}

// Issue creates a token through the admin kubeconfig and returns the bootstrap kubeconfig for it:
// the admin's server and CA, the new token as the user; or, with PrintJoinCommand, the agent
// command that joins with the token and the CA's hash.
func Issue(ctx context.Context, r Request) ([]byte, error) {
	if r.TTL < 0 {
		return nil, fmt.Errorf("ttl %v is negative", r.TTL)
	}
	if err := r.Binding.Validate(); err != nil {
		return nil, err
	}
	restConfig, cluster, err := loadAdmin(r.Admin)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("building a client from %s: %w", source(r.Admin), err)
	}
	if r.PrintJoinCommand {
		// Checked before the token exists: no token is left behind for a command never printed.
		if _, err := JoinCommand(cluster, Token{}, r.Binding); err != nil {
			return nil, err
		}
	}
	t, err := Create(ctx, client, r.Clock, r.TTL, r.Binding)
	if err != nil {
		return nil, err
	}
	if r.PrintJoinCommand {
		line, err := JoinCommand(cluster, t, r.Binding)
		return []byte(line), err
	}
	return Kubeconfig(cluster, t)
}

// loadAdmin reads the admin kubeconfig's current context: a client for it, and the cluster it
// names with its CA, which the bootstrap kubeconfig must carry for the agent to verify the server.
func loadAdmin(admin clientcmd.ClientConfig) (*rest.Config, Cluster, error) {
	restConfig, err := admin.ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		// clientcmd's own message points at KUBERNETES_MASTER, which nothing here reads.
		return nil, Cluster{}, fmt.Errorf("admin kubeconfig %s: no server to talk to (no such file, or no current context: --context picks one); "+
			"pass --kubeconfig or set KUBECONFIG (the server's is <data-dir>/admin.kubeconfig)", source(admin))
	}
	if err != nil {
		return nil, Cluster{}, fmt.Errorf("loading admin kubeconfig %s: %w", source(admin), err)
	}
	caPEM := restConfig.CAData
	if len(caPEM) == 0 && restConfig.CAFile != "" {
		if caPEM, err = os.ReadFile(restConfig.CAFile); err != nil {
			return nil, Cluster{}, fmt.Errorf("admin kubeconfig %s: reading its certificate authority: %w", source(admin), err)
		}
	}
	if len(caPEM) == 0 {
		return nil, Cluster{}, errors.New("admin kubeconfig " + source(admin) + " names no certificate authority for its server; an agent could not verify the server")
	}
	restConfig.Timeout = requestTimeout
	return restConfig, Cluster{Server: restConfig.Host, CAPEM: caPEM}, nil
}

// source names where a kubeconfig was looked for, for errors.
func source(c clientcmd.ClientConfig) string {
	access := c.ConfigAccess()
	if f := access.GetExplicitFile(); f != "" {
		return f
	}
	return strings.Join(access.GetLoadingPrecedence(), string(filepath.ListSeparator))
}
