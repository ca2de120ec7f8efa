package apiserver

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/idplane/idplane/internal/agent/credentials"
	"github.com/idplane/idplane/internal/agent/nodestatus"
)

const bootstrapToken = "abcdef.0123456789abcdef"

// agentServer is a server whose static token file holds a bootstrap credential, with the
// binding kubeadm creates so that bootstrappers may submit CSRs.
func agentServer(t *testing.T, configure func(*Options)) *testServer {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	line := bootstrapToken + `,system:bootstrap:abcdef,bootstrap-abcdef,"system:bootstrappers"` + "\n"
	if err := os.WriteFile(tokens, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startTestServer(t, t.TempDir(), func(o *Options) {
		o.TokenAuthFile = tokens
		if configure != nil {
			configure(o)
		}
	})
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "test:node-bootstrapper"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node-bootstrapper"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:bootstrappers"}},
	}
	if _, err := ts.client.RbacV1().ClusterRoleBindings().Create(context.Background(), binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// The agents retry on their injected clocks, which the tests do not advance while
	// bootstrapping: wait until the authorizer has seen the binding.
	eventually(t, "bootstrappers allowed to create CSRs", func() error {
		review, err := ts.client.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User: "system:bootstrap:abcdef", Groups: []string{"system:bootstrappers", "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Group: "certificates.k8s.io", Resource: "certificatesigningrequests"},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if !review.Status.Allowed {
			return fmt.Errorf("not yet: %s", review.Status.Reason)
		}
		return nil
	})
	return ts
}

// writeBootstrapKubeconfig writes a kubeconfig with the server's address and CA and the token.
func writeBootstrapKubeconfig(t *testing.T, ts *testServer) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: ts.config.Host, CertificateAuthorityData: ts.config.CAData}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: bootstrapToken}
	cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "x"
	path := filepath.Join(t.TempDir(), "bootstrap.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// whoami asks the server who a client configuration authenticates as.
func whoami(t *testing.T, cfg *rest.Config) authenticationv1.UserInfo {
	t.Helper()
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	review, err := client.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectReview: %v", err)
	}
	return review.Status.UserInfo
}

