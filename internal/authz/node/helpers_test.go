package node

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func nodeUser(name string) user.Info {
	return &user.DefaultInfo{Name: "system:node:" + name, Groups: []string{"system:nodes", "system:authenticated"}}
}

// call describes a request in the tests' tables.
type call struct {
	verb, group, resource, sub, ns, name string
	// selector is a field selector, as in ?fieldSelector=.
	selector string
	path     string
}

func (r call) attrs(t testing.TB, u user.Info) authorizer.Attributes {
	t.Helper()
	a := &authorizer.AttributesRecord{
		User: u, Verb: r.verb, APIGroup: r.group, Resource: r.resource, Subresource: r.sub,
		Namespace: r.ns, Name: r.name, ResourceRequest: r.path == "", Path: r.path,
	}
	if r.selector != "" {
		sel, err := fields.ParseSelector(r.selector)
		if err != nil {
			t.Fatalf("field selector %q: %v", r.selector, err)
		}
		a.FieldSelectorRequirements = sel.Requirements()
	}
	return a
}

type podOption func(*corev1.Pod)

func newPod(namespace, name, node string, opts ...podOption) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID(namespace + "/" + name)},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c"}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withVolume(src corev1.VolumeSource) podOption {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "v" + string(rune('a'+len(p.Spec.Volumes))), VolumeSource: src})
	}
}

func withSecretVolume(name string) podOption {
	return withVolume(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}})
}

func withConfigMapVolume(name string) podOption {
	return withVolume(corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}})
}

func withClaim(name string) podOption {
	return withVolume(corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}})
}

func withServiceAccount(name string) podOption {
	return func(p *corev1.Pod) { p.Spec.ServiceAccountName = name }
}

func withRV(rv string) podOption {
	return func(p *corev1.Pod) { p.ResourceVersion = rv }
}

func newPV(name string, claim *corev1.ObjectReference, secret *corev1.SecretReference) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			ClaimRef: claim,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				CSI: &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: name, NodePublishSecretRef: secret},
			},
		},
	}
}

func claimRef(namespace, name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{Namespace: namespace, Name: name}
}

// decide asks a about r on behalf of node.
func decide(t testing.TB, a *Authorizer, node string, r call) (authorizer.Decision, string) {
	t.Helper()
	d, reason, err := a.Authorize(context.Background(), r.attrs(t, nodeUser(node)))
	if err != nil {
		t.Fatalf("Authorize(%+v): %v", r, err)
	}
	return d, reason
}
