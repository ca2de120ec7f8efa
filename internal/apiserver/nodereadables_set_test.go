package apiserver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	nodev1alpha1 "github.com/idplane/idplane/api/node/v1alpha1"
)

// podUsingEverything is a pod on node that reaches a secret or configmap through every kind of
// reference a pod has: volumes (secret, configmap, projected, inline CSI, a claim bound to a CSI
// volume whose secret is in another namespace), env and envFrom of containers and init
// containers, image pull secrets, and the service account volume's kube-root-ca.crt.
func podUsingEverything(name, node string) *corev1.Pod {
	secretKey := func(n string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: n}, Key: "k"}}
	}
	configMapKey := func(n string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: n}, Key: "k"}}
	}
	return newPod(name, onNode(node), withSecretVolume("vol-secret"), withConfigMapVolume("vol-cm"), func(p *corev1.Pod) {
		p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull-secret"}}
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "registry.example/init:1", Env: []corev1.EnvVar{{Name: "A", ValueFrom: secretKey("init-secret")}}}}
		c := &p.Spec.Containers[0]
		c.Env = []corev1.EnvVar{{Name: "B", ValueFrom: secretKey("env-secret")}, {Name: "C", ValueFrom: configMapKey("env-cm")}}
		c.EnvFrom = []corev1.EnvFromSource{
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "envfrom-secret"}}},
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "envfrom-cm"}}},
		}
		p.Spec.Volumes = append(p.Spec.Volumes,
			corev1.Volume{Name: "projected", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-secret"}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-cm"}}},
			}}}},
			corev1.Volume{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
				Driver: "csi.example.com", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi-secret"},
			}}},
			corev1.Volume{Name: "claim", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim"}}},
		)
	})
}

