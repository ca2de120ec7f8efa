package serviceaccount

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"

	"github.com/idplane/idplane/internal/podwalk"
)

// forbidUnlistedSecrets refuses a pod that uses a secret its account does not list, when the
// account enforces mountable secrets. Every secret podwalk finds counts — volumes, projected
// sources, the secrets of CSI and in-tree volume plugins, every container's environment — where
// upstream checks only secret volumes, environment variables and image pull secrets: the node may
// read each of them through the Node authorizer's graph, so an unchecked one would hand the pod a
// secret its account was meant to keep from it. On the ephemeralcontainers subresource only the
// ephemeral containers are checked, since nothing else may change there.
func forbidUnlistedSecrets(a admission.Attributes, pod *corev1.Pod, sa *corev1.ServiceAccount) error {
	if !enforcesMountableSecrets(sa) {
		return nil
	}
	if err := unlistedSecret(pod, sa, a.GetSubresource() == "ephemeralcontainers"); err != nil {
		return admission.NewForbidden(a, err)
	}
	return nil
}

// unlistedSecret is the first secret reference the account does not allow: image pull secrets
// are checked against the account's imagePullSecrets, and last; every other secret against its
// secrets. A volume source the walk cannot judge is refused too, as it might name any secret.
func unlistedSecret(pod *corev1.Pod, sa *corev1.ServiceAccount, ephemeralOnly bool) error {
	mountable, pullable := sets.New[string](), sets.New[string]()
	for _, s := range sa.Secrets {
		mountable.Insert(s.Name)
	}
	for _, s := range sa.ImagePullSecrets {
		pullable.Insert(s.Name)
	}
	var unlistedPull error
	for r := range podwalk.References(pod) {
		if ephemeralOnly && !r.Path.In("spec.ephemeralContainers") {
			continue
		}
		switch {
		case r.Kind == podwalk.Unknown:
			return fmt.Errorf("%s: a volume source this server cannot judge is not allowed because service account %s limits the secrets its pods may use", r.Path, sa.Name)
		case r.Kind != podwalk.Secret:
		case r.Path.In("spec.imagePullSecrets"):
			if unlistedPull == nil && !pullable.Has(r.Name) {
				unlistedPull = fmt.Errorf("%s: secret %q is not allowed because service account %s does not reference that imagePullSecret", r.Path, r.Name, sa.Name)
			}
		case !mountable.Has(r.Name):
			return fmt.Errorf("%s: secret %q is not allowed because service account %s does not reference that secret", r.Path, r.Name, sa.Name)
		}
	}
	return unlistedPull
}
