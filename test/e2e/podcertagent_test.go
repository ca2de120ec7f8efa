package e2e

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/spiffetls/tlsconfig"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
)

// meshPod is a pod on node-p with a SPIFFE credential bundle (ECDSA P-256), a client-pod key
// and chain (Ed25519) and the SPIFFE trust bundle in one projected volume, then a config map.
func meshPod(name, serviceAccount string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: mesh}
spec:
  nodeName: node-p
  serviceAccountName: %s
  securityContext: {runAsUser: 1000}
  containers: [{name: app, image: busybox}]
  volumes:
  - name: identity
    projected:
      sources:
      - podCertificate: {signerName: idplane.io/spiffe, keyType: ECDSAP256, credentialBundlePath: svid.pem}
      - podCertificate: {signerName: kubernetes.io/kube-apiserver-client-pod, keyType: ED25519, keyPath: api/key.pem, certificateChainPath: api/chain.pem}
      - clusterTrustBundle: {signerName: idplane.io/spiffe, labelSelector: {}, path: spiffe-bundle.pem}
  - name: settings
    configMap: {name: settings}
`, name, serviceAccount)
}

// TestAgentProjectsPodCertificates: an agent writes two pods' podCertificate sources; the SPIFFE
// leaves verify (by go-spiffe) against the projected trust bundle with their service accounts'
// IDs, and the two pods' files complete mutual TLS; the client-pod certificate makes kubectl
// auth whoami say the service account; another node can neither request a certificate for the
// pods nor list requests beyond its own; a 30-minute certificate is refused; a restarted agent
// requests nothing.
func TestAgentProjectsPodCertificates(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	a := startAgent(t, s, "node-p")
	s.kubectl(t, "create", "namespace", "mesh")
	s.ensureServiceAccount(t, "mesh", "web")
	s.ensureServiceAccount(t, "mesh", "api")
	s.kubectl(t, "create", "configmap", "settings", "-n", "mesh", "--from-literal=mode=one")
	eventually(t, 60*time.Second, func() error {
		_, err := s.kubectlErr("get", "node", "node-p")
		return err
	})
	s.kubectl(t, "create", "-f", manifest(t, meshPod("server", "api")+"---\n"+meshPod("client", "web")))

	volume := func(pod string) string {
		t.Helper()
		uid := s.kubectl(t, "get", "pod", pod, "-n", "mesh", "-o", "jsonpath={.metadata.uid}")
		return filepath.Join(a.podDir(uid), "volumes", "identity")
	}
	for _, pod := range []string{"server", "client"} {
		eventually(t, 60*time.Second, func() error {
			out := s.kubectl(t, "get", "pod", pod, "-n", "mesh", "-o", `jsonpath={.status.conditions[?(@.type=="CredentialsReady")].status} {.status.conditions[?(@.type=="CredentialsReady")].message}`)
			if !strings.HasPrefix(out, "True") {
				return fmt.Errorf("pod %s CredentialsReady: %q", pod, out)
			}
			return nil
		})
	}
	td := spiffeid.RequireTrustDomainFromString("cluster.local")
	svid := func(pod, serviceAccount string) (*x509svid.SVID, *x509bundle.Bundle) {
		t.Helper()
		dir := volume(pod)
		data, err := os.ReadFile(filepath.Join(dir, "svid.pem"))
		if err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(filepath.Join(dir, "svid.pem")); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: credential bundle mode %v (%v), want 0600 (one runAsUser)", pod, fi.Mode(), err)
		}
		if key, _ := pem.Decode(data); key == nil || key.Type != "PRIVATE KEY" {
			t.Fatalf("%s: the credential bundle does not start with a PKCS#8 key", pod)
		}
		// The one file is both go-spiffe's certificate file and its key file, as the README shows.
		sv, err := x509svid.Load(filepath.Join(dir, "svid.pem"), filepath.Join(dir, "svid.pem"))
		if err != nil {
			t.Fatalf("%s: go-spiffe refuses the SVID: %v", pod, err)
		}
		bundlePEM, err := os.ReadFile(filepath.Join(dir, "spiffe-bundle.pem"))
		if err != nil {
			t.Fatal(err)
		}
		bundle, err := x509bundle.Parse(td, bundlePEM)
		if err != nil {
			t.Fatalf("%s: go-spiffe reading the projected trust bundle: %v", pod, err)
		}
		want := "spiffe://cluster.local/ns/mesh/sa/" + serviceAccount
		if id, _, err := x509svid.Verify(sv.Certificates, bundle); err != nil || id.String() != want {
			t.Fatalf("%s: SVID verifies as %v (%v), want %s", pod, id, err, want)
		}
		return sv, bundle
	}
	serverSVID, serverBundle := svid("server", "api")
	clientSVID, clientBundle := svid("client", "web")

	t.Run("mutual TLS between the pods' files", func(t *testing.T) {
		apiID := spiffeid.RequireFromString("spiffe://cluster.local/ns/mesh/sa/api")
		webID := spiffeid.RequireFromString("spiffe://cluster.local/ns/mesh/sa/web")
		ln, err := tls.Listen("tcp", "127.0.0.1:0", tlsconfig.MTLSServerConfig(serverSVID, serverBundle, tlsconfig.AuthorizeID(webID)))
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		seen := make(chan string, 1)
		go func() {
			conn, err := ln.Accept()
			if err != nil {
				seen <- err.Error()
				return
			}
			defer conn.Close()
			tc := conn.(*tls.Conn)
			if err := tc.Handshake(); err != nil {
				seen <- err.Error()
				return
			}
			id, err := x509svid.IDFromCert(tc.ConnectionState().PeerCertificates[0])
			if err != nil {
				seen <- err.Error()
				return
			}
			seen <- id.String()
			_, _ = tc.Write([]byte("ok"))
		}()
		conn, err := tls.Dial("tcp", ln.Addr().String(), tlsconfig.MTLSClientConfig(clientSVID, clientBundle, tlsconfig.AuthorizeID(apiID)))
		if err != nil {
			t.Fatalf("client handshake: %v", err)
		}
		defer conn.Close()
		serverID, err := x509svid.IDFromCert(conn.ConnectionState().PeerCertificates[0])
		if err != nil || serverID != apiID {
			t.Errorf("the client sees %v (%v), want %v", serverID, err, apiID)
		}
		if got := <-seen; got != webID.String() {
			t.Errorf("the server sees %q, want %v", got, webID)
		}
	})

	t.Run("the client-pod certificate authenticates as the service account", func(t *testing.T) {
		dir := volume("client")
		key, err := os.ReadFile(filepath.Join(dir, "api", "key.pem"))
		if err != nil {
			t.Fatal(err)
		}
		chain, err := os.ReadFile(filepath.Join(dir, "api", "chain.pem"))
		if err != nil {
			t.Fatal(err)
		}
		out, err := s.kubectlAs(s.clientKubeconfig(t, chain, key), "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
		if err != nil || out != "system:serviceaccount:mesh:web" {
			t.Fatalf("kubectl auth whoami with the pod's files: %q, %v", out, err)
		}
	})

	t.Run("another node", func(t *testing.T) {
		s.kubectl(t, "create", "-f", manifest(t, "apiVersion: v1\nkind: Node\nmetadata: {name: node-q}\n"))
		other := s.userKubeconfig(t, "system:node:node-q", "system:nodes")
		uid := func(args ...string) string {
			return s.kubectl(t, append([]string{"get"}, append(args, "-o", "jsonpath={.metadata.uid}")...)...)
		}
		for _, node := range []string{"node-p", "node-q"} {
			req := manifest(t, fmt.Sprintf(`apiVersion: certificates.k8s.io/v1
