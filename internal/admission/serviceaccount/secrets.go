package serviceaccount

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	"github.com/idplane/idplane/internal/podwalk"
)

// forbidUnlistedSecrets refuses a pod that uses a secret its account does not list, when the
// account enforces mountable secrets. As upstream, what is checked is secret volumes, secret
// environment of the containers and image pull secrets; on the ephemeralcontainers subresource,
// only the environment of ephemeral containers, since nothing else may change there.
func forbidUnlistedSecrets(a admission.Attributes, pod *corev1.Pod, sa *corev1.ServiceAccount) error {
	if !enforcesMountableSecrets(sa) {
		return nil
	}
	if err := unlistedSecret(pod, sa, a.GetSubresource() == "ephemeralcontainers"); err != nil {
		return admission.NewForbidden(a, err)
	}
	return nil
}

func unlistedSecret(pod *corev1.Pod, sa *corev1.ServiceAccount, ephemeralOnly bool) error {
	mountable := sets.New[string]()
	for _, s := range sa.Secrets {
		mountable.Insert(s.Name)
	}
	refuse := func(path *field.Path, secret string) error {
		return fmt.Errorf("%s: secret %q is not allowed because service account %s does not reference that secret", path, secret, sa.Name)
	}
	specPath := field.NewPath("spec")
	if !ephemeralOnly {
		for i, v := range pod.Spec.Volumes {
			if v.Secret != nil && !mountable.Has(v.Secret.SecretName) {
				return refuse(specPath.Child("volumes").Index(i).Child("secret", "secretName"), v.Secret.SecretName)
			}
		}
	}
	for c := range podwalk.Containers(&pod.Spec) {
		if ephemeralOnly && c.Kind != podwalk.EphemeralContainer {
			continue
		}
		for i, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && !mountable.Has(e.ValueFrom.SecretKeyRef.Name) {
				return refuse(c.Path(specPath).Child("env").Index(i).Child("valueFrom", "secretKeyRef", "name"), e.ValueFrom.SecretKeyRef.Name)
			}
		}
		for i, e := range c.EnvFrom {
			if e.SecretRef != nil && !mountable.Has(e.SecretRef.Name) {
				return refuse(c.Path(specPath).Child("envFrom").Index(i).Child("secretRef", "name"), e.SecretRef.Name)
			}
		}
	}
	if ephemeralOnly {
		return nil
	}
	pullable := sets.New[string]()
	for _, s := range sa.ImagePullSecrets {
		pullable.Insert(s.Name)
	}
	for i, s := range pod.Spec.ImagePullSecrets {
		if !pullable.Has(s.Name) {
			return fmt.Errorf("%s: secret %q is not allowed because service account %s does not reference that imagePullSecret",
				specPath.Child("imagePullSecrets").Index(i).Child("name"), s.Name, sa.Name)
		}
	}
	return nil
}
