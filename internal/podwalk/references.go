package podwalk

import (
	"iter"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/storage/ephemeral"
)

// Kind is the kind of API object a pod references.
type Kind uint8

const (
	// Unknown marks a volume or projection source the walk does not classify: a source added to
	// the API after this code was written. Callers that must fail closed refuse it.
	Unknown Kind = iota
	Secret
	ConfigMap
	ServiceAccount
	PersistentVolumeClaim
	ResourceClaim
	// ResourceClaimTemplate is a claim template the pod names; the claim made from it shows up
	// as a ResourceClaim reference once the pod's status records it.
	ResourceClaimTemplate
	// ClusterTrustBundle is named by a projected source, by bundle name or, when the source
	// selects bundles by signer, by signer name.
	ClusterTrustBundle
	// PodCertificate is a projected pod certificate; the reference names its signer.
	PodCertificate
	// CSIDriver is the driver of an inline CSI volume.
	CSIDriver
	// Endpoints are the endpoints a glusterfs volume names.
	Endpoints
	// NumKinds counts the kinds, for tables indexed by kind.
	NumKinds
)

var resources = [NumKinds]string{
	Unknown:               "unknown volume sources",
	Secret:                "secrets",
	ConfigMap:             "configmaps",
	ServiceAccount:        "serviceaccounts",
	PersistentVolumeClaim: "persistentvolumeclaims",
	ResourceClaim:         "resourceclaims",
	ResourceClaimTemplate: "resourceclaimtemplates",
	ClusterTrustBundle:    "clustertrustbundles",
	PodCertificate:        "podcertificaterequests",
	CSIDriver:             "csidrivers",
	Endpoints:             "endpoints",
}

// Resource is the plural resource name of the kind, as messages name it.
func (k Kind) Resource() string { return resources[k] }

// Reference is one API object a pod names. Name may be empty when the pod leaves it empty (an
// invalid pod, before validation has refused it): the reference is reported all the same.
type Reference struct {
	Kind Kind
	// Contents: the node puts the object's data in the pod, as a volume's files (secret,
	// configMap and projected sources) or a container's environment. Other objects serve the
	// node on the pod's behalf: its identity, pulling its images, a storage plugin's credentials,
	// its claims.
	Contents bool
	Name     string
	Path     Path
}

// Path locates a reference in the pod without building a field.Path, which allocates; the graph
// walks every pod it hears of and never needs one. At most three steps, each a dotted run of
// field names optionally followed by a list index.
type Path struct {
	steps [3]step
	n     uint8
}

type step struct {
	names string
	index int32 // -1: no index
}

func at(names string, index int) Path {
	return Path{steps: [3]step{{names, int32(index)}}, n: 1}
}

func (p Path) then(names string, index int) Path {
	p.steps[p.n] = step{names, int32(index)}
	p.n++
	return p
}

func (p Path) field(names string) Path { return p.then(names, -1) }

// Field returns the path as a field.Path from the pod's root.
func (p Path) Field() *field.Path {
	var fp *field.Path
	for _, s := range p.steps[:p.n] {
		for name := range strings.SplitSeq(s.names, ".") {
			if fp == nil {
				fp = field.NewPath(name)
			} else {
				fp = fp.Child(name)
			}
		}
		if s.index >= 0 {
			fp = fp.Index(int(s.index))
		}
	}
	return fp
}

func (p Path) String() string { return p.Field().String() }

// In reports whether the path starts with field, a field or list of the pod spelled as the walk
// starts its paths: "spec.imagePullSecrets", "spec.ephemeralContainers", "spec.volumes".
func (p Path) In(field string) bool { return p.n > 0 && p.steps[0].names == field }

// References yields every API object pod references: its service account, image pull secrets,
// the secrets and configmaps of every container's environment, every volume's objects (plain
// and projected sources, claims, secrets of CSI and in-tree plugins) and its resource claims.
// An object named twice is yielded twice.
func References(pod *corev1.Pod) iter.Seq[Reference] {
	return func(yield func(Reference) bool) {
		w := walker{pod: pod, yield: yield}
		w.walk()
	}
}

type walker struct {
	pod     *corev1.Pod
	yield   func(Reference) bool
	stopped bool
}