kind: PodCertificateRequest
metadata: {name: stolen-%s, namespace: mesh}
spec:
  signerName: idplane.io/spiffe
  podName: server
  podUID: %s
  serviceAccountName: api
  serviceAccountUID: %s
  nodeName: %s
  nodeUID: %s
  stubPKCS10Request: %s
`, node, uid("pod", "server", "-n", "mesh"), uid("serviceaccount", "api", "-n", "mesh"), node, uid("node", node), stubRequestBase64(t)))
			if out, err := s.kubectlAs(other, "create", "-f", req); err == nil || !strings.Contains(out, "Forbidden") {
				t.Errorf("node-q creating a request for a pod on node-p naming %s: %v\n%s", node, err, out)
			}
		}
		if out, err := s.kubectlAs(other, "get", "podcertificaterequests", "-A"); err == nil || !strings.Contains(out, "Forbidden") {
			t.Errorf("node-q listing every request: %v\n%s", err, out)
		}
		if out, err := s.kubectlAs(other, "get", "podcertificaterequests", "-A", "--field-selector", "spec.nodeName=node-q"); err != nil {
			t.Errorf("node-q listing its own requests: %v\n%s", err, out)
		}
	})

	t.Run("a 30-minute certificate is refused", func(t *testing.T) {
		refuseShortCertificate(t, s)
	})

	t.Run("a restarted agent requests nothing", func(t *testing.T) {
		count := func() int {
			out := s.kubectl(t, "get", "podcertificaterequests", "-n", "mesh", "-o", "name")
			return len(strings.Fields(out))
		}
		before := count()
		bundle, err := os.ReadFile(filepath.Join(volume("server"), "svid.pem"))
		if err != nil {
			t.Fatal(err)
		}
		a.stop(t)
		s.kubectl(t, "patch", "configmap", "settings", "-n", "mesh", "-p", `{"data":{"mode":"two"}}`)
		a.start(t)
		// The identity volume comes before settings in each pod: once both pods' new settings are
		// written, the restarted agent has been through their certificates.
		for _, pod := range []string{"server", "client"} {
			eventually(t, 60*time.Second, func() error {
				got, err := os.ReadFile(filepath.Join(filepath.Dir(volume(pod)), "settings", "mode"))
				if err != nil || string(got) != "two" {
					return fmt.Errorf("%s settings: %q, %v", pod, got, err)
				}
				return nil
			})
		}
		if after := count(); after != before {
			t.Errorf("%d requests after the agent restarted, %d before", after, before)
		}
		if got, err := os.ReadFile(filepath.Join(volume("server"), "svid.pem")); err != nil || string(got) != string(bundle) {
			t.Errorf("the restarted agent rewrote a certificate still valid (%v)", err)
		}
	})

	t.Run("a deleted pod's certificate stops authenticating and its keys go", func(t *testing.T) {
		dir := volume("client")
		uid := filepath.Base(filepath.Dir(filepath.Dir(dir)))
		key, err := os.ReadFile(filepath.Join(dir, "api", "key.pem"))
		if err != nil {
			t.Fatal(err)
		}
		chain, err := os.ReadFile(filepath.Join(dir, "api", "chain.pem"))
		if err != nil {
			t.Fatal(err)
		}
		kubeconfig := s.clientKubeconfig(t, chain, key)
		s.kubectl(t, "delete", "pod", "client", "-n", "mesh", "--wait=false")
		eventually(t, 30*time.Second, func() error {
			if out, err := s.kubectlAs(kubeconfig, "auth", "whoami"); err == nil || !strings.Contains(out, "Unauthorized") {
				return fmt.Errorf("kubectl auth whoami after the pod was deleted: %q, %v", out, err)
			}
			if _, err := os.Stat(filepath.Join(a.rootDir, "podcerts", uid)); !os.IsNotExist(err) {
				return fmt.Errorf("the agent keeps the deleted pod's keys: %v", err)
			}
			return nil
		})
	})
}

// stubRequestBase64 is a stub PKCS#10 request over a new key, base64 for a manifest.
func stubRequestBase64(t *testing.T) string {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(der)
}

// refuseShortCertificate: a signer writing a certificate that lives 30 minutes (under the
// API's hour) gets 422 naming status.certificateChain.
func refuseShortCertificate(t *testing.T, s *server) {
	key := newKey(t)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		t.Fatal(err)
	}
	s.kubectl(t, "create", "-f", manifest(t, fmt.Sprintf(`apiVersion: certificates.k8s.io/v1
