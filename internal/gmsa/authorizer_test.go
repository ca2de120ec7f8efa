package gmsa

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

func TestAuthorize(t *testing.T) {
	alice, bob := &user.DefaultInfo{Name: "alice"}, &user.DefaultInfo{Name: "bob"}
	create := func(p *corev1.Pod) Request {
		return Request{Pod: p, Namespace: "default", Operation: admission.Create, Requester: bob}
	}
	createBy := func(u user.Info, p *corev1.Pod) Request {
		r := create(p)
		r.Requester = u
		return r
	}
	update := func(old, p *corev1.Pod, sub string) Request {
		return Request{Pod: p, OldPod: old, Namespace: "default", Operation: admission.Update, Subresource: sub, Requester: bob}
	}
	requester := Options{AuthorizeRequester: true}
	alpha := Options{AlphaAnnotations: true}
	deep := strings.Repeat("[", 33) + strings.Repeat("]", 33)
	cases := []struct {
		name       string
		opts       Options
		req        Request
		failSpecs  error
		failGrants error
		code       int32
		says       []string
	}{
		{name: "no GMSA", req: create(newPod())},
		{name: "name only, service account allowed", req: create(newPod(onApp("webapp1", "")))},
		{
			name: "name only, service account denied: 403 naming spec and account",
			req:  create(newPod(withServiceAccount("other"), onApp("webapp1", ""))), code: 403,
			says: []string{`gmsacredentialspecs.windows.k8s.io "webapp1" is forbidden`, `service account "system:serviceaccount:default:other" may not use it`, "spec.containers[0].securityContext.windowsOptions.gmsaCredentialSpecName", "no RBAC rule allows it"},
		},
		{
			name: "a pod without a service account runs as default",
			req:  create(newPod(withServiceAccount(""), onApp("webapp1", ""))), code: 403,
			says: []string{`service account "system:serviceaccount:default:default"`},
		},
		{
			name: "contents only: 422", req: create(newPod(onApp("", webapp1Compact))), code: 422,
			says: []string{"spec.containers[0].securityContext.windowsOptions.gmsaCredentialSpecName: Required value", "must come with the name"},
		},
		{name: "both, identical", req: create(newPod(onApp("webapp1", webapp1Compact)))},
		{name: "both, same JSON as the stored spec's indented text", req: create(newPod(onApp("webapp1", webapp1)))},
		{name: "both, same JSON in another key order, whitespace and number form", req: create(newPod(onApp("webapp1", webapp1Reordered)))},
		{
			name: "both, different: 422 showing both", req: create(newPod(onApp("webapp1", webapp2))), code: 422,
			says: []string{"spec.containers[0].securityContext.windowsOptions.gmsaCredentialSpec: Invalid value", `MachineAccountName\":\"WebApp2`, `differs from the credspec of GMSACredentialSpec "webapp1", ` + webapp1Compact},
		},
		{
			name: "both, unknown name: 422 naming it", req: create(newPod(onApp("nosuch", webapp1))), code: 422,
			says: []string{`spec.containers[0].securityContext.windowsOptions.gmsaCredentialSpecName: Not found: "nosuch"`},
		},
		{
			name: "contents not JSON: 422", req: create(newPod(onApp("webapp1", `{"CmsPlugins":`))), code: 422,
			says: []string{"gmsaCredentialSpec: Invalid value: the credential spec is not JSON"},
		},
		{
			name: "contents nested too deep: 422", req: create(newPod(onApp("webapp1", deep))), code: 422,
			says: []string{"more than 32 deep"},
		},
		{
			name: "contents over 64 KiB: 422", req: create(newPod(onApp("webapp1", `"`+strings.Repeat("a", 64<<10)+`"`))), code: 422,
			says: []string{"is 65538 bytes, more than 65536"},
		},
		{
			name: "stored spec not JSON: 422 naming it", req: create(newPod(onApp("broken", webapp1))), code: 422,
			says: []string{`gmsaCredentialSpecName: Invalid value: "broken": the credspec of this GMSACredentialSpec is not JSON`},
		},
		{
			name: "every 422 at once", req: create(newPod(onPod("", webapp1), onApp("webapp1", webapp2))), code: 422,
			says: []string{"spec.securityContext.windowsOptions.gmsaCredentialSpecName: Required value", "spec.containers[0].securityContext.windowsOptions.gmsaCredentialSpec: Invalid value"},
		},
		{
			name: "403 before 422, as the design orders them", req: create(newPod(onPod("", webapp1), withServiceAccount("other"), onApp("webapp1", ""))), code: 403,
		},
		{
			name: "pod-level allowed, container-level override denied", req: create(newPod(withServiceAccount("alice-sa"), onPod("webapp1", ""), onApp("webapp2", ""))),
			code: 403, says: []string{`"webapp2" is forbidden`, "spec.containers[0].securityContext.windowsOptions.gmsaCredentialSpecName"},
		},
		{
			name: "init container denied", req: create(newPod(withServiceAccount("other"), withInit("webapp1", ""))),
			code: 403, says: []string{"spec.initContainers[0].securityContext.windowsOptions.gmsaCredentialSpecName"},
		},
		{
			name: "ephemeral container contents differ", req: create(newPod(withDebug("debug", "webapp1", webapp2))),
			code: 422, says: []string{"spec.ephemeralContainers[0].securityContext.windowsOptions.gmsaCredentialSpec"},
		},
		{name: "requester not asked without the option", req: createBy(bob, newPod(onApp("webapp1", webapp1)))},
		{name: "requester allowed", opts: requester, req: createBy(alice, newPod(onApp("webapp1", webapp1)))},
		{
			name: "requester denied: 403 naming the user", opts: requester, req: createBy(alice, newPod(onApp("webapp2", webapp2))), code: 403,
			says: []string{`gmsacredentialspecs.windows.k8s.io "webapp2" is forbidden: user "alice" may not use it`},
		},
		{
			name: "requester missing with the option: 500", opts: requester, req: createBy(nil, newPod(onApp("webapp1", ""))), code: 500,
			says: []string{"no requesting user"},
		},
		{
			name: "use checker failure: 500", req: create(newPod(onApp("webapp1", ""))), failGrants: errBackend, code: 500,
			says: []string{`asking whether service account "system:serviceaccount:default:sa" may use GMSACredentialSpec "webapp1": connection refused`},
		},
		{
			name: "lookup failure: 500", req: create(newPod(onApp("webapp1", webapp1))), failSpecs: errBackend, code: 500,
			says: []string{`looking up GMSACredentialSpec "webapp1": connection refused`},
		},
		{name: "alpha annotations off: ignored", req: create(newPod(annotate(podContentsAnnotation, `{"forged":true}`)))},
		{
			name: "alpha annotations on: contents only", opts: alpha, req: create(newPod(annotate(podContentsAnnotation, `{"forged":true}`))), code: 422,
			says: []string{"metadata.annotations[pod.alpha.windows.kubernetes.io/gmsa-credential-spec-name]: Required value"},
		},
		{name: "alpha annotations on: matching", opts: alpha, req: create(newPod(annotate(appNameAnnotation, "webapp1"), annotate(appContentsAnnotation, webapp1Reordered)))},
		{
			name: "alpha annotations on: different", opts: alpha, req: create(newPod(annotate(appNameAnnotation, "webapp1"), annotate(appContentsAnnotation, webapp2))), code: 422,
			says: []string{"metadata.annotations[app.container.alpha.windows.kubernetes.io/gmsa-credential-spec]: Invalid value"},
		},
		{
			name: "alpha annotations on: service account denied", opts: alpha, req: create(newPod(withServiceAccount("other"), annotate(podNameAnnotation, "webapp1"))), code: 403,
			says: []string{`"webapp1" is forbidden`, "metadata.annotations[pod.alpha.windows.kubernetes.io/gmsa-credential-spec-name]"},
		},
		{
			name: "alpha annotations on: a container the pod does not have yet is checked too", opts: alpha,
			req: create(newPod(annotate("debug.container.alpha.windows.kubernetes.io/gmsa-credential-spec", `{"forged":true}`))), code: 422,
			says: []string{"debug.container.alpha.windows.kubernetes.io/gmsa-credential-spec-name]: Required value"},
		},
		{name: "update, nothing changed", req: update(newPod(onPod("webapp1", webapp1)), newPod(onPod("webapp1", webapp1), annotate("x", "y")), "")},
		{
			name: "update, name changed: 400", req: update(newPod(onApp("webapp1", webapp1)), newPod(onApp("webapp2", webapp1)), ""), code: 400,
			says: []string{`spec.containers[0].securityContext.windowsOptions.gmsaCredentialSpecName changed from "webapp1" to "webapp2"`},
		},
		{
			name: "update, contents changed, even to the same JSON value: 400", req: update(newPod(onPod("webapp1", webapp1)), newPod(onPod("webapp1", webapp1Compact)), ""), code: 400,
			says: []string{"spec.securityContext.windowsOptions.gmsaCredentialSpec changed"},
		},
		{
			name: "update, GMSA removed: 400", req: update(newPod(onPod("webapp1", webapp1)), newPod(), ""), code: 400,
			says: []string{`spec.securityContext.windowsOptions.gmsaCredentialSpecName changed from "webapp1" to ""`, "spec.securityContext.windowsOptions.gmsaCredentialSpec changed"},
		},
		{
			name: "update, GMSA added: 400, nothing asked", req: update(newPod(), newPod(withServiceAccount("other"), withInit("webapp1", "")), ""), code: 400,
			says: []string{`spec.initContainers[0].securityContext.windowsOptions.gmsaCredentialSpecName changed from "" to "webapp1"`},
		},
		{
			name: "update, alpha annotation changed: 400", opts: alpha,
			req: update(newPod(annotate(podNameAnnotation, "webapp1")), newPod(annotate(podNameAnnotation, "webapp2")), ""), code: 400,
			says: []string{`metadata.annotations[pod.alpha.windows.kubernetes.io/gmsa-credential-spec-name] changed from "webapp1" to "webapp2"`},
		},
		{name: "update, alpha annotation changed with the option off", req: update(newPod(annotate(podNameAnnotation, "webapp1")), newPod(annotate(podNameAnnotation, "webapp2")), "")},
		{name: "status update, GMSA unchanged", opts: alpha, req: update(newPod(onPod("webapp1", webapp1), annotate(podNameAnnotation, "webapp1")), newPod(onPod("webapp1", webapp1), annotate(podNameAnnotation, "webapp1"), annotate("x", "y")), "status")},
		{
			name: "status update, alpha annotations added: 400, nothing asked", opts: alpha,
			req: update(newPod(), newPod(withServiceAccount("other"), annotate(appNameAnnotation, "webapp2"), annotate(appContentsAnnotation, `{"forged":true}`)), "status"), code: 400,
			says: []string{`metadata.annotations[app.container.alpha.windows.kubernetes.io/gmsa-credential-spec-name] changed from "" to "webapp2"`, "metadata.annotations[app.container.alpha.windows.kubernetes.io/gmsa-credential-spec] changed"},
		},
		{name: "status update, alpha annotations added with the option off", req: update(newPod(), newPod(annotate(appNameAnnotation, "webapp2")), "status")},
		{
			name: "ephemeralcontainers: alpha annotations added: 400", opts: alpha,
			req: update(newPod(), newPod(annotate(podNameAnnotation, "webapp1"), withDebug("new", "", "")), "ephemeralcontainers"), code: 400,
			says: []string{`metadata.annotations[pod.alpha.windows.kubernetes.io/gmsa-credential-spec-name] changed from "" to "webapp1"`},
		},
		{
			name: "alpha annotations on: more specs than the pod and its containers: 422", opts: alpha,
			req: create(newPod(annotate(podNameAnnotation, "webapp1"), annotate(appNameAnnotation, "webapp2"),
				annotate("ghost.container.alpha.windows.kubernetes.io/gmsa-credential-spec-name", "nosuch"))),
			code: 422, says: []string{"the pod names 3 distinct GMSACredentialSpecs, more than the 2 it can use: one for the pod and one per container"},
		},
		{name: "alpha annotations on: as many specs as the pod and its containers", opts: alpha, req: create(newPod(annotate(podNameAnnotation, "webapp1"), annotate(appNameAnnotation, "webapp2")))},
		{name: "update without the stored pod: 500", req: update(nil, newPod(), ""), code: 500},
		{
			name: "ephemeralcontainers: added debug container allowed and matching",
			req:  update(newPod(onPod("webapp1", webapp1)), newPod(onPod("webapp1", webapp1), withDebug("debug", "webapp2", webapp2)), "ephemeralcontainers"),
		},
		{
			name: "ephemeralcontainers: added debug container denied: 403", req: update(newPod(withServiceAccount("alice-sa")), newPod(withServiceAccount("alice-sa"), withDebug("debug", "webapp2", "")), "ephemeralcontainers"),
			code: 403, says: []string{`"webapp2" is forbidden`, "spec.ephemeralContainers[0].securityContext.windowsOptions.gmsaCredentialSpecName"},
		},
		{
			name: "ephemeralcontainers: added debug container with forged contents: 422", req: update(newPod(), newPod(withDebug("debug", "", `{"forged":true}`)), "ephemeralcontainers"),
			code: 422, says: []string{"spec.ephemeralContainers[0].securityContext.windowsOptions.gmsaCredentialSpecName: Required value"},
		},
		{
			name: "ephemeralcontainers: requester denied for the added container: 403", opts: requester,
			req:  update(newPod(withDebug("old", "webapp2", webapp2)), newPod(withDebug("old", "webapp2", webapp2), withDebug("new", "webapp1", webapp1)), "ephemeralcontainers"),
			code: 403, says: []string{`user "bob" may not use it`, "spec.ephemeralContainers[1]"},
		},
		{
			name: "ephemeralcontainers: existing debug container changed: 400",
			req:  update(newPod(withDebug("old", "webapp1", webapp1)), newPod(withDebug("old", "webapp1", webapp2), withDebug("new", "", "")), "ephemeralcontainers"), code: 400,
			says: []string{"spec.ephemeralContainers[0].securityContext.windowsOptions.gmsaCredentialSpec changed"},
		},
		{
			name: "ephemeralcontainers: pod-level change rides along: 400",
			req:  update(newPod(), newPod(onPod("webapp1", ""), withDebug("new", "", "")), "ephemeralcontainers"), code: 400,
			says: []string{"spec.securityContext.windowsOptions.gmsaCredentialSpecName changed"},
		},
		{
			name: "main update cannot add a debug container with GMSA: 400",
			req:  update(newPod(), newPod(withDebug("new", "webapp1", webapp1)), ""), code: 400,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, g := newSpecs(), newGrants(t)
			g.byUser["system:serviceaccount:default:alice-sa"] = []string{"webapp1"}
			s.fail, g.fail = tc.failSpecs, tc.failGrants
			before := tc.req.Pod.DeepCopy()
			err := NewAuthorizer(s, g, tc.opts).Authorize(context.Background(), tc.req)
			checkError(t, err, tc.code, tc.says...)
			if tc.req.Pod != nil && !equalPods(before, tc.req.Pod) {
				t.Error("Authorize changed the pod")
			}
		})
	}
}

