package gmsa

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/admission"
)

func TestExpand(t *testing.T) {
	create := func(p *corev1.Pod) Request {
		return Request{Pod: p, Namespace: "default", Operation: admission.Create}
	}
	update := func(old, p *corev1.Pod, sub string) Request {
		return Request{Pod: p, OldPod: old, Namespace: "default", Operation: admission.Update, Subresource: sub}
	}
	alpha := Options{AlphaAnnotations: true}
	cases := []struct {
		name    string
		opts    Options
		req     Request
		fail    error
		want    *corev1.Pod // the pod after; nil: unchanged
		code    int32
		says    []string
		lookups int
	}{
		{name: "no GMSA", req: create(newPod())},
		{
			name: "pod-level name only: filled as compact JSON", req: create(newPod(onPod("webapp1", ""))),
			want: newPod(onPod("webapp1", webapp1Compact)), lookups: 1,
		},
		{
			name: "container-level name only", req: create(newPod(onApp("webapp2", ""))),
			want: newPod(onApp("webapp2", webapp2)), lookups: 1,
		},
		{
			name: "pod-level and container-level override: each its own", req: create(newPod(onPod("webapp1", ""), onApp("webapp2", ""))),
			want: newPod(onPod("webapp1", webapp1Compact), onApp("webapp2", webapp2)), lookups: 2,
		},
		{
			name: "init and ephemeral containers", req: create(newPod(withInit("webapp2", ""), withDebug("debug", "webapp1", ""))),
			want: newPod(withInit("webapp2", webapp2), withDebug("debug", "webapp1", webapp1Compact)), lookups: 2,
		},
		{
			name: "one lookup for a name used in several places", req: create(newPod(onPod("webapp1", ""), onApp("webapp1", ""), withInit("webapp1", ""))),
			want: newPod(onPod("webapp1", webapp1Compact), onApp("webapp1", webapp1Compact), withInit("webapp1", webapp1Compact)), lookups: 1,
		},
		{name: "contents only: left to the authorizer", req: create(newPod(onApp("", `{"forged":true}`)))},
		{name: "both, even differing: left to the authorizer", req: create(newPod(onApp("webapp1", webapp2)))},
		{
			name: "unknown name: 422 naming it at every place", req: create(newPod(onPod("nosuch", ""), onApp("nosuch", ""))),
			code: 422, lookups: 1,
			says: []string{`spec.securityContext.windowsOptions.gmsaCredentialSpecName: Not found: "nosuch"`, `spec.containers[0].securityContext.windowsOptions.gmsaCredentialSpecName: Not found: "nosuch"`, "no GMSACredentialSpec has this name"},
		},
		{
			name: "stored credspec not JSON: 422 naming the spec", req: create(newPod(onApp("broken", ""))),
			code: 422, lookups: 1, says: []string{`gmsaCredentialSpecName: Invalid value: "broken": the credspec of this GMSACredentialSpec is not JSON`},
		},
		{
			name: "lookup failure: 500", req: create(newPod(onApp("webapp1", ""))), fail: errBackend,
			code: 500, lookups: 1, says: []string{`looking up GMSACredentialSpec "webapp1": connection refused`},
		},
		{name: "alpha annotations off: ignored", req: create(newPod(annotate(podNameAnnotation, "webapp1")))},
		{
			name: "alpha annotations on: pod-level", opts: alpha, req: create(newPod(annotate(podNameAnnotation, "webapp1"))),
			want: newPod(annotate(podNameAnnotation, "webapp1"), annotate(podContentsAnnotation, webapp1Compact)), lookups: 1,
		},
		{
			name: "alpha annotations on: container-level, empty contents count as none", opts: alpha,
			req:  create(newPod(annotate(appNameAnnotation, "webapp2"), annotate(appContentsAnnotation, ""))),
			want: newPod(annotate(appNameAnnotation, "webapp2"), annotate(appContentsAnnotation, webapp2)), lookups: 1,
		},
		{
			name: "alpha annotations on: unknown name", opts: alpha, req: create(newPod(annotate(appNameAnnotation, "nosuch"))),
			code: 422, lookups: 1, says: []string{`metadata.annotations[app.container.alpha.windows.kubernetes.io/gmsa-credential-spec-name]: Not found: "nosuch"`},
		},
		{
			name: "alpha annotations on: other annotations ignored", opts: alpha,
			req: create(newPod(annotate("container.alpha.windows.kubernetes.io/gmsa-credential-spec-name", "nosuch"),
				annotate(".container.alpha.windows.kubernetes.io/gmsa-credential-spec-name", "nosuch"),
				annotate("pod.alpha.windows.kubernetes.io/gmsa-credential-spec-names", "nosuch"))),
		},
		{name: "update: nothing filled", req: update(newPod(onApp("webapp1", webapp1Compact)), newPod(onApp("webapp1", ""), onPod("webapp2", "")), "")},
		{
			name: "ephemeralcontainers: only the added debug container is filled",
			req: update(newPod(withDebug("old", "webapp1", "")),
				newPod(withDebug("old", "webapp1", ""), withDebug("new", "webapp2", "")), "ephemeralcontainers"),
			want: newPod(withDebug("old", "webapp1", ""), withDebug("new", "webapp2", webapp2)), lookups: 1,
		},
		{name: "status subresource: nothing filled", req: update(newPod(), newPod(onApp("webapp1", "")), "status")},
		{
			name: "alpha annotations on: as many specs as the pod and its containers, looked up once each", opts: alpha,
			req: create(newPod(withInit("webapp1", ""), annotate(podNameAnnotation, "webapp2"), annotate(appNameAnnotation, "webapp1"),
				annotate("init.container.alpha.windows.kubernetes.io/gmsa-credential-spec-name", "broken"))),
			code: 422, lookups: 3, says: []string{`"broken": the credspec of this GMSACredentialSpec is not JSON`},
		},
		{
			name: "alpha annotations on: more specs than the pod and its containers: 422, nothing looked up", opts: alpha,
			req: create(newPod(annotate(podNameAnnotation, "webapp1"), annotate(appNameAnnotation, "webapp2"),
				annotate("ghost.container.alpha.windows.kubernetes.io/gmsa-credential-spec-name", "nosuch"))),
			code: 422, says: []string{"metadata.annotations[pod.alpha.windows.kubernetes.io/gmsa-credential-spec-name]: Forbidden: the pod names 3 distinct GMSACredentialSpecs, more than the 2 it can use"},
		},
		{name: "delete: not the expander's", req: Request{Pod: newPod(onApp("webapp1", "")), Operation: admission.Delete}},
		{name: "update without the stored pod: 500", req: update(nil, newPod(), ""), code: 500, says: []string{"without the stored pod"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSpecs()
			s.fail = tc.fail
			want := tc.want
			if want == nil {
				want = tc.req.Pod.DeepCopy()
			}
			err := NewExpander(s, tc.opts).Expand(context.Background(), tc.req)
			checkError(t, err, tc.code, tc.says...)
			if err == nil {
				if diff := cmp.Diff(want, tc.req.Pod); diff != "" {
					t.Errorf("pod after Expand (-want +got):\n%s", diff)
				}
			}
			if s.lookups != tc.lookups {
				t.Errorf("%d lookups, want %d", s.lookups, tc.lookups)
			}
		})
	}
}