// csrsFor lists the CSRs of one signer, oldest first.
func csrsFor(t *testing.T, ts *testServer, signer string) []certificatesv1.CertificateSigningRequest {
	t.Helper()
	list, err := ts.client.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []certificatesv1.CertificateSigningRequest
	for _, csr := range list.Items {
		if csr.Spec.SignerName == signer {
			out = append(out, csr)
		}
	}
	slices.SortFunc(out, func(a, b certificatesv1.CertificateSigningRequest) int {
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	return out
}

func isNode(u authenticationv1.UserInfo, node string) bool {
	return u.Username == "system:node:"+node && slices.Contains(u.Groups, "system:nodes")
}

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func startIdentity(t *testing.T, cfg credentials.Config) *credentials.Identity {
	t.Helper()
	// The identity lives as long as its context: the test's, here.
	id, err := credentials.Start(t.Context(), cfg)
	if err != nil {
		t.Fatalf("starting the node identity: %v", err)
	}
	return id
}

// TestAgentTLSBootstrap: a node with only a bootstrap token gets a client certificate for
// system:node:N through a CSR the server auto-approves, keeps it in DIR/pki (owner-only files)
// behind DIR/kubeconfig, and reuses it on restart without a new CSR. Its serving CSR waits for
// an approver while the client identity works, and the certificate appears once approved.
func TestAgentTLSBootstrap(t *testing.T) {
	ts := agentServer(t, nil)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "agent")
	cfg := credentials.Config{
		RootDir:             dir,
		NodeName:            "node-a",
		BootstrapKubeconfig: writeBootstrapKubeconfig(t, ts),
		Hostname:            "node-a.example",
		Addresses:           []net.IP{net.ParseIP("192.0.2.10")},
		Clock:               clocktesting.NewFakeClock(time.Now()),
	}
	id := startIdentity(t, cfg)

	clientCSRs := csrsFor(t, ts, certificatesv1.KubeAPIServerClientKubeletSignerName)
	if len(clientCSRs) != 1 || clientCSRs[0].Spec.Username != "system:bootstrap:abcdef" {
		t.Fatalf("client CSRs %+v, want one by the bootstrap user", clientCSRs)
	}
	if got := clientCSRs[0].Spec.Usages; !slices.Equal(got, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}) {
		t.Errorf("client CSR usages %v", got)
	}
	if u := whoami(t, id.RESTConfig()); !isNode(u, "node-a") {
		t.Errorf("RESTConfig authenticates as %+v", u)
	}
	kubeconfig, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		t.Fatalf("loading DIR/kubeconfig: %v", err)
	}
	if u := whoami(t, kubeconfig); !isNode(u, "node-a") {
		t.Errorf("DIR/kubeconfig authenticates as %+v", u)
	}
	if kubeconfig.CertFile != filepath.Join(dir, "pki", "kubelet-client-current.pem") || kubeconfig.KeyFile != kubeconfig.CertFile {
		t.Errorf("DIR/kubeconfig names cert %q key %q, want the current pair file", kubeconfig.CertFile, kubeconfig.KeyFile)
	}
	if leaf := id.ClientCertificate().Leaf; leaf.PublicKeyAlgorithm != x509.ECDSA {
		t.Errorf("client key algorithm %v, want ECDSA", leaf.PublicKeyAlgorithm)
	}
	if m := fileMode(t, filepath.Join(dir, "pki")); m != 0o700 {
		t.Errorf("DIR/pki mode %v, want 0700", m)
	}
	for _, f := range []string{"kubeconfig", "pki/kubelet-client-current.pem"} {
		if m := fileMode(t, filepath.Join(dir, f)); m != 0o600 {
			t.Errorf("%s mode %v, want 0600", f, m)
		}
	}

	// The serving CSR waits: this server has no serving approver.
	var serving certificatesv1.CertificateSigningRequest
	eventually(t, "serving CSR submitted by the node", func() error {
		csrs := csrsFor(t, ts, certificatesv1.KubeletServingSignerName)
		if len(csrs) == 0 {
			return fmt.Errorf("none yet")
		}
		serving = csrs[0]
		return nil
	})
	if serving.Spec.Username != "system:node:node-a" || len(serving.Status.Conditions) != 0 {
		t.Fatalf("serving CSR by %q with conditions %+v, want a pending one by the node", serving.Spec.Username, serving.Status.Conditions)
	}
	if id.ServingCertificate() != nil {
		t.Fatal("a serving certificate before approval")
	}
	serving.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "TestApproved",
	}}
	if _, err := ts.client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, serving.Name, &serving, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "serving certificate issued", func() error {
		if id.ServingCertificate() == nil {
			return fmt.Errorf("none yet")
		}
		return nil
	})
	leaf := id.ServingCertificate().Leaf
	if leaf.Subject.CommonName != "system:node:node-a" || !slices.Equal(leaf.DNSNames, []string{"node-a.example"}) ||
		len(leaf.IPAddresses) != 1 || !leaf.IPAddresses[0].Equal(cfg.Addresses[0]) ||
		!slices.Equal(leaf.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		t.Errorf("serving certificate CN %q DNS %v IPs %v usages %v", leaf.Subject.CommonName, leaf.DNSNames, leaf.IPAddresses, leaf.ExtKeyUsage)
	}
	if m := fileMode(t, filepath.Join(dir, "pki", "kubelet-server-current.pem")); m != 0o600 {
		t.Errorf("serving pair mode %v, want 0600", m)
	}
	clientSerial := id.ClientCertificate().Leaf.SerialNumber
	id.Stop()

	// Restart without bootstrap credentials: DIR/kubeconfig is still good.
	cfg.BootstrapKubeconfig = ""
	again := startIdentity(t, cfg)
	defer again.Stop()
	if got := again.ClientCertificate().Leaf.SerialNumber; got.Cmp(clientSerial) != 0 {
		t.Errorf("restart uses certificate %v, want the stored %v", got, clientSerial)
	}
	if u := whoami(t, again.RESTConfig()); !isNode(u, "node-a") {
		t.Errorf("after restart RESTConfig authenticates as %+v", u)
	}
	if n := len(csrsFor(t, ts, certificatesv1.KubeAPIServerClientKubeletSignerName)); n != 1 {
		t.Errorf("%d client CSRs after restart, want still 1", n)
	}
	if again.ServingCertificate() == nil {
		t.Error("restart lost the serving certificate")
	}

	// Another node's directory is not reused, and without bootstrap credentials Start says so.
	other := cfg
	other.NodeName = "node-b"
	if _, err := credentials.Start(ctx, other); err == nil {
		t.Error("node-b started on node-a's credentials")
	}
}