func equalPods(a, b *corev1.Pod) bool { return a.String() == b.String() }

func TestAuthorizeBinding(t *testing.T) {
	binding := func(annotations map[string]string) *corev1.Binding {
		return &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: annotations}, Target: corev1.ObjectReference{Kind: "Node", Name: "node1"}}
	}
	cases := []struct {
		name    string
		opts    Options
		binding *corev1.Binding
		code    int32
		says    []string
	}{
		{name: "no annotations", opts: Options{AlphaAnnotations: true}, binding: binding(nil)},
		{name: "other annotations", opts: Options{AlphaAnnotations: true}, binding: binding(map[string]string{"scheduler.example/score": "3"})},
		{name: "alpha annotations with the option off", binding: binding(map[string]string{podNameAnnotation: "webapp1"})},
		{
			name: "alpha annotations: 400 naming them", opts: Options{AlphaAnnotations: true},
			binding: binding(map[string]string{appNameAnnotation: "webapp1", podContentsAnnotation: `{"forged":true}`}), code: 400,
			says: []string{
				`metadata.annotations[app.container.alpha.windows.kubernetes.io/gmsa-credential-spec-name] set to "webapp1" by a binding`,
				"metadata.annotations[pod.alpha.windows.kubernetes.io/gmsa-credential-spec] set by a binding",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := NewAuthorizer(newSpecs(), newGrants(t), tc.opts).AuthorizeBinding(tc.binding)
			checkError(t, err, tc.code, tc.says...)
		})
	}
}