func (w *walker) emit(k Kind, name string, p Path) { w.report(Reference{Kind: k, Name: name, Path: p}) }

// contents reports an object whose data the node puts in the pod.
func (w *walker) contents(k Kind, name string, p Path) {
	w.report(Reference{Kind: k, Contents: true, Name: name, Path: p})
}

func (w *walker) report(r Reference) {
	if !w.stopped && !w.yield(r) {
		w.stopped = true
	}
}

func (w *walker) walk() {
	spec := &w.pod.Spec
	switch {
	case spec.ServiceAccountName != "":
		w.emit(ServiceAccount, spec.ServiceAccountName, at("spec.serviceAccountName", -1))
	case spec.DeprecatedServiceAccount != "":
		w.emit(ServiceAccount, spec.DeprecatedServiceAccount, at("spec.serviceAccount", -1))
	}
	for i, s := range spec.ImagePullSecrets {
		w.emit(Secret, s.Name, at("spec.imagePullSecrets", i).field("name"))
	}
	// Containers' order, without an iterator closure: the graph walks every pod it hears of.
	for k := range numContainerKinds {
		for i := range count(spec, k) {
			w.container(containerAt(spec, k, i))
		}
	}
	for i := range spec.Volumes {
		w.volume(&spec.Volumes[i], at("spec.volumes", i))
	}
	w.resourceClaims()
}

// specFieldNames are the container lists' paths from the pod, spelled out so that walking a
// container builds no string.
var specFieldNames = [numContainerKinds]string{
	InitContainer:      "spec.initContainers",
	RegularContainer:   "spec.containers",
	EphemeralContainer: "spec.ephemeralContainers",
}

func (w *walker) container(c Container) {
	base := at(specFieldNames[c.Kind], c.Index)
	for j, e := range c.EnvFrom {
		if e.SecretRef != nil {
			w.contents(Secret, e.SecretRef.Name, base.then("envFrom", j).field("secretRef.name"))
		}
		if e.ConfigMapRef != nil {
			w.contents(ConfigMap, e.ConfigMapRef.Name, base.then("envFrom", j).field("configMapRef.name"))
		}
	}
	for j, e := range c.Env {
		if e.ValueFrom == nil {
			continue
		}
		if r := e.ValueFrom.SecretKeyRef; r != nil {
			w.contents(Secret, r.Name, base.then("env", j).field("valueFrom.secretKeyRef.name"))
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
			w.contents(ConfigMap, r.Name, base.then("env", j).field("valueFrom.configMapKeyRef.name"))
		}
	}
}

// volume reports the objects of one volume. Sources backed only by the node or by storage
// outside the API report nothing; a source this walk does not know reports Unknown.
func (w *walker) volume(v *corev1.Volume, p Path) {
	s := &v.VolumeSource
	secretRef := func(source string, ref *corev1.LocalObjectReference) {
		if ref != nil {
			w.emit(Secret, ref.Name, p.field(source+".secretRef.name"))
		}
	}
	switch {
	case s.Secret != nil:
		w.contents(Secret, s.Secret.SecretName, p.field("secret.secretName"))
	case s.ConfigMap != nil:
		w.contents(ConfigMap, s.ConfigMap.Name, p.field("configMap.name"))
	case s.Projected != nil:
		for j := range s.Projected.Sources {
			w.projection(&s.Projected.Sources[j], p.then("projected.sources", j))
		}
	case s.PersistentVolumeClaim != nil:
		w.emit(PersistentVolumeClaim, s.PersistentVolumeClaim.ClaimName, p.field("persistentVolumeClaim.claimName"))
	case s.Ephemeral != nil:
		w.emit(PersistentVolumeClaim, ephemeral.VolumeClaimName(w.pod, v), p.field("ephemeral"))
	case s.CSI != nil:
		w.emit(CSIDriver, s.CSI.Driver, p.field("csi.driver"))
		if s.CSI.NodePublishSecretRef != nil {
			w.emit(Secret, s.CSI.NodePublishSecretRef.Name, p.field("csi.nodePublishSecretRef.name"))
		}
	case s.Glusterfs != nil:
		w.emit(Endpoints, s.Glusterfs.EndpointsName, p.field("glusterfs.endpoints"))
	case s.AzureFile != nil:
		w.emit(Secret, s.AzureFile.SecretName, p.field("azureFile.secretName"))
	case s.CephFS != nil:
		secretRef("cephfs", s.CephFS.SecretRef)
	case s.Cinder != nil:
		secretRef("cinder", s.Cinder.SecretRef)
	case s.FlexVolume != nil:
		secretRef("flexVolume", s.FlexVolume.SecretRef)
	case s.ISCSI != nil:
		secretRef("iscsi", s.ISCSI.SecretRef)
	case s.RBD != nil:
		secretRef("rbd", s.RBD.SecretRef)
	case s.ScaleIO != nil:
		secretRef("scaleIO", s.ScaleIO.SecretRef)
	case s.StorageOS != nil:
		secretRef("storageos", s.StorageOS.SecretRef)
	case s.AWSElasticBlockStore != nil, s.AzureDisk != nil, s.DownwardAPI != nil, s.EmptyDir != nil,
		s.FC != nil, s.Flocker != nil, s.GCEPersistentDisk != nil, s.GitRepo != nil, s.HostPath != nil,
		s.Image != nil, s.NFS != nil, s.PhotonPersistentDisk != nil, s.PortworxVolume != nil,
		s.Quobyte != nil, s.VsphereVolume != nil:
	default:
		w.emit(Unknown, v.Name, p)
	}
}

