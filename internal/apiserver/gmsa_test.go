package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	gmsaadmission "github.com/idplane/idplane/internal/admission/gmsa"
)

// webapp1CredSpec is the design's example credential spec.
var webapp1CredSpec = map[string]any{
	"ActiveDirectoryConfig": map[string]any{"GroupManagedServiceAccounts": []any{
		map[string]any{"Name": "WebApplication1", "Scope": "CONTOSO"},
		map[string]any{"Name": "WebApplication1", "Scope": "contoso.com"},
	}},
	"CmsPlugins": []any{"ActiveDirectory"},
	"DomainJoinConfig": map[string]any{
		"DnsName": "contoso.com", "DnsTreeName": "contoso.com", "Guid": "244818ae-87ca-4fcd-92ec-e79e5252348a",
		"MachineAccountName": "WebApplication1", "NetBiosName": "CONTOSO", "Sid": "S-1-5-21-2126729477-2524075714-3094792973",
	},
}

// gmsaPod is a Windows pod running as account whose container names the credential spec.
func gmsaPod(name, account, spec string) *corev1.Pod {
	return newPod(name, func(p *corev1.Pod) {
		p.Spec.ServiceAccountName = account
		p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{GMSACredentialSpecName: ptr(spec)}}
	})
}

// TestGMSAUserStory runs the design's user story through the server: an admin creates a
// credential spec and lets one service account use it; a pod of that account naming the spec is
// expanded and admitted, the same pod with another account is refused.
// setUpWebapp1 creates the design's credential spec (and one nobody may use), a role to use it and
// its binding to service account webapp1, which exists with service account "other".
func setUpWebapp1(t *testing.T, s *testServer) {
	t.Helper()
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(s.config)
	for _, name := range []string{"webapp1-credspec", "unused-credspec"} {
		_, err := dyn.Resource(gmsaadmission.Resource).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "windows.k8s.io/v1", "kind": "GMSACredentialSpec",
			"metadata": map[string]any{"name": name},
			"credspec": webapp1CredSpec,
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating credential spec %s: %v", name, err)
		}
	}
	mustCreate(t, s.client.RbacV1().ClusterRoles().Create, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "webapp1-credspec-user"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"windows.k8s.io"}, Resources: []string{"gmsacredentialspecs"},
			Verbs: []string{"use"}, ResourceNames: []string{"webapp1-credspec"},
		}},
	})
	mustCreate(t, s.client.RbacV1().RoleBindings("default").Create, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "webapp1-credspec"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "webapp1-credspec-user"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "webapp1"}},
	})
	ensureServiceAccount(t, s.client, "default", "webapp1")
	ensureServiceAccount(t, s.client, "default", "other")
}

func TestGMSAUserStory(t *testing.T) {
	s := startTestServer(t, t.TempDir(), nil)
	ctx := context.Background()
	setUpWebapp1(t, s)
	pods := s.client.CoreV1().Pods("default")
	var err error

	var admitted *corev1.Pod
	eventually(t, "the pod of the allowed account is admitted", func() error {
		admitted, err = pods.Create(ctx, gmsaPod("iis", "webapp1", "webapp1-credspec"), metav1.CreateOptions{})
		return err
	})
	var got map[string]any
	contents := *admitted.Spec.Containers[0].SecurityContext.WindowsOptions.GMSACredentialSpec
	if err := json.Unmarshal([]byte(contents), &got); err != nil {
		t.Fatalf("expanded contents %q: %v", contents, err)
	}
	want, _ := json.Marshal(webapp1CredSpec)
	if have, _ := json.Marshal(got); string(have) != string(want) {
		t.Errorf("expanded contents = %s, want the spec's credspec %s", have, want)
	}

	_, err = pods.Create(ctx, gmsaPod("iis-other", "other", "webapp1-credspec"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "webapp1-credspec") || !strings.Contains(err.Error(), "system:serviceaccount:default:other") {
		t.Errorf("pod of another account: %v, want 403 naming the spec and the account", err)
	}
	_, err = pods.Create(ctx, gmsaPod("iis-unknown", "webapp1", "nope"), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("pod naming an unknown spec: %v, want 422 naming it", err)
	}
	forged := gmsaPod("iis-forged", "webapp1", "webapp1-credspec")
	forged.Spec.Containers[0].SecurityContext.WindowsOptions.GMSACredentialSpec = ptr(`{"CmsPlugins":["ActiveDirectory"]}`)
	if _, err := pods.Create(ctx, forged, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("pod with contents other than the spec's: %v, want 422", err)
	}

	// A debug container added later may not bring a spec the pod's account may not use.
	debug := admitted.DeepCopy()
	debug.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Image: "registry.example/debug:1", TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent,
		SecurityContext: &corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{GMSACredentialSpecName: ptr("unused-credspec")}},
	}}}
	_, err = pods.UpdateEphemeralContainers(ctx, "iis", debug, metav1.UpdateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "unused-credspec") {
		t.Errorf("debug container naming a spec the account may not use: %v, want 403", err)
	}
}

