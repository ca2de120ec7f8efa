package gmsa

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/utils/ptr"

	"github.com/idplane/idplane/internal/gmsa"
)

const webapp1 = `{"CmsPlugins":["ActiveDirectory"],"DomainJoinConfig":{"DnsName":"contoso.com"}}`

// specs is a CredSpecs over fixed contents.
type specs map[string]string

func (s specs) CredSpec(_ context.Context, name string) ([]byte, error) {
	if c, ok := s[name]; ok {
		return []byte(c), nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: gmsa.Group, Resource: gmsa.Resource}, name)
}

// grants allows "use" to the users listed per credential spec; err, when set, answers every
// question that is not allowed.
type grants struct {
	users map[string][]string
	err   error
}

func (g grants) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetVerb() != gmsa.Verb || a.GetAPIGroup() != gmsa.Group || a.GetResource() != gmsa.Resource || !a.IsResourceRequest() {
		return authorizer.DecisionNoOpinion, "not a use check", nil
	}
	// Grants are RoleBindings in the pod's namespace: a check asked elsewhere finds none.
	if a.GetNamespace() != "default" {
		return authorizer.DecisionNoOpinion, "asked outside the pod's namespace", g.err
	}
	for _, u := range g.users[a.GetName()] {
		if u == a.GetUser().GetName() {
			return authorizer.DecisionAllow, "granted", g.err
		}
	}
	return authorizer.DecisionNoOpinion, "no grant", g.err
}

func newPlugin(t *testing.T, g grants, opts gmsa.Options) *Plugin {
	t.Helper()
	p := New()
	if err := p.ValidateInitialization(); err == nil {
		t.Fatal("a plugin without its config and authorizer initialized")
	}
	p.SetGMSAConfig(Config{Specs: specs{"webapp1": webapp1}, Options: opts})
	p.SetAuthorizer(authorizer.AuthorizerFunc(g.Authorize))
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	return p
}

func podNaming(spec string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: corev1.PodSpec{ServiceAccountName: "webapp", Containers: []corev1.Container{{
			Name: "iis", SecurityContext: &corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{GMSACredentialSpecName: ptr.To(spec)}},
		}}},
	}
}

func withAnnotation(p *corev1.Pod, key, value string) *corev1.Pod {
	p.Annotations = map[string]string{key: value}
	return p
}

func attrs(obj, old runtime.Object, resource, sub string, op admission.Operation) admission.Attributes {
	return admission.NewAttributesRecord(obj, old, corev1.SchemeGroupVersion.WithKind("Pod"), "default", "web",
		corev1.SchemeGroupVersion.WithResource(resource), sub, op, nil, false, &user.DefaultInfo{Name: "alice"})
}

