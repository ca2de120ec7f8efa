package serviceaccount

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/idplane/idplane/internal/podwalk"
)

const ns = "ns1"

var (
	podsGVR       = corev1.SchemeGroupVersion.WithResource("pods")
	configMapsGVR = corev1.SchemeGroupVersion.WithResource("configmaps")
)

// request is one admission request; only what the plugin reads is set.
type request struct {
	obj, old    runtime.Object
	gvr         schema.GroupVersionResource
	subresource string
	op          admission.Operation
}

func (r request) attributes() admission.Attributes {
	var opts runtime.Object = &metav1.CreateOptions{}
	if r.op == admission.Update {
		opts = &metav1.UpdateOptions{}
	}
	return admission.NewAttributesRecord(r.obj, r.old, schema.GroupVersionKind{}, ns, "web", r.gvr, r.subresource, r.op, opts, false,
		&user.DefaultInfo{Name: "alice"})
}

func create(obj runtime.Object) request { return request{obj: obj, gvr: podsGVR, op: admission.Create} }

// addEphemeral is a write to pods/ephemeralcontainers adding a debug container to a running pod.
func addEphemeral(running *corev1.Pod, debug corev1.EphemeralContainer) request {
	updated := running.DeepCopy()
	updated.Spec.EphemeralContainers = append(updated.Spec.EphemeralContainers, debug)
	return request{obj: updated, old: running, gvr: podsGVR, subresource: "ephemeralcontainers", op: admission.Update}
}

// newPlugin returns a plugin whose synced cache holds cached and whose client reads live: two
// stores, so a test decides exactly what the cache misses.
func newPlugin(t *testing.T, cached, live []runtime.Object) (*Plugin, *fake.Clientset) {
	t.Helper()
	factory := informers.NewSharedInformerFactory(fake.NewClientset(cached...), 0)
	client := fake.NewClientset(live...)
	p := New()
	p.SetExternalKubeInformerFactory(factory)
	p.SetExternalKubeClientSet(client)
	p.retryInterval = func() time.Duration { return time.Millisecond }
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		factory.Shutdown()
	})
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("cache of %v did not sync", typ)
		}
	}
	return p, client
}

// admit runs the plugin as the admission chain does: the mutating phase, then the validating one.
func admit(p *Plugin, a admission.Attributes) error {
	if err := p.Admit(context.Background(), a, nil); err != nil {
		return err
	}
	return p.Validate(context.Background(), a, nil)
}

func account(name string, mods ...func(*corev1.ServiceAccount)) *corev1.ServiceAccount {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	for _, m := range mods {
		m(sa)
	}
	return sa
}

func enforcing(sa *corev1.ServiceAccount) {
	sa.Annotations = map[string]string{EnforceMountableSecretsAnnotation: "true"}
}

func listing(secrets ...string) func(*corev1.ServiceAccount) {
	return func(sa *corev1.ServiceAccount) {
		for _, s := range secrets {
			sa.Secrets = append(sa.Secrets, corev1.ObjectReference{Name: s})
		}
	}
}

func newPod(mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func runningAs(name string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount = name, name
	}
}

func automounting(v bool) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = ptr.To(v) }
}

func withSecretVolume(secret string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}})
	}
}

// mirror makes the pod a mirror pod, as its node writes one.
func mirror(p *corev1.Pod) {
	p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
	p.Spec.NodeName = "node1"
}

func withProjection(src corev1.VolumeProjection) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "proj", VolumeSource: corev1.VolumeSource{
			Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{src}},
		}})
	}
}

func secretEnv(secret string) corev1.EnvVar {
	return corev1.EnvVar{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: "password",
	}}}
}

// generatedVolume stands for the token volume's random name in expected pods.
const generatedVolume = "kube-api-access-?????"

var tokenMount = corev1.VolumeMount{Name: generatedVolume, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}

// tokenVolume is the volume's exact shape, spelled out here rather than taken from the plugin.
func tokenVolume(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To(int32(0o644)),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To(int64(3607))}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
				Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
			}}}},
		},
	}}}
}

// tokenMounted is what the plugin makes of a pod whose every init and regular container needs
// the token: each mounts it, and the volume is added last.
func tokenMounted(p *corev1.Pod) {
	for i := range p.Spec.InitContainers {
		p.Spec.InitContainers[i].VolumeMounts = append(p.Spec.InitContainers[i].VolumeMounts, tokenMount)
	}
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].VolumeMounts = append(p.Spec.Containers[i].VolumeMounts, tokenMount)
	}
	for i := range p.Spec.EphemeralContainers {
		p.Spec.EphemeralContainers[i].VolumeMounts = append(p.Spec.EphemeralContainers[i].VolumeMounts, tokenMount)
	}
	p.Spec.Volumes = append(p.Spec.Volumes, tokenVolume(generatedVolume))
}