// TestAgentClientCertificateRotation: when the injected clock passes 90 % of the client
// certificate's lifetime the agent renews it with a CSR authenticated by the certificate itself
// (auto-approved as selfnodeclient), and its client configuration moves to the new certificate.
func TestAgentClientCertificateRotation(t *testing.T) {
	ts := agentServer(t, func(o *Options) { o.ClusterSigningDuration = time.Hour })
	clk := clocktesting.NewFakeClock(time.Now())
	dir := filepath.Join(t.TempDir(), "agent")
	id := startIdentity(t, credentials.Config{
		RootDir:             dir,
		NodeName:            "node-r",
		BootstrapKubeconfig: writeBootstrapKubeconfig(t, ts),
		Clock:               clk,
	})
	defer id.Stop()
	first := id.ClientCertificate().Leaf
	lifetime := first.NotAfter.Sub(first.NotBefore)

	// Before 70 % nothing is due: the renewal waits on the clock.
	eventually(t, "renewal waiting on the clock", func() error {
		if !clk.HasWaiters() {
			return fmt.Errorf("no timer")
		}
		return nil
	})
	clk.SetTime(first.NotBefore.Add(lifetime * 69 / 100))
	if n := len(csrsFor(t, ts, certificatesv1.KubeAPIServerClientKubeletSignerName)); n != 1 {
		t.Fatalf("%d client CSRs before 70 %% of the lifetime, want 1", n)
	}

	clk.SetTime(first.NotBefore.Add(lifetime * 91 / 100))
	var renewed *x509.Certificate
	eventually(t, "client certificate renewed", func() error {
		if cur := id.ClientCertificate(); cur != nil && cur.Leaf.SerialNumber.Cmp(first.SerialNumber) != 0 {
			renewed = cur.Leaf
			return nil
		}
		return fmt.Errorf("still the first certificate")
	})
	// The renewed certificate is as far from its deadline as the clock is past it, so stop before
	// the agent renews again.
	id.Stop()

	csrs := csrsFor(t, ts, certificatesv1.KubeAPIServerClientKubeletSignerName)
	var issuedBy *certificatesv1.CertificateSigningRequest
	for i, csr := range csrs {
		if csr.Spec.Username == "system:bootstrap:abcdef" {
			continue
		}
		if csr.Spec.Username != "system:node:node-r" {
			t.Errorf("CSR %s by %q, want renewals by the node itself", csr.Name, csr.Spec.Username)
		}
		if cert, err := parseCertPEM(csr.Status.Certificate); err == nil && cert.SerialNumber.Cmp(renewed.SerialNumber) == 0 {
			issuedBy = &csrs[i]
		}
	}
	if issuedBy == nil {
		t.Fatalf("no CSR issued the renewed certificate among %d", len(csrs))
	}
	if c := issuedBy.Status.Conditions; len(c) == 0 || c[0].Type != certificatesv1.CertificateApproved || c[0].Reason != "AutoApproved" {
		t.Errorf("renewal CSR conditions %+v, want auto-approved", c)
	}
	// DIR/kubeconfig follows the renewal: it names the current pair by path.
	kubeconfig, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	pair, err := parseCertPEM(mustRead(t, kubeconfig.CertFile))
	if err != nil || pair.SerialNumber.Cmp(id.ClientCertificate().Leaf.SerialNumber) != 0 {
		t.Errorf("DIR/kubeconfig's certificate %v (%v), want the current one", pair, err)
	}
	if u := whoami(t, kubeconfig); !isNode(u, "node-r") {
		t.Errorf("after renewal DIR/kubeconfig authenticates as %+v", u)
	}
	if u := whoami(t, id.RESTConfig()); !isNode(u, "node-r") {
		t.Errorf("after renewal RESTConfig authenticates as %+v", u)
	}
}