func TestPlugin(t *testing.T) {
	saUser := "system:serviceaccount:default:webapp"
	allowed := grants{users: map[string][]string{"webapp1": {saUser}}}
	cases := []struct {
		name    string
		grants  grants
		alpha   bool
		attrs   admission.Attributes
		code    int32
		says    string
		wantPod func(t *testing.T, p *corev1.Pod)
	}{
		{name: "a pod naming a spec its account may use is expanded and admitted", grants: allowed,
			attrs: attrs(podNaming("webapp1"), nil, "pods", "", admission.Create),
			wantPod: func(t *testing.T, p *corev1.Pod) {
				if got := ptr.Deref(p.Spec.Containers[0].SecurityContext.WindowsOptions.GMSACredentialSpec, ""); got != webapp1 {
					t.Errorf("contents = %q, want the spec's", got)
				}
			}},
		{name: "another account is refused with 403", grants: grants{},
			attrs: attrs(podNaming("webapp1"), nil, "pods", "", admission.Create), code: 403, says: saUser},
		{name: "an unknown spec is a 422", grants: allowed,
			attrs: attrs(podNaming("nope"), nil, "pods", "", admission.Create), code: 422, says: `"nope"`},
		{name: "an allow stands beside an authorizer's failure", grants: grants{users: allowed.users, err: errors.New("webhook down")},
			attrs: attrs(podNaming("webapp1"), nil, "pods", "", admission.Create)},
		{name: "a failure without an allow refuses", grants: grants{err: errors.New("webhook down")},
			attrs: attrs(podNaming("webapp1"), nil, "pods", "", admission.Create), code: 500, says: "webhook down"},
		{name: "status writes that keep the specs are allowed", grants: grants{},
			attrs: attrs(podNaming("nope"), podNaming("nope"), "pods", "status", admission.Update)},
		{name: "status writes cannot add alpha annotations: 400", grants: allowed, alpha: true,
			attrs: attrs(withAnnotation(podNaming("webapp1"), "pod.alpha.windows.kubernetes.io/gmsa-credential-spec", `{"forged":true}`), podNaming("webapp1"), "pods", "status", admission.Update),
			code:  400, says: "metadata.annotations[pod.alpha.windows.kubernetes.io/gmsa-credential-spec] changed"},
		{name: "status writes may add alpha annotations with the option off", grants: allowed,
			attrs: attrs(withAnnotation(podNaming("webapp1"), "pod.alpha.windows.kubernetes.io/gmsa-credential-spec", `{"forged":true}`), podNaming("webapp1"), "pods", "status", admission.Update)},
		{name: "debug container writes cannot add alpha annotations: 400", grants: allowed, alpha: true,
			attrs: attrs(withAnnotation(podNaming("webapp1"), "iis.container.alpha.windows.kubernetes.io/gmsa-credential-spec-name", "webapp1"), podNaming("webapp1"), "pods", "ephemeralcontainers", admission.Update),
			code:  400, says: `metadata.annotations[iis.container.alpha.windows.kubernetes.io/gmsa-credential-spec-name] changed from "" to "webapp1"`},
		{name: "bindings cannot set alpha annotations: 400", grants: allowed, alpha: true,
			attrs: admission.NewAttributesRecord(&corev1.Binding{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Annotations: map[string]string{"pod.alpha.windows.kubernetes.io/gmsa-credential-spec-name": "webapp1"}},
				Target:     corev1.ObjectReference{Kind: "Node", Name: "node1"},
			}, nil, corev1.SchemeGroupVersion.WithKind("Binding"), "default", "web", corev1.SchemeGroupVersion.WithResource("pods"), "binding", admission.Create, nil, false, &user.DefaultInfo{Name: "scheduler"}),
			code: 400, says: `metadata.annotations[pod.alpha.windows.kubernetes.io/gmsa-credential-spec-name] set to "webapp1" by a binding`},
		{name: "bindings without them are allowed", grants: allowed, alpha: true,
			attrs: admission.NewAttributesRecord(&corev1.Binding{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Target: corev1.ObjectReference{Kind: "Node", Name: "node1"},
			}, nil, corev1.SchemeGroupVersion.WithKind("Binding"), "default", "web", corev1.SchemeGroupVersion.WithResource("pods"), "binding", admission.Create, nil, false, &user.DefaultInfo{Name: "scheduler"})},
		{name: "other resources are not its business", grants: grants{},
			attrs: attrs(&corev1.ConfigMap{}, nil, "configmaps", "", admission.Create)},
		{name: "debug containers are checked", grants: grants{},
			attrs: func() admission.Attributes {
				old := podNaming("webapp1")
				old.Spec.Containers[0].SecurityContext.WindowsOptions.GMSACredentialSpec = ptr.To(webapp1)
				debug := old.DeepCopy()
				debug.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
					Name: "debug", SecurityContext: &corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{GMSACredentialSpecName: ptr.To("webapp1")}},
				}}}
				return attrs(debug, old, "pods", "ephemeralcontainers", admission.Update)
			}(), code: 403, says: saUser},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlugin(t, tc.grants, gmsa.Options{AlphaAnnotations: tc.alpha})
			ctx := context.Background()
			err := p.Admit(ctx, tc.attrs, nil)
			if err == nil {
				err = p.Validate(ctx, tc.attrs, nil)
			}
			if tc.code == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if tc.wantPod != nil {
					tc.wantPod(t, tc.attrs.GetObject().(*corev1.Pod))
				}
				return
			}
			var status apierrors.APIStatus
			if !errors.As(err, &status) || status.Status().Code != tc.code || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("err = %v, want %d saying %q", err, tc.code, tc.says)
			}
		})
	}
}