var generatedName = regexp.MustCompile(`^kube-api-access-[a-z0-9]{5}$`)

// normalize checks the name of a token volume admission added to p (before is p as it came) and
// replaces it with generatedVolume, so that expected pods can be written out.
func normalize(t *testing.T, p, before *corev1.Pod) {
	t.Helper()
	rename := map[string]string{}
	for i, v := range p.Spec.Volumes {
		if i < len(before.Spec.Volumes) || !strings.HasPrefix(v.Name, TokenVolumePrefix) {
			continue
		}
		if !generatedName.MatchString(v.Name) {
			t.Errorf("token volume name %q does not match %s", v.Name, generatedName)
		}
		rename[v.Name] = generatedVolume
		p.Spec.Volumes[i].Name = generatedVolume
	}
	for c := range podwalk.Containers(&p.Spec) {
		for j, m := range c.VolumeMounts {
			if to, ok := rename[m.Name]; ok {
				c.VolumeMounts[j].Name = to
			}
		}
	}
}

func TestAdmission(t *testing.T) {
	defaultSA := account(DefaultServiceAccountName)
	cases := []struct {
		name         string
		cached, live []runtime.Object
		req          request
		// forbidden, when set, is the 403's expected message (a substring of it).
		forbidden string
		// want changes the request's object into the object expected after admission.
		want func(*corev1.Pod)
	}{
		{
			name:   "a pod naming no account runs as default",
			cached: []runtime.Object{defaultSA},
			req:    create(newPod()),
			want:   func(p *corev1.Pod) { runningAs("default")(p); tokenMounted(p) },
		},
		{
			name:   "a pod naming an account keeps it",
			cached: []runtime.Object{account("builder")},
			req:    create(newPod(runningAs("builder"))),
			want:   tokenMounted,
		},
		{
			name:      "a missing account refuses the pod",
			cached:    []runtime.Object{defaultSA},
			req:       create(newPod(runningAs("ghost"))),
			forbidden: `error looking up service account ns1/ghost: serviceaccount "ghost" not found`,
		},
		{
			name:      "a missing default account refuses the pod",
			req:       create(newPod()),
			forbidden: `error looking up service account ns1/default: serviceaccount "default" not found`,
		},
		{
			name:      "an account of another namespace does not count",
			cached:    []runtime.Object{&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "builder"}}},
			live:      []runtime.Object{&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "builder"}}},
			req:       create(newPod(runningAs("builder"))),
			forbidden: `serviceaccount "builder" not found`,
		},
		{
			name: "an account the cache misses is read from the server",
			live: []runtime.Object{account("fresh")},
			req:  create(newPod(runningAs("fresh"))),
			want: tokenMounted,
		},
		{
			name:   "the pod opts out of the token",
			cached: []runtime.Object{defaultSA},
			req:    create(newPod(automounting(false))),
			want:   runningAs("default"),
		},
		{
			name:   "the account opts out of the token",
			cached: []runtime.Object{account("quiet", func(sa *corev1.ServiceAccount) { sa.AutomountServiceAccountToken = ptr.To(false) })},
			req:    create(newPod(runningAs("quiet"))),
		},
		{
			name:   "the pod's choice wins over the account's",
			cached: []runtime.Object{account("quiet", func(sa *corev1.ServiceAccount) { sa.AutomountServiceAccountToken = ptr.To(false) })},
			req:    create(newPod(runningAs("quiet"), automounting(true))),
			want:   tokenMounted,
		},
		{
			name:   "the account opting in changes nothing",
			cached: []runtime.Object{account("loud", func(sa *corev1.ServiceAccount) { sa.AutomountServiceAccountToken = ptr.To(true) })},
			req:    create(newPod(runningAs("loud"))),
			want:   tokenMounted,
		},
		{
			name:   "init containers mount the token too",
			cached: []runtime.Object{defaultSA},
			req: create(newPod(runningAs("default"), func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "setup"}, {Name: "migrate"}}
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "sidecar"})
			})),
			want: tokenMounted,
		},
		{
			// Validation refuses them on create, but none may slip through without the token.
			name:   "ephemeral containers in a pod being created are given the token",
			cached: []runtime.Object{defaultSA},
			req: create(newPod(runningAs("default"), func(p *corev1.Pod) {
				p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"}}}
			})),
			want: tokenMounted,
		},
		{
			name:   "a container with its own mount at the path keeps it",
			cached: []runtime.Object{defaultSA},
			req: create(newPod(runningAs("default"), func(p *corev1.Pod) {
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "custom", VolumeMounts: []corev1.VolumeMount{
					{Name: "own", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"},
				}})
				p.Spec.Volumes = []corev1.Volume{{Name: "own", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			})),
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{tokenMount}
				p.Spec.Volumes = append(p.Spec.Volumes, tokenVolume(generatedVolume))
			},
		},
		{
			name:   "no volume is added when every container has its own mount at the path",
			cached: []runtime.Object{defaultSA},
			req: create(newPod(runningAs("default"), func(p *corev1.Pod) {
				p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "own", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}
				p.Spec.Volumes = []corev1.Volume{{Name: "own", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			})),
		},
		{
			name:   "a volume already named kube-api-access-* is mounted instead of a new one",
			cached: []runtime.Object{defaultSA},
			req: create(newPod(runningAs("default"), func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{tokenVolume("kube-api-access-mine1")}
			})),
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "kube-api-access-mine1", ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}
			},
		},
		{
			name: "a mirror pod that names no account or secret is left alone",
			req: create(newPod(mirror, func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "conf"},
				}}}}
			})),
		},
		{
			// The review's pod: its account does not exist, and it would not matter if it did.
			name: "a mirror pod naming an account, a secret and a token projection is refused for the account",
			req: create(newPod(mirror, runningAs("ghost"), withSecretVolume("db"), withProjection(corev1.VolumeProjection{
				ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"},
			}))),
			forbidden: "a mirror pod may not reference service accounts",
		},
		{
			name:      "a mirror pod naming an existing account is refused",
			cached:    []runtime.Object{defaultSA},
			req:       create(newPod(mirror, runningAs("default"))),
			forbidden: "a mirror pod may not reference service accounts",
		},
		{
			name:      "a mirror pod naming a secret is refused",
			req:       create(newPod(mirror, withSecretVolume("db"))),
			forbidden: "a mirror pod may not reference secrets",
		},
		{
			name: "a mirror pod naming a secret in a projection is refused",
			req: create(newPod(mirror, withProjection(corev1.VolumeProjection{
				Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}},
			}))),
			forbidden: "a mirror pod may not reference secrets",
		},
		{
			name: "a mirror pod with a token projection is refused",
			req: create(newPod(mirror, withProjection(corev1.VolumeProjection{
				ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"},
			}))),
			forbidden: "a mirror pod may not use ServiceAccountToken volume projections",
		},
		{
			name: "a mirror pod with a pod certificate projection is refused",
			req: create(newPod(mirror, withProjection(corev1.VolumeProjection{
				PodCertificate: &corev1.PodCertificateProjection{SignerName: "example.com/s", CredentialBundlePath: "creds.pem"},
			}))),
			forbidden: "a mirror pod may not use PodCertificate volume projections",
		},
		{
			name: "a mirror pod with a cluster trust bundle projection is refused",
			req: create(newPod(mirror, withProjection(corev1.VolumeProjection{
				ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com/s"), Path: "ca.pem"},
			}))),
			forbidden: "a mirror pod may not use ClusterTrustBundle volume projections",
		},
		{
			name: "a mirror pod with a volume source the server cannot judge is refused",
			req: create(newPod(mirror, func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "odd"}}
			})),
			forbidden: "a mirror pod may not use a volume source this server cannot judge",
		},
		{
			name: "a debug container of a mirror pod is refused",
			req: addEphemeral(newPod(mirror), corev1.EphemeralContainer{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox", Env: []corev1.EnvVar{secretEnv("db")}},
			}),
			forbidden: "no service account specified for pod ns1/web",
		},
		{
			name: "the account's pull secrets go to a pod that names none",
			cached: []runtime.Object{account("puller", func(sa *corev1.ServiceAccount) {
				sa.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
			})},
			req: create(newPod(runningAs("puller"), automounting(false))),
			want: func(p *corev1.Pod) {
				p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
			},
		},
		{
			name: "a pod's own pull secrets are kept",
			cached: []runtime.Object{account("puller", func(sa *corev1.ServiceAccount) {
				sa.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
			})},
			req: create(newPod(runningAs("puller"), automounting(false), func(p *corev1.Pod) {
				p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "mine"}}
			})),
		},
		{
			name:   "secrets are not limited without the annotation",
			cached: []runtime.Object{account("open")},
			req:    create(newPod(runningAs("open"), automounting(false), withSecretVolume("anything"))),
		},
		{
			name:   "a listed secret volume is allowed",
			cached: []runtime.Object{account("strict", enforcing, listing("db"))},
			req:    create(newPod(runningAs("strict"), automounting(false), withSecretVolume("db"))),
		},
		{
			name:      "an unlisted secret volume is refused",
			cached:    []runtime.Object{account("strict", enforcing, listing("db"))},
			req:       create(newPod(runningAs("strict"), withSecretVolume("other"))),
			forbidden: `spec.volumes[0].secret.secretName: secret "other" is not allowed because service account strict does not reference that secret`,
		},
		{
			name:   "an unlisted secret in an init container's environment is refused",
			cached: []runtime.Object{account("strict", enforcing, listing("db"))},
			req: create(newPod(runningAs("strict"), func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "setup", Env: []corev1.EnvVar{secretEnv("db"), secretEnv("other")}}}
			})),
			forbidden: `spec.initContainers[0].env[1].valueFrom.secretKeyRef.name: secret "other" is not allowed`,
		},
		{
			name:   "an unlisted secret in envFrom is refused",
			cached: []runtime.Object{account("strict", enforcing, listing("db"))},
			req: create(newPod(runningAs("strict"), func(p *corev1.Pod) {
				p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "other"}}}}
			})),
			forbidden: `spec.containers[0].envFrom[0].secretRef.name: secret "other" is not allowed`,
		},
		{
			name:   "an unlisted secret in a projection is refused",
			cached: []runtime.Object{account("strict", enforcing, listing("db"))},
			req: create(newPod(runningAs("strict"), withProjection(corev1.VolumeProjection{
				Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "other"}},
			}))),
			forbidden: `spec.volumes[0].projected.sources[0].secret.name: secret "other" is not allowed because service account strict does not reference that secret`,
		},
		{
			name:   "an unlisted CSI node publish secret is refused",
			cached: []runtime.Object{account("strict", enforcing, listing("db"))},
			req: create(newPod(runningAs("strict"), func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
					Driver: "d.example.com", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "other"},
				}}}}
			})),
			forbidden: `spec.volumes[0].csi.nodePublishSecretRef.name: secret "other" is not allowed`,
		},
		{
			name:   "an unlisted azureFile secret is refused",
			cached: []runtime.Object{account("strict", enforcing, listing("db"))},
			req: create(newPod(runningAs("strict"), func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "az", VolumeSource: corev1.VolumeSource{AzureFile: &corev1.AzureFileVolumeSource{
					SecretName: "other", ShareName: "share",
				}}}}
			})),
			forbidden: `spec.volumes[0].azureFile.secretName: secret "other" is not allowed`,
		},
		{
			name:   "listed secrets in a projection and a CSI volume are allowed",
			cached: []runtime.Object{account("strict", enforcing, listing("db", "csi"))},
			req: create(newPod(runningAs("strict"), automounting(false), withProjection(corev1.VolumeProjection{
				Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}},
			}), func(p *corev1.Pod) {
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
					Driver: "d.example.com", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi"},
				}}})
			})),
		},
		{
			name:   "an unlisted pull secret is refused",
			cached: []runtime.Object{account("strict", enforcing, listing("registry"))},
			req: create(newPod(runningAs("strict"), func(p *corev1.Pod) {
				p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
			})),
			forbidden: `spec.imagePullSecrets[0].name: secret "registry" is not allowed because service account strict does not reference that imagePullSecret`,
		},
		{
			name:   "a debug container is given the pod's token volume",
			cached: []runtime.Object{defaultSA},
			req: addEphemeral(newPod(runningAs("default"), tokenMounted), corev1.EphemeralContainer{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"},
			}),
			want: func(p *corev1.Pod) {
				p.Spec.EphemeralContainers[0].VolumeMounts = []corev1.VolumeMount{tokenMount}
			},
		},
		{
			name:   "an earlier debug container is left as it is",
			cached: []runtime.Object{defaultSA},
			req: addEphemeral(newPod(runningAs("default"), tokenMounted, func(p *corev1.Pod) {
				p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "earlier"}}}
			}), corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}),
			want: func(p *corev1.Pod) {
				p.Spec.EphemeralContainers[1].VolumeMounts = []corev1.VolumeMount{tokenMount}
			},
		},
		{
			name:   "a debug container of a pod without the token gets none",
			cached: []runtime.Object{defaultSA},
			req: addEphemeral(newPod(runningAs("default")), corev1.EphemeralContainer{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"},
			}),
		},
		{
			name: "a debug container needs the pod's account to exist",
			req: addEphemeral(newPod(runningAs("gone")), corev1.EphemeralContainer{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"},
			}),
			forbidden: `error looking up service account ns1/gone: serviceaccount "gone" not found`,
		},
		{
			name: "a debug container of a pod with no account is refused",
			req: addEphemeral(newPod(), corev1.EphemeralContainer{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"},
			}),
			forbidden: "no service account specified for pod ns1/web",
		},
		{
			name:   "a debug container with an unlisted secret is refused",
			cached: []runtime.Object{account("strict", enforcing, listing("db"))},
			req: addEphemeral(newPod(runningAs("strict")), corev1.EphemeralContainer{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox", Env: []corev1.EnvVar{secretEnv("other")}},
			}),
			forbidden: `spec.ephemeralContainers[0].env[0].valueFrom.secretKeyRef.name: secret "other" is not allowed`,
		},
		{
			name:   "a debug container of a pod with an unlisted secret volume is allowed",
			cached: []runtime.Object{account("strict", enforcing, listing("db"))},
			req: addEphemeral(newPod(runningAs("strict"), withSecretVolume("other")), corev1.EphemeralContainer{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox", Env: []corev1.EnvVar{secretEnv("db")}},
			}),
		},
		{
			name: "an update of a pod is not checked",
			req:  request{obj: newPod(runningAs("gone")), old: newPod(runningAs("gone")), gvr: podsGVR, op: admission.Update},
		},
		{
			name: "other pod subresources are not checked",
			req:  request{obj: newPod(), old: newPod(), gvr: podsGVR, subresource: "status", op: admission.Update},
		},
		{
			name: "other resources are ignored",
			req:  request{obj: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}, gvr: configMapsGVR, op: admission.Create},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newPlugin(t, tc.cached, tc.live)
			original := tc.req.obj.DeepCopyObject()
			err := admit(p, tc.req.attributes())
			if tc.forbidden != "" {
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.forbidden) {
					t.Fatalf("got %v; want 403 containing %q", err, tc.forbidden)
				}
				return
			}
			if err != nil {
				t.Fatalf("got %v; want allowed", err)
			}
			pod, ok := tc.req.obj.(*corev1.Pod)
			if !ok {
				if diff := cmp.Diff(original, tc.req.obj); diff != "" {
					t.Errorf("object changed (-before +after):\n%s", diff)
				}
				return
			}
			want := original.(*corev1.Pod)
			normalize(t, pod, want)
			if tc.want != nil {
				tc.want(want)
			}
			if diff := cmp.Diff(want, pod); diff != "" {
				t.Errorf("pod after admission (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLookupsOfMissingAccounts checks how often the server is asked before a pod is refused: the
// default account, which a controller creates with the namespace, gets several chances.
func TestLookupsOfMissingAccounts(t *testing.T) {
	cases := []struct {
		name    string
		account string
		want    int
	}{
		{name: "default", account: "default", want: defaultAccountLookups},
		{name: "another account", account: "builder", want: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, client := newPlugin(t, nil, nil)
			if err := admit(p, create(newPod(runningAs(tc.account))).attributes()); !apierrors.IsForbidden(err) {
				t.Fatalf("got %v; want 403", err)
			}
			gets := 0
			for _, a := range client.Actions() {
				if a.Matches("get", "serviceaccounts") {
					gets++
				}
			}
			if gets != tc.want {
				t.Errorf("server asked %d times; want %d", gets, tc.want)
			}
		})
	}
}

// TestLookupStopsWithTheRequest checks that a request given up on does not keep waiting for the
// default account.
func TestLookupStopsWithTheRequest(t *testing.T) {
	p, _ := newPlugin(t, nil, nil)
	p.retryInterval = func() time.Duration { return time.Hour }
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := p.Admit(ctx, create(newPod()).attributes(), nil)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), context.DeadlineExceeded.Error()) {
		t.Fatalf("got %v; want 403 naming the deadline", err)
	}
}

// TestTokenVolumeNamesDiffer checks that the volume name is random, not fixed.
func TestTokenVolumeNamesDiffer(t *testing.T) {
	p, _ := newPlugin(t, []runtime.Object{account(DefaultServiceAccountName)}, nil)
	names := map[string]bool{}
	for range 5 {
		pod := newPod()
		if err := admit(p, create(pod).attributes()); err != nil {
			t.Fatal(err)
		}
		names[pod.Spec.Volumes[0].Name] = true
	}
	if len(names) < 2 {
		t.Errorf("five pods got token volumes named %v", names)
	}
}

func TestValidateInitialization(t *testing.T) {
	if err := New().ValidateInitialization(); err == nil {
		t.Error("a plugin with neither lister nor client initialized")
	}
}
