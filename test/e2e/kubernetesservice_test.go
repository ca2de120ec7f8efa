package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// serviceAccountDir is where rest.InClusterConfig reads a pod's token and CA.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// The kubernetes Service as stock kubectl sees it: cluster-info finds the control plane, the
// Service and its endpoints print with kubectl's columns, and no other Service can be made.
func TestKubernetesServiceWithKubectl(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	host := strings.TrimPrefix(s.URL, "https://")

	out := s.kubectl(t, "cluster-info")
	if !strings.Contains(out, "Kubernetes control plane is running at "+s.URL) {
		t.Errorf("kubectl cluster-info:\n%s", out)
	}
	out = s.kubectl(t, "get", "service", "kubernetes", "--no-headers")
	if f := strings.Fields(out); len(f) < 5 || f[1] != "ClusterIP" || f[2] != "10.0.0.1" || f[4] != "443/TCP" {
		t.Errorf("kubectl get service kubernetes: %q", out)
	}
	eventually(t, 10*time.Second, func() error {
		out := s.kubectl(t, "get", "endpointslices", "kubernetes", "-n", "default", "--no-headers")
		if f := strings.Fields(out); len(f) < 4 || f[1] != "IPv4" || f[3] != "127.0.0.1" || host != net.JoinHostPort("127.0.0.1", f[2]) {
			return fmt.Errorf("kubectl get endpointslices kubernetes: %q, want 127.0.0.1 on the port of %s", out, s.URL)
		}
		return nil
	})
	out, err := s.kubectlErr("create", "service", "clusterip", "web", "--tcp=80:8080")
	if err == nil || !strings.Contains(out, "idplane has no service proxy") {
		t.Errorf("kubectl create service: %v\n%s", err, out)
	}
}

// A pod's containers get the kubernetes Service's variables pointing at the server the agent
// reaches; with them and the pod's projected token and CA, rest.InClusterConfig's recipe reaches
// the server as the pod's service account.
func TestInClusterConfigFromTheAgent(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	a := startAgent(t, s, "node-k")
	s.kubectl(t, "create", "namespace", "incluster")
	s.ensureServiceAccount(t, "incluster", "reader")
	s.kubectl(t, "apply", "-f", manifest(t, `apiVersion: v1
kind: Pod
metadata: {name: client, namespace: incluster}
spec:
  nodeName: node-k
  serviceAccountName: reader
  containers: [{name: app, image: busybox}]
`))
	uid := s.kubectl(t, "get", "pod", "client", "-n", "incluster", "-o", "jsonpath={.metadata.uid}")

	var spec struct {
		Process struct{ Env []string }
		Mounts  []struct{ Destination, Source string }
	}
	eventually(t, 60*time.Second, func() error {
		data, err := os.ReadFile(filepath.Join(a.podDir(uid), "containers", "app", "config.json"))
		if err != nil {
			return err
		}
		return json.Unmarshal(data, &spec)
	})
	env := map[string]string{}
	for _, kv := range spec.Process.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(s.URL, "https://"))
	want := map[string]string{
		"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port, "KUBERNETES_SERVICE_PORT_HTTPS": port,
		"KUBERNETES_PORT":                        "tcp://" + net.JoinHostPort(host, port),
		"KUBERNETES_PORT_" + port + "_TCP":       "tcp://" + net.JoinHostPort(host, port),
		"KUBERNETES_PORT_" + port + "_TCP_PROTO": "tcp",
		"KUBERNETES_PORT_" + port + "_TCP_PORT":  port,
		"KUBERNETES_PORT_" + port + "_TCP_ADDR":  host,
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("container env %s=%q, want %q (env %v)", k, env[k], v, spec.Process.Env)
		}
	}
	if env["KUBERNETES_SERVICE_HOST"] == "10.0.0.1" {
		t.Error("containers were pointed at the ClusterIP, which nothing routes")
	}

	// The files the container sees at serviceAccountDir, on the node.
	var saDir string
	for _, m := range spec.Mounts {
		if m.Destination == serviceAccountDir {
			saDir = m.Source
		}
	}
	if saDir == "" {
		t.Fatalf("no mount at %s: %+v", serviceAccountDir, spec.Mounts)
	}
	eventually(t, 30*time.Second, func() error {
		_, err := os.Stat(filepath.Join(saDir, "token"))
		return err
	})
	// What rest.InClusterConfig builds, with its fixed paths read through the container's mount.
	cfg := &rest.Config{
		Host:            "https://" + net.JoinHostPort(env["KUBERNETES_SERVICE_HOST"], env["KUBERNETES_SERVICE_PORT"]),
		TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(saDir, "ca.crt")},
		BearerTokenFile: filepath.Join(saDir, "token"),
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	review, err := client.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the in-cluster client did not reach the server: %v", err)
	}
	if got := review.Status.UserInfo.Username; got != "system:serviceaccount:incluster:reader" {
		t.Errorf("the in-cluster client is %q, want the pod's service account", got)
	}
}

// testKilledReplicaLeavesEndpoints: a replica killed with -9 cannot take itself out of the
// kubernetes Service's endpoints; its Lease runs out 15 s after its last renewal and the next
// renewal of a survivor, at most 10 s later, drops it. The survivors stay listed.
func testKilledReplicaLeavesEndpoints(t *testing.T, killed *server, replicas []*server) {
	if killed == nil {
		t.Skip("no replica was killed")
	}
	gone := strings.TrimPrefix(killed.URL, "https://")
	var survivors []*server
	for _, r := range replicas {
		if r != killed {
			survivors = append(survivors, r)
		}
	}
	// The bound counts from the kill, which came before the previous subtest's waits.
	eventually(t, 25*time.Second+20*time.Second, func() error {
		//lint:ignore SA1019 v1 Endpoints are deprecated, not gone: the kubernetes Service's are served and kept as upstream keeps them.
		var ep corev1.Endpoints
		if err := json.Unmarshal([]byte(survivors[0].kubectl(t, "get", "endpoints", "kubernetes", "-n", "default", "-o", "json")), &ep); err != nil {
			return err
		}
		var listed []string
		for _, ss := range ep.Subsets {
			for _, a := range ss.Addresses {
				listed = append(listed, net.JoinHostPort(a.IP, strconv.Itoa(int(ss.Ports[0].Port))))
			}
		}
		out := strings.Join(listed, " ")
		if slices.Contains(listed, gone) {
			return fmt.Errorf("endpoints %q still list the killed replica %s", out, gone)
		}
		for _, r := range survivors {
			if !slices.Contains(listed, strings.TrimPrefix(r.URL, "https://")) {
				return fmt.Errorf("endpoints %q lack the survivor %s", out, r.URL)
			}
		}
		return nil
	})
}