// TestNodeReadablesListExactlyWhatGetsAllow pins the set a node's list holds for a pod that uses
// secrets and configmaps every way a pod can, among decoys (unused objects, objects of the same
// names in another namespace, another node's pod's, the account's token secret): exactly the
// objects the pod uses, and, over every secret and configmap in the server, exactly those a
// plain GET as the node allows.
func TestNodeReadablesListExactlyWhatGetsAllow(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	admin := s.client.CoreV1()
	mustCreate(t, admin.Namespaces().Create, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}})
	ensureServiceAccount(t, s.client, "default", "default")
	ensureServiceAccount(t, s.client, "other", "default")
	used := []string{
		"default/secret.vol-secret", "default/secret.pull-secret", "default/secret.init-secret", "default/secret.env-secret",
		"default/secret.envfrom-secret", "default/secret.proj-secret", "default/secret.csi-secret", "kube-system/secret.pv-secret",
		"default/configmap.vol-cm", "default/configmap.env-cm", "default/configmap.envfrom-cm", "default/configmap.proj-cm",
		"default/configmap.kube-root-ca.crt",
	}
	for _, item := range used {
		namespace, name, _ := strings.Cut(item, "/")
		if n, ok := strings.CutPrefix(name, nodev1alpha1.SecretPrefix); ok {
			mustCreate(t, admin.Secrets(namespace).Create, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: n}, Data: map[string][]byte{"k": []byte("v")}})
			// The same name elsewhere is not the pod's.
			if namespace == "default" {
				mustCreate(t, admin.Secrets("other").Create, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: n}})
			}
		} else if n := strings.TrimPrefix(name, nodev1alpha1.ConfigMapPrefix); n != "kube-root-ca.crt" {
			mustCreate(t, admin.ConfigMaps(namespace).Create, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n}, Data: map[string]string{"k": "v"}})
			mustCreate(t, admin.ConfigMaps("other").Create, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
	}
	mustCreate(t, admin.Secrets("default").Create, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "unused"}})
	mustCreate(t, admin.ConfigMaps("default").Create, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unused"}})
	mustCreate(t, admin.Secrets("default").Create, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "node2-secret"}})
	mustCreate(t, admin.Secrets("default").Create, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "default-token", Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"}},
		Type:       corev1.SecretTypeServiceAccountToken,
	})
	mustCreate(t, admin.PersistentVolumes().Create, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			ClaimRef:    &corev1.ObjectReference{Namespace: "default", Name: "claim"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "csi.example.com", VolumeHandle: "h", NodePublishSecretRef: &corev1.SecretReference{Namespace: "kube-system", Name: "pv-secret"},
			}},
		},
	})
	mustCreate(t, admin.PersistentVolumeClaims("default").Create, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "claim"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeName: "pv",
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	})
	mustCreate(t, admin.Pods("default").Create, podUsingEverything("p", "node1"))
	mustCreate(t, admin.Pods("default").Create, newPod("q", onNode("node2"), withSecretVolume("node2-secret")))

	node1Config := s.userConfig(t, "system:node:node1", "system:nodes")
	node1, readables := kubernetes.NewForConfigOrDie(node1Config), newReadablesClient(t, node1Config)
	slices.Sort(used)
	var listed []string
	eventually(t, "node1 lists what its pod uses", func() error {
		l, err := readables.list(ctx, "", forNode("node1"))
		if err != nil {
			return err
		}
		listed = listed[:0]
		for _, it := range l.Items {
			listed = append(listed, it.Namespace+"/"+it.Name)
		}
		if !slices.Equal(listed, used) {
			return fmt.Errorf("lists %q, want %q", listed, used)
		}
		return nil
	})

	// Every secret and configmap in the server: a GET as node1 is allowed exactly for the listed.
	secrets, err := admin.Secrets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	configMaps, err := admin.ConfigMaps("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var all, allowed []string
	check := func(item string, err error) {
		all = append(all, item)
		switch {
		case err == nil:
			allowed = append(allowed, item)
		case !apierrors.IsForbidden(err):
			t.Errorf("GET %s as node1: %v", item, err)
		}
	}
	for _, o := range secrets.Items {
		_, err := node1.CoreV1().Secrets(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
		check(o.Namespace+"/"+nodev1alpha1.SecretPrefix+o.Name, err)
	}
	for _, o := range configMaps.Items {
		_, err := node1.CoreV1().ConfigMaps(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
		check(o.Namespace+"/"+nodev1alpha1.ConfigMapPrefix+o.Name, err)
	}
	slices.Sort(allowed)
	if !slices.Equal(allowed, listed) {
		t.Errorf("over the server's %d secrets and configmaps, GETs as node1 allow %q, the list shows %q", len(all), allowed, listed)
	}
	for _, decoy := range []string{"default/secret.unused", "default/configmap.unused", "default/secret.node2-secret", "default/secret.default-token", "other/secret.vol-secret"} {
		if !slices.Contains(all, decoy) {
			t.Errorf("decoy %s was not in the server", decoy)
		}
	}
}

// TestNodeReadablesListOptions: limit is served by ignoring it (every item, no continue, as the
// API allows a server to); a continue token and resourceVersionMatch=Exact are refused with 400
// naming the field.
func TestNodeReadablesListOptions(t *testing.T) {
	s := startRBACServer(t)
	ctx := context.Background()
	ensureServiceAccount(t, s.client, "default", "default")
	for _, n := range []string{"s0", "s1", "s2"} {
		mustCreate(t, s.client.CoreV1().Secrets("default").Create, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	mustCreate(t, s.client.CoreV1().Pods("default").Create, newPod("p", onNode("node1"), withSecretVolume("s0"), withSecretVolume("s1"), withSecretVolume("s2")))
	node1 := newReadablesClient(t, s.userConfig(t, "system:node:node1", "system:nodes"))
	want := []string{"configmap.kube-root-ca.crt", "secret.s0", "secret.s1", "secret.s2"}
	var position string
	eventually(t, "node1 lists its four items", func() error {
		l, err := node1.list(ctx, "", forNode("node1"))
		if err != nil {
			return err
		}
		if len(l.Items) != len(want) {
			return fmt.Errorf("%d items", len(l.Items))
		}
		position = l.ResourceVersion
		return nil
	})
	opts := forNode("node1")
	opts.Limit = 1
	l, err := node1.list(ctx, "", opts)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range l.Items {
		names = append(names, it.Name)
	}
	if !slices.Equal(names, want) || l.Continue != "" || l.RemainingItemCount != nil {
		t.Errorf("limit=1: items %q, continue %q, remaining %v; want every item and no continue", names, l.Continue, l.RemainingItemCount)
	}
	for _, tc := range []struct {
		name  string
		opts  func(*metav1.ListOptions)
		field string
		says  string
	}{
		{"a continue token", func(o *metav1.ListOptions) { o.Limit, o.Continue = 1, "abc" }, "continue",
			`continue: Invalid value: "abc": nodereadables are never paginated`},
		{"resourceVersionMatch=Exact", func(o *metav1.ListOptions) {
			o.ResourceVersion, o.ResourceVersionMatch = position, metav1.ResourceVersionMatchExact
		}, "resourceVersionMatch", `resourceVersionMatch: Unsupported value: "Exact": supported values: "NotOlderThan", ""`},
	} {
		opts := forNode("node1")
		tc.opts(&opts)
		_, err := node1.list(ctx, "", opts)
		var status apierrors.APIStatus
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: got %v, want 400 saying %q", tc.name, err, tc.says)
			continue
		}
		status = err.(apierrors.APIStatus)
		if d := status.Status().Details; d == nil || len(d.Causes) != 1 || d.Causes[0].Field != tc.field {
			t.Errorf("%s: details %+v, want one cause naming %s", tc.name, d, tc.field)
		}
	}
}
