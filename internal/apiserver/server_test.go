package apiserver

import (
	"context"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/idplane/idplane/internal/pki"
)

func newPod(name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func onNode(node string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Spec.NodeName = node } }

func TestSystemNamespacesExistAndDefaultIsImmortal(t *testing.T) {
	ts := startTestServer(t, t.TempDir(), nil)
	ctx := context.Background()
	for _, name := range systemNamespaces {
		ns, err := ts.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("namespace %s: %v", name, err)
		}
		if ns.Status.Phase != corev1.NamespaceActive {
			t.Errorf("namespace %s phase %q, want Active", name, ns.Status.Phase)
		}
	}
	for _, name := range []string{"default", "kube-system", "kube-public"} {
		err := ts.client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
		if !apierrors.IsForbidden(err) {
			t.Errorf("deleting %s: got %v, want Forbidden", name, err)
		}
	}
}

func TestNamespaceDeletionRemovesContent(t *testing.T) {
	ts := startTestServer(t, t.TempDir(), nil)
	ctx := context.Background()
	core := ts.client.CoreV1()
	if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.ConfigMaps("team").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.Secrets("team").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ensureServiceAccount(t, ts.client, "team", "default")
	if _, err := core.Pods("team").Create(ctx, newPod("p"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := core.Namespaces().Delete(ctx, "team", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := core.ConfigMaps("team").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsForbidden(err) {
		t.Fatalf("creating in a terminating namespace: got %v, want Forbidden", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := core.Namespaces().Get(ctx, "team", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		ns, _ := core.Namespaces().Get(ctx, "team", metav1.GetOptions{})
		t.Fatalf("namespace not deleted: %+v", ns)
	}
	if _, err := core.ConfigMaps("team").Get(ctx, "cm", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("configmap survived its namespace: %v", err)
	}
}

func TestFieldSelectors(t *testing.T) {
	ts := startTestServer(t, t.TempDir(), nil)
	ctx := context.Background()
	ensureServiceAccount(t, ts.client, "default", "default")
	pods := ts.client.CoreV1().Pods("default")
	for _, p := range []*corev1.Pod{newPod("a", onNode("n1")), newPod("b", onNode("n2")), newPod("c")} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	secrets := ts.client.CoreV1().Secrets("default")
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "opaque"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "basic"}, Type: corev1.SecretTypeBasicAuth, StringData: map[string]string{"username": "u"}},
	} {
		if _, err := secrets.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name     string
		list     func(string) ([]string, error)
		selector string
		want     []string
	}{
		{"pods by node", podNames(pods), "spec.nodeName=n1", []string{"a"}},
		{"unscheduled pods", podNames(pods), "spec.nodeName=", []string{"c"}},
		{"pods by phase", podNames(pods), "status.phase=Pending", []string{"a", "b", "c"}},
		{"pods by name", podNames(pods), "metadata.name=b", []string{"b"}},
		{"pods by negated node", podNames(pods), "spec.nodeName!=n1", []string{"b", "c"}},
		{"secrets by type", func(sel string) ([]string, error) {
			l, err := secrets.List(ctx, metav1.ListOptions{FieldSelector: sel})
			if err != nil {
				return nil, err
			}
			var names []string
			for _, s := range l.Items {
				names = append(names, s.Name)
			}
			return names, nil
		}, "type=kubernetes.io/basic-auth", []string{"basic"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.list(tc.selector)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("%s: got %v, want %v", tc.selector, got, tc.want)
			}
		})
	}
	_, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.image=x"})
	if !apierrors.IsBadRequest(err) {
		t.Errorf("unknown field label: got %v, want BadRequest", err)
	}
}

func podNames(pods interface {
	List(context.Context, metav1.ListOptions) (*corev1.PodList, error)
}) func(string) ([]string, error) {
	return func(sel string) ([]string, error) {
		l, err := pods.List(context.Background(), metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return nil, err
		}
		var names []string
		for _, p := range l.Items {
			names = append(names, p.Name)
		}
		return names, nil
	}
}

func TestValidationAndMalformedBodies(t *testing.T) {
	ts := startTestServer(t, t.TempDir(), nil)
	ctx := context.Background()
	dup := newPod("dup", func(p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "c", Image: "x"})
	})
	ensureServiceAccount(t, ts.client, "default", "default")
	_, err := ts.client.CoreV1().Pods("default").Create(ctx, dup, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("duplicate container: got %v, want Invalid", err)
	}
	status := err.(apierrors.APIStatus).Status()
	if status.Code != 422 || status.Details == nil || len(status.Details.Causes) == 0 || status.Details.Causes[0].Field != "spec.containers[1].name" {
		t.Errorf("duplicate container: status %+v, want 422 with cause at spec.containers[1].name", status)
	}

	_, err = ts.client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "Not_A_Name"}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("bad secret name: got %v, want Invalid", err)
	}

	raw := ts.client.CoreV1().RESTClient()
	for _, body := range []string{`{"kind":"Pod",`, `[]`, `{"apiVersion":"v1","kind":"Pod","spec":{"containers":"nope"}}`} {
		res := raw.Post().Namespace("default").Resource("pods").Body([]byte(body)).SetHeader("Content-Type", "application/json").Do(ctx)
		var code int
		res.StatusCode(&code)
		if code != 400 {
			t.Errorf("body %q: status %d (%v), want 400", body, code, res.Error())
		}
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "frozen"}, Data: map[string]string{"k": "v"}, Immutable: ptr(true)}
	if _, err := ts.client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = ts.client.CoreV1().ConfigMaps("default").Patch(ctx, "frozen", types.MergePatchType, []byte(`{"data":{"k":"changed"}}`), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("changing an immutable configmap: got %v, want Invalid", err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestPodSubresources(t *testing.T) {
	ts := startTestServer(t, t.TempDir(), nil)
	ctx := context.Background()
	ensureServiceAccount(t, ts.client, "default", "default")
	pods := ts.client.CoreV1().Pods("default")
	created, err := pods.Create(ctx, newPod("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Status.Phase != corev1.PodPending || created.Status.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("new pod status %+v, want Pending and BestEffort", created.Status)
	}
	if created.Spec.RestartPolicy != corev1.RestartPolicyAlways || created.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Errorf("pod defaults not applied: %+v", created.Spec)
	}

	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
	if err := pods.Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding: %v", err)
	}
	bound, err := pods.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if bound.Spec.NodeName != "n1" {
		t.Errorf("bound pod on %q, want n1", bound.Spec.NodeName)
	}
	binding.Target.Name = "n2"
	if err := pods.Bind(ctx, binding, metav1.CreateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("second binding: got %v, want Conflict", err)
	}

	bound.Status.Phase = corev1.PodRunning
	bound.Spec.NodeName = "elsewhere"
	updated, err := pods.UpdateStatus(ctx, bound, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("status update: %v", err)
	}
	if updated.Status.Phase != corev1.PodRunning || updated.Spec.NodeName != "n1" {
		t.Errorf("status update: phase %q node %q, want Running on n1", updated.Status.Phase, updated.Spec.NodeName)
	}

	updated.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Image: "busybox:1", ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}}}
	withDebug, err := pods.UpdateEphemeralContainers(ctx, "web", updated, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("adding an ephemeral container: %v", err)
	}
	if len(withDebug.Spec.EphemeralContainers) != 1 {
		t.Errorf("ephemeral containers %v, want one", withDebug.Spec.EphemeralContainers)
	}

	// A running pod on a node is deleted gracefully; its node would finish the deletion.
	if err := pods.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	terminating, err := pods.Get(ctx, "web", metav1.GetOptions{})
	if err != nil || terminating.DeletionTimestamp == nil {
		t.Fatalf("graceful delete: pod %v, err %v; want it present with a deletion timestamp", terminating, err)
	}
	if err := pods.Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after force delete: %v, want NotFound", err)
	}

	if _, err := pods.Create(ctx, newPod("evictme"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "evictme", Namespace: "default"}}
	if err := pods.EvictV1(ctx, eviction); err != nil {
		t.Fatalf("eviction: %v", err)
	}
	if _, err := pods.Get(ctx, "evictme", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("evicted pod still there: %v", err)
	}
}

