package apiserver

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2/ktesting"

	"github.com/idplane/idplane/internal/agent"
)

// openWatches are the server's open watches of the resources a node reads objects through.
type openWatches struct{ objects, readables float64 }

func scrapeWatches(t *testing.T, s *testServer) openWatches {
	t.Helper()
	metric := scrapeMetrics(t, s)
	count := func(group, resource string) float64 {
		n, _ := metric("apiserver_longrunning_requests", map[string]string{"verb": "WATCH", "group": group, "resource": resource})
		return n
	}
	return openWatches{objects: count("", "secrets") + count("", "configmaps"), readables: count("node.idplane.io", "nodereadables")}
}

// TestAgentReadsThroughNodeReadables runs the real agent (agent.RunNode, as bench/nodesim does)
// as a node of a real server: it writes a pod's secret and configmap volumes from the node's one
// nodereadables watch, holds no watch of single objects, and rewrites the files when the objects
// change. A second node told to keep per-object watches, as a stock kubelet does, holds one per
// object and no bulk watch.
func TestAgentReadsThroughNodeReadables(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	ensureServiceAccount(t, s.client, "default", "default")
	// The leader's controllers open watches of their own (config maps among them) once their
	// term starts; the root CA publisher's config map in default says the term's informers run.
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := s.client.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the leader's controllers did not publish kube-root-ca.crt: %v", err)
	}
	before := scrapeWatches(t, s.testServer)

	// want are the watches beyond the server's own once the node runs, with the nodes before it.
	nodes := []*agentNode{
		{name: "bulk-node", want: openWatches{objects: 0, readables: 1}},
		{name: "stock-node", perObject: true, want: openWatches{objects: 2, readables: 1}},
	}
	for i, n := range nodes {
		suffix := n.name
		if _, err := s.client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "s-" + suffix}, Data: map[string][]byte{"key": []byte("secret-1")},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "cm-" + suffix}, Data: map[string]string{"key": "config-1"},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod, err := s.client.CoreV1().Pods("default").Create(ctx, newPod("p-"+suffix, onNode(n.name), func(p *corev1.Pod) {
			p.Spec.AutomountServiceAccountToken = ptr(false)
			p.Spec.Volumes = []corev1.Volume{
				{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s-" + suffix}}},
				{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-" + suffix}}}},
			}
		}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.pod, n.root = pod, t.TempDir()

		_, logCtx := ktesting.NewTestContext(t)
		agentCtx, stop := context.WithCancel(logCtx)
		done := make(chan error, 1)
		go func() {
			done <- agent.RunNode(agentCtx, agent.Node{
				RESTConfig: s.userConfig(t, "system:node:"+n.name, "system:nodes"), NodeName: n.name,
				RootDir: n.root, Hostname: n.name, Addresses: []net.IP{net.IPv4(192, 0, 2, byte(30+i))},
				PerObjectWatches: n.perObject,
			})
		}()
		t.Cleanup(func() {
			stop()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("agent of %s: %v", n.name, err)
			}
		})
		n.waitForFile(t, "s", "secret-1")
		n.waitForFile(t, "cm", "config-1")
		// The server's own informers watch secrets and configmaps too: the count before the
		// agents started holds them.
		got := scrapeWatches(t, s.testServer)
		got.objects -= before.objects
		got.readables -= before.readables
		if got != n.want {
			t.Errorf("with %s running, the agents' open watches: %+v, want %+v", n.name, got, n.want)
		}
	}

	for _, n := range nodes {
		// The agent rewrites the files when the objects change.
		if _, err := s.client.CoreV1().Secrets("default").Update(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "s-" + n.name}, Data: map[string][]byte{"key": []byte("secret-2")},
		}, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.client.CoreV1().ConfigMaps("default").Update(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "cm-" + n.name}, Data: map[string]string{"key": "config-2"},
		}, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		n.waitForFile(t, "s", "secret-2")
		n.waitForFile(t, "cm", "config-2")
	}

	// A pod that arrives while the bulk node runs brings a new path: the stream adds its secret,
	// and the node still holds its one watch.
	bulk := nodes[0]
	if _, err := s.client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s-later"}, Data: map[string][]byte{"key": []byte("later")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	later, err := s.client.CoreV1().Pods("default").Create(ctx, newPod("p-later", onNode(bulk.name), func(p *corev1.Pod) {
		p.Spec.AutomountServiceAccountToken = ptr(false)
		p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s-later"}}}}
	}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	(&agentNode{name: bulk.name, root: bulk.root, pod: later}).waitForFile(t, "s", "later")
	got := scrapeWatches(t, s.testServer)
	got.objects -= before.objects
	got.readables -= before.readables
	if want := nodes[len(nodes)-1].want; got != want {
		t.Errorf("after a new pod, the agents' open watches: %+v, want %+v", got, want)
	}
}

type agentNode struct {
	name      string
	perObject bool
	want      openWatches
	root      string
	pod       *corev1.Pod
}

// waitForFile waits for the agent to write want as the file "key" of one of its pod's volumes.
func (n *agentNode) waitForFile(t *testing.T, volume, want string) {
	t.Helper()
	path := filepath.Join(n.root, "pods", string(n.pod.UID), "volumes", volume, "key")
	var got string
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		b, err := os.ReadFile(path)
		got = string(b)
		return err == nil && got == want, nil
	})
	if err != nil {
		t.Fatalf("node %s: %s holds %q, want %q", n.name, path, got, want)
	}
}