kind: PodCertificateRequest
metadata: {name: short, namespace: mesh}
spec:
  signerName: example.com/mine
  podName: server
  podUID: pod-uid
  serviceAccountName: api
  serviceAccountUID: sa-uid
  nodeName: node-p
  nodeUID: node-uid
  stubPKCS10Request: %s
`, base64.StdEncoding.EncodeToString(der))))
	ca := newCA(t, "short-lived signer")
	notBefore := time.Now().Truncate(time.Second)
	tmpl := &x509.Certificate{SerialNumber: serialNumber(t), NotBefore: notBefore, NotAfter: notBefore.Add(30 * time.Minute),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	leaf, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	ts := func(d time.Duration) string { return notBefore.Add(d).UTC().Format(time.RFC3339) }
	status, err := json.Marshal(map[string]any{"status": map[string]any{
		"conditions":       []map[string]string{{"type": "Issued", "status": "True", "reason": "Issued", "message": "", "lastTransitionTime": ts(0)}},
		"certificateChain": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf})),
		"notBefore":        ts(0), "notAfter": ts(30 * time.Minute), "beginRefreshAt": ts(15 * time.Minute),
	}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.kubectlErr("patch", "podcertificaterequest", "short", "-n", "mesh", "--subresource=status", "--type=merge", "-p", string(status))
	if err == nil || !strings.Contains(out, "is invalid") || !strings.Contains(out, "status.certificateChain") || !strings.Contains(out, "1 hour") {
		t.Fatalf("a 30-minute certificate: %v\n%s", err, out)
	}
}
