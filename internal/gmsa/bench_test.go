package gmsa

import (
	"context"
	"testing"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// BenchmarkAdmitGMSAPod is the in-process admission path of a pod creation: expand, then
// authorize (service account and requester) and compare, with specs and grants answered from
// memory. "name" is the usual pod, whose contents the expander fills, so that the comparison
// finds the same bytes; "contents in another order" makes it decode and compare both as JSON.
func BenchmarkAdmitGMSAPod(b *testing.B) {
	for _, bc := range []struct {
		name, contents string
	}{
		{"name", ""},
		{"contents in another order", webapp1Reordered},
	} {
		b.Run(bc.name, func(b *testing.B) {
			opts := Options{AuthorizeRequester: true}
			specs, grants := newSpecs(), newGrants(b)
			e, a := NewExpander(specs, opts), NewAuthorizer(specs, grants, opts)
			pod := newPod(onPod("webapp1", bc.contents))
			o := pod.Spec.SecurityContext.WindowsOptions
			req := Request{Pod: pod, Namespace: "default", Requester: &user.DefaultInfo{Name: "alice"}, Operation: admission.Create}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if bc.contents == "" {
					o.GMSACredentialSpec = nil
				}
				if err := e.Expand(ctx, req); err != nil {
					b.Fatal(err)
				}
				if err := a.Authorize(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