func (w *walker) projection(src *corev1.VolumeProjection, p Path) {
	switch {
	case src.Secret != nil:
		w.contents(Secret, src.Secret.Name, p.field("secret.name"))
	case src.ConfigMap != nil:
		w.contents(ConfigMap, src.ConfigMap.Name, p.field("configMap.name"))
	case src.ServiceAccountToken != nil:
		// The token is the pod's own service account's, which a walk reports already; the
		// source is reported too, since it is what asks the node to fetch a token.
		w.emit(ServiceAccount, w.pod.Spec.ServiceAccountName, p.field("serviceAccountToken"))
	case src.ClusterTrustBundle != nil:
		b := src.ClusterTrustBundle
		switch {
		case b.Name != nil:
			w.contents(ClusterTrustBundle, *b.Name, p.field("clusterTrustBundle.name"))
		case b.SignerName != nil:
			w.contents(ClusterTrustBundle, *b.SignerName, p.field("clusterTrustBundle.signerName"))
		default:
			w.contents(ClusterTrustBundle, "", p.field("clusterTrustBundle"))
		}
	case src.PodCertificate != nil:
		w.emit(PodCertificate, src.PodCertificate.SignerName, p.field("podCertificate.signerName"))
	case src.DownwardAPI != nil:
	default:
		w.emit(Unknown, "", p)
	}
}

// resourceClaims reports the claims a pod names, the templates it names, and the claims made for
// it that its status records (from templates, and for its extended resources).
func (w *walker) resourceClaims() {
	for i, c := range w.pod.Spec.ResourceClaims {
		p := at("spec.resourceClaims", i)
		switch {
		case c.ResourceClaimName != nil:
			w.emit(ResourceClaim, *c.ResourceClaimName, p.field("resourceClaimName"))
		case c.ResourceClaimTemplateName != nil:
			w.emit(ResourceClaimTemplate, *c.ResourceClaimTemplateName, p.field("resourceClaimTemplateName"))
		default:
			w.emit(ResourceClaim, "", p)
		}
	}
	for i, st := range w.pod.Status.ResourceClaimStatuses {
		if st.ResourceClaimName != nil && w.fromTemplate(st.Name) {
			w.emit(ResourceClaim, *st.ResourceClaimName, at("status.resourceClaimStatuses", i).field("resourceClaimName"))
		}
	}
	if ext := w.pod.Status.ExtendedResourceClaimStatus; ext != nil {
		w.emit(ResourceClaim, ext.ResourceClaimName, at("status.extendedResourceClaimStatus.resourceClaimName", -1))
	}
}

// fromTemplate reports whether the pod's claim of that name is not a named claim, so is made
// from a template: only such a claim's status names the claim that was made.
func (w *walker) fromTemplate(name string) bool {
	for _, c := range w.pod.Spec.ResourceClaims {
		if c.Name == name && c.ResourceClaimName == nil {
			return true
		}
	}
	return false
}
