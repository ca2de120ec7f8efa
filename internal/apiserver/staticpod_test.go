package apiserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"

	"github.com/idplane/idplane/internal/agent/staticpod"
)

const staticWeb = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: web
    image: registry.example/web:1
    env:
    - name: POD_NAME
      valueFrom:
        fieldRef:
          fieldPath: metadata.name
    volumeMounts:
    - name: config
      mountPath: /etc/web
    - name: cache
      mountPath: /cache
  volumes:
  - name: config
    hostPath:
      path: /etc/web
  - name: cache
    emptyDir: {}
  - name: labels
    downwardAPI:
      items:
      - path: labels
        fieldRef:
          fieldPath: metadata.labels
`

// A node's static pods reach the API as mirror pods written with the node's own credentials:
// the Node authorizer lets it list its pods and read its Node, NodeRestriction admits mirror pods
// that reference nothing, and the ServiceAccount plugin leaves them as the node wrote them.
func TestStaticPodsThroughTheServer(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	admin := s.client.CoreV1()
	node := nodeClient(t, s, "node1")
	self, err := node.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("node1 registering itself: %v", err)
	}

	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("web.yaml", staticWeb)
	write("etcd.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"etcd","namespace":"kube-system"},
		"spec":{"hostNetwork":true,"containers":[{"name":"etcd","image":"registry.example/etcd:3"}]}}`)
	write("sneaky.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: sneaky\nspec:\n  containers:\n  - name: c\n    image: app\n  volumes:\n  - name: s\n    secret:\n      secretName: db\n")

	// No NodeUID: the syncer reads its Node, as an agent that has just registered would.
	syncer := staticpod.NewSyncer(staticpod.Config{Dir: dir, NodeName: "node1"}, node, ktesting.NewLogger(t, ktesting.NewConfig()))
	if err := syncer.Sync(ctx); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	web, err := admin.Pods("default").Get(ctx, "web-node1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("mirror pod of web.yaml: %v", err)
	}
	hash := web.Annotations[staticpod.HashAnnotation]
	if web.Annotations[corev1.MirrorPodAnnotationKey] != hash || hash == "" || web.Annotations[staticpod.SourceAnnotation] != "file" {
		t.Errorf("annotations %v, want the mirror and config annotations", web.Annotations)
	}
	if owner := metav1.GetControllerOf(web); owner == nil || owner.Kind != "Node" || owner.UID != self.UID {
		t.Errorf("controller %+v, want Node node1 %s", owner, self.UID)
	}
	if web.UID == types.UID(hash) || web.UID == "" {
		t.Errorf("UID %q: the server gives a mirror pod its own UID", web.UID)
	}
	// The ServiceAccount plugin gives mirror pods no account and mounts no token: either would
	// be a reference NodeRestriction refuses.
	if web.Spec.ServiceAccountName != "" || len(web.Spec.Volumes) != 3 || len(web.Spec.Containers[0].VolumeMounts) != 2 {
		t.Errorf("service account %q, volumes %v, mounts %v: the mirror pod was changed", web.Spec.ServiceAccountName, web.Spec.Volumes, web.Spec.Containers[0].VolumeMounts)
	}
	if _, err := admin.Pods("kube-system").Get(ctx, "etcd-node1", metav1.GetOptions{}); err != nil {
		t.Errorf("mirror pod of etcd.json: %v", err)
	}
	if _, err := admin.Pods("default").Get(ctx, "sneaky-node1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("mirror pod of a manifest that uses a secret: got %v, want it never sent", err)
	}

	if err := syncer.Sync(ctx); err != nil {
		t.Fatalf("second sync: %v", err)
	}
	if again, err := admin.Pods("default").Get(ctx, "web-node1", metav1.GetOptions{}); err != nil || again.UID != web.UID {
		t.Errorf("unchanged manifest: pod %v err %v, want the same mirror pod kept", again.UID, err)
	}

	write("web.yaml", staticWeb+"  hostname: web\n")
	if err := syncer.Sync(ctx); err != nil {
		t.Fatalf("sync after a change: %v", err)
	}
	changed, err := admin.Pods("default").Get(ctx, "web-node1", metav1.GetOptions{})
	if err != nil || changed.UID == web.UID || changed.Annotations[staticpod.HashAnnotation] == hash || changed.Spec.Hostname != "web" {
		t.Errorf("changed manifest: pod %+v err %v, want a new mirror pod of the new version", changed, err)
	}

	if err := os.Remove(filepath.Join(dir, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := syncer.Sync(ctx); err != nil {
		t.Fatalf("sync after a removal: %v", err)
	}
	if _, err := admin.Pods("default").Get(ctx, "web-node1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("removed manifest: got %v, want its mirror pod gone at once", err)
	}

	// Belt and braces: a node that skipped the agent's check is refused by the server, by the
	// ServiceAccount plugin (which runs first, and refuses such mirror pods from anyone) or by
	// NodeRestriction.
	loaded, err := staticpod.Load(staticpod.Config{Dir: dir, NodeName: "node1", NodeUID: self.UID})
	if err != nil || len(loaded) == 0 || loaded[0].Pod == nil {
		t.Fatalf("Load: %v %+v", err, loaded)
	}
	for name, tc := range map[string]struct {
		mutate func(*corev1.Pod)
		says   string
	}{
		"a secret volume": {func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db"}}}}
		}, "a mirror pod may not reference secrets"},
		"a service account": {func(p *corev1.Pod) { p.Spec.ServiceAccountName = "default" }, "a mirror pod may not reference service accounts"},
		"a configmap variable": {func(p *corev1.Pod) {
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}}
		}, "can not create pods that reference"},
	} {
		pod := loaded[0].Pod.DeepCopy()
		pod.Name = "sneaky-node1"
		tc.mutate(pod)
		_, err := node.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("node1 creating a mirror pod with %s: got %v, want Forbidden saying %q", name, err, tc.says)
		}
	}
}
