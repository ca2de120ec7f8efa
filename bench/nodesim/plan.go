package main

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// tokenAudience is the audience of the short-lived projected token every simulated pod carries
// besides kube-api-access, standing for a workload-identity token.
const tokenAudience = "nodesim"

// podCertificateVolume is the projected volume of the podCertificate source, and
// credentialBundle the file in it that holds the private key and the certificate chain.
const podCertificateVolume, credentialBundle = "pod-certificate", "credentials.pem"

// podLabel marks the pods the tool creates.
const podLabel, podLabelValue = "app", "nodesim"

// plan lays out one level's objects: which pods run on which node, in which namespace, as which
// service account, reading which secret and configmap. It is pure arithmetic, so the setup and
// the nodes agree without sharing state.
type plan struct {
	// prefix starts the names of the nodes and namespaces: "nodesim" on a server the tool
	// started, and a fresh one per level on a server it did not, whose names outlive the level.
	prefix             string
	nodes, podsPerNode int
	namespaces         int
	serviceAccounts    int
	// sharedObjects > 0 makes the pods of a namespace share that many secrets and configmaps;
	// 0 gives every pod its own.
	sharedObjects int
	// tokenExpiration is the expirationSeconds of the extra projected token; 0 leaves it out.
	tokenExpiration int64
	// podCertificate, when set, is the signer of a podCertificate source every pod carries in
	// a projected volume of its own.
	podCertificate string
}

type podPlan struct {
	Namespace, Name, Node, ServiceAccount, Secret, ConfigMap string
}

func (p plan) pods() int { return p.nodes * p.podsPerNode }

func (p plan) nodeName(i int) string { return fmt.Sprintf("%s-%05d", p.namePrefix(), i) }

func (p plan) namespace(i int) string { return fmt.Sprintf("%s-%03d", p.namePrefix(), i) }

// ownsNode says whether node is one of this plan's nodes.
func (p plan) ownsNode(node string) bool {
	var i int
	n, err := fmt.Sscanf(node, p.namePrefix()+"-%05d", &i)
	return err == nil && n == 1 && i >= 0 && i < p.nodes && p.nodeName(i) == node
}

func (p plan) namePrefix() string {
	if p.prefix == "" {
		return "nodesim"
	}
	return p.prefix
}

func (p plan) serviceAccount(i int) string { return fmt.Sprintf("sa-%03d", i) }

// pod is the j-th pod of node i. Consecutive pods go to consecutive namespaces, so a node's pods
// spread over as many namespaces as there are.
func (p plan) pod(node, j int) podPlan {
	k := node*p.podsPerNode + j
	ns := k % p.namespaces
	// The k-th pod is the (k / namespaces)-th of its namespace.
	inNS := k / p.namespaces
	name := fmt.Sprintf("%s-%03d", p.nodeName(node), j)
	pp := podPlan{
		Namespace: p.namespace(ns), Name: name, Node: p.nodeName(node),
		ServiceAccount: p.serviceAccount(inNS % p.serviceAccounts),
		Secret:         name, ConfigMap: name,
	}
	if p.sharedObjects > 0 {
		shared := fmt.Sprintf("shared-%03d", inNS%p.sharedObjects)
		pp.Secret, pp.ConfigMap = shared, shared
	}
	return pp
}

// objectNames lists the secrets of the ns-th namespace; its configmaps have the same names.
func (p plan) objectNames(ns int) []string {
	if p.sharedObjects > 0 {
		n := min(p.sharedObjects, p.podsInNamespace(ns))
		names := make([]string, n)
		for i := range n {
			names[i] = fmt.Sprintf("shared-%03d", i)
		}
		return names
	}
	var names []string
	for k := ns; k < p.pods(); k += p.namespaces {
		names = append(names, p.pod(k/p.podsPerNode, k%p.podsPerNode).Name)
	}
	return names
}

func (p plan) podsInNamespace(ns int) int {
	if ns >= p.pods() {
		return 0
	}
	return (p.pods()-ns-1)/p.namespaces + 1
}

// podObject is the pod as the admin creates it: bound to its node, mounting its secret and
// configmap and, when asked, a short-lived token and a pod certificate. The ServiceAccount admission plugin adds
// kube-api-access (a token, the root CA configmap and the namespace).
func (p plan) podObject(pp podPlan) *corev1.Pod {
	mounts := []corev1.VolumeMount{
		{Name: "secret", MountPath: "/etc/secret", ReadOnly: true},
		{Name: "config", MountPath: "/etc/config", ReadOnly: true},
	}
	volumes := []corev1.Volume{
		{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: pp.Secret}}},
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: pp.ConfigMap}}}},
	}
	if p.tokenExpiration > 0 {
		mounts = append(mounts, corev1.VolumeMount{Name: "identity", MountPath: "/var/run/identity", ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: "identity", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
				Audience: tokenAudience, ExpirationSeconds: ptr.To(p.tokenExpiration), Path: "token",
			}}},
		}}})
	}
	if p.podCertificate != "" {
		mounts = append(mounts, corev1.VolumeMount{Name: podCertificateVolume, MountPath: "/var/run/pod-certificate", ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: podCertificateVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{PodCertificate: &corev1.PodCertificateProjection{
				SignerName: p.podCertificate, KeyType: "ECDSAP256", CredentialBundlePath: credentialBundle,
			}}},
		}}})
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: pp.Name, Namespace: pp.Namespace, Labels: map[string]string{podLabel: podLabelValue}},
		Spec: corev1.PodSpec{
			NodeName:           pp.Node,
			ServiceAccountName: pp.ServiceAccount,
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.k8s.io/pause:3.10", VolumeMounts: mounts,
			}},
			Volumes: volumes,
		},
	}
}