// TestGMSAAuthorizeRequester: with --gmsa-authorize-requester, the user creating the pod must be
// allowed to use the spec too, not only the pod's service account (the design's threat 2).
func TestGMSAAuthorizeRequester(t *testing.T) {
	s := startRBACServerWith(t, func(o *Options) { o.GMSA.AuthorizeRequester = true })
	setUpWebapp1(t, s.testServer)
	ctx := context.Background()
	mustCreate(t, s.client.RbacV1().RoleBindings("default").Create, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-edit"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}},
	})
	alice := s.user(t, "alice")
	var err error
	eventually(t, "alice is refused for the spec, not for the pod", func() error {
		_, err = alice.CoreV1().Pods("default").Create(ctx, gmsaPod("iis", "webapp1", "webapp1-credspec"), metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `"alice" may not use it`) {
			return fmt.Errorf("create as alice: %v", err)
		}
		return nil
	})
	mustCreate(t, s.client.RbacV1().RoleBindings("default").Create, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-webapp1-credspec"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "webapp1-credspec-user"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}},
	})
	eventually(t, "alice may create the pod once she may use the spec", func() error {
		_, err := alice.CoreV1().Pods("default").Create(ctx, gmsaPod("iis", "webapp1", "webapp1-credspec"), metav1.CreateOptions{})
		return err
	})
}

// TestGMSAAlphaAnnotationsOnEveryWrite checks, with --gmsa-alpha-annotations, that no write after
// a pod's creation adds the alpha annotations: not the status, which also writes labels and
// annotations, not a debug container write, not a binding, whose annotations go onto the pod.
func TestGMSAAlphaAnnotationsOnEveryWrite(t *testing.T) {
	s := startTestServer(t, t.TempDir(), func(o *Options) { o.GMSA.AlphaAnnotations = true })
	setUpWebapp1(t, s)
	ctx := context.Background()
	pods := s.client.CoreV1().Pods("default")
	mustCreate(t, pods.Create, newPod("iis", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "other" }))

	forged := `{"metadata":{"annotations":{"pod.alpha.windows.kubernetes.io/gmsa-credential-spec-name":"webapp1-credspec","pod.alpha.windows.kubernetes.io/gmsa-credential-spec":"{\"forged\":true}"}}}`
	_, err := pods.Patch(ctx, "iis", types.MergePatchType, []byte(forged), metav1.PatchOptions{}, "status")
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "GMSA credential specs of a pod cannot change") {
		t.Errorf("status patch adding alpha annotations: got %v, want 400", err)
	}
	if _, err := pods.Patch(ctx, "iis", types.MergePatchType, []byte(`{"metadata":{"annotations":{"team":"web"}}}`), metav1.PatchOptions{}, "status"); err != nil {
		t.Errorf("status patch adding another annotation: %v", err)
	}

	pod, err := pods.Get(ctx, "iis", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Annotations["iis.container.alpha.windows.kubernetes.io/gmsa-credential-spec-name"] = "webapp1-credspec"
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Image: "registry.example/busybox:1", TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent,
	}}}
	_, err = pods.UpdateEphemeralContainers(ctx, "iis", pod, metav1.UpdateOptions{})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "GMSA credential specs of a pod cannot change") {
		t.Errorf("debug container write adding alpha annotations: got %v, want 400", err)
	}

	err = pods.Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: "iis", Annotations: map[string]string{"pod.alpha.windows.kubernetes.io/gmsa-credential-spec-name": "webapp1-credspec"}},
		Target:     corev1.ObjectReference{Kind: "Node", Name: "node1"},
	}, metav1.CreateOptions{})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "by a binding") {
		t.Errorf("binding with alpha annotations: got %v, want 400", err)
	}
	stored, err := pods.Get(ctx, "iis", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k := range stored.Annotations {
		if strings.Contains(k, "alpha.windows.kubernetes.io") {
			t.Errorf("stored pod has annotation %s", k)
		}
	}
}