func parseCertPEM(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestAgentNodeStatus: with its bootstrapped identity a node registers its Node (fresh, or an
// existing one an administrator created), and its status writes and Lease renewals pass the
// Node authorizer and NodeRestriction.
func TestAgentNodeStatus(t *testing.T) {
	ts := agentServer(t, nil)
	ctx := context.Background()
	bootstrap := writeBootstrapKubeconfig(t, ts)
	existing := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-e", Labels: map[string]string{"team": "blue", "kubernetes.io/os": "plan9"}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "dedicated", Value: "blue", Effect: corev1.TaintEffectNoSchedule}}},
	}
	if _, err := ts.client.CoreV1().Nodes().Create(ctx, existing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	for _, name := range []string{"node-s", "node-e"} {
		id := startIdentity(t, credentials.Config{
			RootDir: filepath.Join(t.TempDir(), name), NodeName: name, BootstrapKubeconfig: bootstrap,
			Clock: clocktesting.NewFakeClock(time.Now()),
		})
		t.Cleanup(id.Stop)
		client, err := kubernetes.NewForConfig(id.RESTConfig())
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- nodestatus.Run(runCtx, client, nodestatus.Config{
				NodeName: name, Hostname: name + ".example", OS: "linux", KubeletPort: 10250,
				Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.20"}},
				Clock:     clk,
				// The lease controller renews on the real clock: every 250 ms here.
				LeaseDuration: time.Second,
			})
		}()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("nodestatus.Run: %v", err)
			}
		})
	}
	// Two nodes, each with a status loop sleeping on the clock.
	settle := func() {
		eventually(t, "agents waiting on the clock", func() error {
			if n := clk.Waiters(); n != 2 {
				return fmt.Errorf("%d waiters", n)
			}
			return nil
		})
	}
	settle()

	for _, name := range []string{"node-s", "node-e"} {
		node, err := ts.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if node.Labels["kubernetes.io/hostname"] != name+".example" || node.Labels["kubernetes.io/os"] != "linux" {
			t.Errorf("%s labels %v", name, node.Labels)
		}
		var ready bool
		for _, c := range node.Status.Conditions {
			ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
		}
		if !ready || len(node.Status.Addresses) != 2 || node.Status.NodeInfo.KubeletVersion == "" || node.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
			t.Errorf("%s status %+v", name, node.Status)
		}
		var lease *coordinationv1.Lease
		eventually(t, "lease of "+name, func() error {
			lease, err = ts.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
			return err
		})
		if *lease.Spec.HolderIdentity != name || len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].UID != node.UID {
			t.Errorf("lease of %s: holder %q owners %+v", name, *lease.Spec.HolderIdentity, lease.OwnerReferences)
		}
	}
	node, _ := ts.client.CoreV1().Nodes().Get(ctx, "node-e", metav1.GetOptions{})
	if node.Labels["team"] != "blue" || len(node.Spec.Taints) != 1 {
		t.Errorf("existing node's labels %v taints %v, want the administrator's kept", node.Labels, node.Spec.Taints)
	}

	clk.Step(10 * time.Second)
	settle()
	eventually(t, "lease renewed", func() error {
		lease, err := ts.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "node-s", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !lease.Spec.RenewTime.Time.Equal(clk.Now()) {
			return fmt.Errorf("lease renewed at %v, want %v", lease.Spec.RenewTime, clk.Now())
		}
		return nil
	})
}
