// Package defaults fills in the fields the Kubernetes API server defaults when it decodes the
// stock k8s.io/api types idplane serves. idplane has no internal types, so these run on the
// external objects themselves; the rules follow upstream Kubernetes 1.37.
package defaults

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// RegisterDefaults adds idplane's defaulting functions for every served type to s.
//
// Types upstream does not default (ServiceAccount, Event, Lease, Binding, Eviction, CSINode,
// CertificateSigningRequest, Role, ClusterRole) get no function, as upstream.
func RegisterDefaults(s *runtime.Scheme) {
	register(s, Pod)
	register(s, PodList)
	register(s, Node)
	register(s, NodeList)
	register(s, Namespace)
	register(s, NamespaceList)
	register(s, Secret)
	register(s, SecretList)
	register(s, ConfigMap)
	register(s, ConfigMapList)
	register(s, PersistentVolume)
	register(s, PersistentVolumeList)
	register(s, PersistentVolumeClaim)
	register(s, PersistentVolumeClaimList)
	register(s, VolumeAttachment)
	register(s, VolumeAttachmentList)
	register(s, RoleBinding)
	register(s, RoleBindingList)
	register(s, ClusterRoleBinding)
	register(s, ClusterRoleBindingList)
	register(s, CertificateSigningRequestV1beta1)
	register(s, CertificateSigningRequestListV1beta1)
	register(s, Service)
	register(s, ServiceList)
	register(s, Endpoints)
	register(s, EndpointsList)
	register(s, EndpointSlice)
	register(s, EndpointSliceList)
	register(s, PodCertificateRequest)
	register(s, PodCertificateRequestList)
	register(s, PodCertificateRequestV1beta1)
	register(s, PodCertificateRequestListV1beta1)
	register(s, FlowSchema)
	register(s, FlowSchemaList)
	register(s, PriorityLevelConfiguration)
	register(s, PriorityLevelConfigurationList)
}

func register[T any, PT interface {
	*T
	runtime.Object
}](s *runtime.Scheme, fn func(PT)) {
	s.AddTypeDefaultingFunc(PT(new(T)), func(obj any) { fn(obj.(PT)) })
}

// orDefault sets *field to value when the client left it at its zero value. Most of
// upstream's defaults are exactly that, so each type's defaults read as a list of
// field/value lines.
func orDefault[T comparable](field *T, value T) {
	var zero T
	if *field == zero {
		*field = value
	}
}

// orDefaultPtr points an optional field the client left unset at its own copy of value.
func orDefaultPtr[T any](field **T, value T) {
	if *field == nil {
		*field = &value
	}
}

// roundResources rounds every quantity up to milli precision: the API has always stored
// quantities that way, and rejecting finer values would break existing clients.
func roundResources(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(-3)
		list[name] = q
	}
}
