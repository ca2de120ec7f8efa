package serviceaccount

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	"github.com/idplane/idplane/internal/podwalk"
	"github.com/idplane/idplane/internal/podwalk/podwalktest"
)

// mirrorRefusedKinds are what a mirror pod may not name: upstream refuses accounts, secrets and
// token projections (which the walk reports as the account); idplane also pod certificates,
// cluster trust bundles and volume sources it cannot judge.
var mirrorRefusedKinds = []podwalk.Kind{podwalk.ServiceAccount, podwalk.Secret, podwalk.PodCertificate, podwalk.ClusterTrustBundle, podwalk.Unknown}

// TestEveryReferenceOfEveryShape runs the plugin over a pod for each field podwalk descends into
// and compares with what podwalk reports of it, so that every secret the walk knows, including one
// it learns later, is limited by enforce-mountable-secrets and kept out of mirror pods.
func TestEveryReferenceOfEveryShape(t *testing.T) {
	x := podwalktest.Name
	closed := account("strict", enforcing)
	open := account("strict", enforcing, listing(x), func(sa *corev1.ServiceAccount) {
		sa.ImagePullSecrets = []corev1.LocalObjectReference{{Name: x}}
	})
	for _, shape := range podwalktest.Shapes() {
		t.Run(shape.Field, func(t *testing.T) {
			var secrets, debugSecrets []string
			unknown, mirrorRefused := false, false
			for r := range podwalk.References(shape.Pod) {
				switch r.Kind {
				case podwalk.Secret:
					secrets = append(secrets, r.Path.String())
					if r.Path.In("spec.ephemeralContainers") {
						debugSecrets = append(debugSecrets, r.Path.String())
					}
				case podwalk.Unknown:
					unknown = true
				}
				mirrorRefused = mirrorRefused || slices.Contains(mirrorRefusedKinds, r.Kind)
			}
			pod := func(mods ...func(*corev1.Pod)) *corev1.Pod {
				p := shape.Pod.DeepCopy()
				p.Namespace, p.Name = ns, "web"
				for _, m := range mods {
					m(p)
				}
				return p
			}

			// An account that lists no secret: the pod is refused, naming one of its secrets.
			p, _ := newPlugin(t, []runtime.Object{closed}, nil)
			err := admit(p, create(pod(runningAs("strict"))).attributes())
			checkRefusal(t, "account listing nothing", err, len(secrets) > 0 || unknown, secrets)

			// An account that lists every secret the pod names (all are named x).
			p, _ = newPlugin(t, []runtime.Object{open}, nil)
			err = admit(p, create(pod(runningAs("strict"))).attributes())
			checkRefusal(t, "account listing every secret", err, unknown, nil)

			// Debug containers added to a running pod: only theirs count.
			p, _ = newPlugin(t, []runtime.Object{closed}, nil)
			running := pod(runningAs("strict"), func(p *corev1.Pod) { p.Spec.EphemeralContainers = nil })
			debug := request{obj: pod(runningAs("strict")), old: running, gvr: podsGVR, subresource: "ephemeralcontainers", op: admission.Update}
			err = admit(p, debug.attributes())
			checkRefusal(t, "debug containers, account listing nothing", err, len(debugSecrets) > 0, debugSecrets)

			// The same pod as a mirror pod, whatever account exists.
			p, _ = newPlugin(t, []runtime.Object{account(x), account(DefaultServiceAccountName)}, nil)
			err = admit(p, create(pod(mirror)).attributes())
			checkRefusal(t, "mirror pod", err, mirrorRefused, nil)
		})
	}
}

// checkRefusal checks err is a 403 when refused, naming one of paths if any are given, and nil
// otherwise.
func checkRefusal(t *testing.T, what string, err error, refused bool, paths []string) {
	t.Helper()
	switch {
	case !refused && err != nil:
		t.Errorf("%s: got %v; want allowed", what, err)
	case refused && !apierrors.IsForbidden(err):
		t.Errorf("%s: got %v; want 403", what, err)
	case refused && len(paths) > 0 && !slices.ContainsFunc(paths, func(p string) bool { return strings.Contains(err.Error(), p+": ") }):
		t.Errorf("%s: got %v; want it to name one of %q", what, err, paths)
	}
}