func TestWatchAndPagination(t *testing.T) {
	ts := startTestServer(t, t.TempDir(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cms := ts.client.CoreV1().ConfigMaps("default")
	for i := range 5 {
		name := "cm-" + string(rune('a'+i))
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"even": boolString(i%2 == 0)}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	// Only the test's configmaps: the root CA publisher adds kube-root-ca.crt to the namespace.
	opts := metav1.ListOptions{Limit: 2, LabelSelector: "even"}
	pages := 0
	for {
		l, err := cms.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, cm := range l.Items {
			names = append(names, cm.Name)
		}
		if l.Continue == "" {
			break
		}
		opts.Continue = l.Continue
	}
	if pages != 3 || len(names) != 5 {
		t.Errorf("paginated list: %d pages, names %v; want 3 pages and 5 names", pages, names)
	}
	even, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "even=true"})
	if err != nil || len(even.Items) != 3 {
		t.Errorf("label selector: %v items, err %v; want 3", len(even.Items), err)
	}

	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, FieldSelector: "metadata.name=cm-b"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := cms.Patch(ctx, "cm-b", types.MergePatchType, []byte(`{"data":{"seen":"yes"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Patch(ctx, "cm-c", types.MergePatchType, []byte(`{"data":{"seen":"no"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		cm, ok := ev.Object.(*corev1.ConfigMap)
		if ev.Type != watch.Modified || !ok || cm.Name != "cm-b" || cm.Data["seen"] != "yes" {
			t.Errorf("watch event %s %#v, want MODIFIED cm-b", ev.Type, ev.Object)
		}
	case <-ctx.Done():
		t.Fatal("no watch event")
	}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func TestAuthentication(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("admintoken,token-admin,1,system:masters\nusertoken,token-user,2,devs\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startTestServer(t, dir, func(o *Options) { o.TokenAuthFile = tokens })
	ca, err := pki.EnsureCA(pki.Files{Dir: filepath.Join(dir, "pki")}, "unused", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	otherCA, err := pki.EnsureCA(pki.Files{Dir: t.TempDir()}, "other-ca", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	certClient := func(ca *pki.CA, user string, groups ...string) kubernetes.Interface {
		certPEM, keyPEM, err := pki.Issue(ca, pki.IssueRequest{CommonName: user, Organization: groups, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, Validity: time.Hour, Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		cfg := rest.AnonymousClientConfig(ts.config)
		cfg.CertData, cfg.KeyData = certPEM, keyPEM
		return kubernetes.NewForConfigOrDie(cfg)
	}
	tokenClient := func(token string) kubernetes.Interface {
		cfg := rest.AnonymousClientConfig(ts.config)
		cfg.BearerToken = token
		return kubernetes.NewForConfigOrDie(cfg)
	}
	cases := []struct {
		name   string
		client kubernetes.Interface
		check  func(error) bool
	}{
		{"admin certificate", certClient(ca, "alice", "system:masters"), func(err error) bool { return err == nil }},
		{"certificate outside system:masters", certClient(ca, "bob", "devs"), apierrors.IsForbidden},
		{"certificate from another CA", certClient(otherCA, "mallory", "system:masters"), apierrors.IsUnauthorized},
		{"static token in system:masters", tokenClient("admintoken"), func(err error) bool { return err == nil }},
		{"static token outside system:masters", tokenClient("usertoken"), apierrors.IsForbidden},
		{"unknown token", tokenClient("nope"), apierrors.IsUnauthorized},
		{"no credentials", kubernetes.NewForConfigOrDie(rest.AnonymousClientConfig(ts.config)), apierrors.IsUnauthorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.client.CoreV1().Secrets("default").List(context.Background(), metav1.ListOptions{})
			if !tc.check(err) {
				t.Errorf("listing secrets: got %v", err)
			}
		})
	}

	forbidden := certClient(ca, "bob", "devs")
	_, err = forbidden.CoreV1().Secrets("default").List(context.Background(), metav1.ListOptions{})
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != 403 || !strings.Contains(status.Status().Message, `User "bob"`) {
		t.Errorf("forbidden status %v, want 403 naming the user", err)
	}
}

func TestAnonymousAuth(t *testing.T) {
	ts := startTestServer(t, t.TempDir(), func(o *Options) { o.AnonymousAuth = true })
	anon := kubernetes.NewForConfigOrDie(rest.AnonymousClientConfig(ts.config))
	_, err := anon.CoreV1().Secrets("default").List(context.Background(), metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "system:anonymous") {
		t.Errorf("anonymous list: got %v, want Forbidden for system:anonymous", err)
	}
}

func TestRestartKeepsObjectsAndKeys(t *testing.T) {
	dir := t.TempDir()
	ts := startTestServer(t, dir, nil)
	ctx := context.Background()
	if _, err := ts.client.CoreV1().Secrets("kube-system").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "keep"}, StringData: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	caBefore, err := os.ReadFile(filepath.Join(dir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	ts.stop()

	again := startTestServer(t, dir, nil)
	s, err := again.client.CoreV1().Secrets("kube-system").Get(ctx, "keep", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("secret after restart: %v", err)
	}
	if string(s.Data["k"]) != "v" {
		t.Errorf("secret data after restart: %q", s.Data)
	}
	caAfter, err := os.ReadFile(filepath.Join(dir, "pki", "ca.crt"))
	if err != nil || string(caAfter) != string(caBefore) {
		t.Errorf("CA changed across restarts (err %v)", err)
	}
}
