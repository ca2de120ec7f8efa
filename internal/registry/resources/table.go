package resources

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	netutils "k8s.io/utils/net"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	windowsv1 "github.com/idplane/idplane/api/windows/v1"
	"github.com/idplane/idplane/internal/registry/store"
	"github.com/idplane/idplane/internal/validation"
)

var (
	statusPath   = []fieldpath.Path{fieldpath.MakePathOrDie("status")}
	specPath     = []fieldpath.Path{fieldpath.MakePathOrDie("spec")}
	metaSpecPath = []fieldpath.Path{fieldpath.MakePathOrDie("metadata"), fieldpath.MakePathOrDie("spec")}
)

// table is every resource without behaviour of its own.
func table() []row {
	return []row{
		resource[*corev1.Secret]{
			gv: corev1.SchemeGroupVersion, plural: "secrets", singular: "secret", kind: "Secret",
			newObj:  func() runtime.Object { return &corev1.Secret{} },
			newList: func() runtime.Object { return &corev1.SecretList{} },
			rules: store.Rules[*corev1.Secret]{
				Namespaced: true, Validate: validation.ValidateSecret, ValidateUpdate: validation.ValidateSecretUpdate,
			},
		},
		resource[*corev1.ConfigMap]{
			gv: corev1.SchemeGroupVersion, plural: "configmaps", singular: "configmap", kind: "ConfigMap",
			newObj:  func() runtime.Object { return &corev1.ConfigMap{} },
			newList: func() runtime.Object { return &corev1.ConfigMapList{} },
			rules: store.Rules[*corev1.ConfigMap]{
				Namespaced: true, Validate: validation.ValidateConfigMap, ValidateUpdate: validation.ValidateConfigMapUpdate,
			},
			shortNames: []string{"cm"},
		},
		// TokenRequests, the subresource with behaviour, are the serviceaccount package's.
		resource[*corev1.ServiceAccount]{
			gv: corev1.SchemeGroupVersion, plural: "serviceaccounts", singular: "serviceaccount", kind: "ServiceAccount",
			newObj:  func() runtime.Object { return &corev1.ServiceAccount{} },
			newList: func() runtime.Object { return &corev1.ServiceAccountList{} },
			rules: store.Rules[*corev1.ServiceAccount]{
				Namespaced: true, Validate: validation.ValidateServiceAccount, ValidateUpdate: validation.ValidateServiceAccountUpdate,
			},
			shortNames: []string{"sa"},
		},
		resource[*corev1.Event]{
			gv: corev1.SchemeGroupVersion, plural: "events", singular: "event", kind: "Event",
			newObj:  func() runtime.Object { return &corev1.Event{} },
			newList: func() runtime.Object { return &corev1.EventList{} },
			rules: store.Rules[*corev1.Event]{
				Namespaced: true, Validate: validation.ValidateEvent, ValidateUpdate: validation.ValidateEventUpdate,
				// Clients record events with PUT as well as POST, as upstream allows.
				AllowCreateOnUpdate: true,
			},
			shortNames: []string{"ev"},
			// Events are history, not state: etcd drops them an hour after their last update.
			ttlSeconds: 3600,
		},
		// A node registers itself with its status already filled in, so create keeps status.
		resource[*corev1.Node]{
			gv: corev1.SchemeGroupVersion, plural: "nodes", singular: "node", kind: "Node",
			newObj:  func() runtime.Object { return &corev1.Node{} },
			newList: func() runtime.Object { return &corev1.NodeList{} },
			rules: store.Rules[*corev1.Node]{
				PrepareForUpdate: func(n, old *corev1.Node) { n.Status = old.Status },
				Validate:         validation.ValidateNode,
				ValidateUpdate:   validation.ValidateNodeUpdate,
				ResetFields:      statusPath,
			},
			status: &store.Rules[*corev1.Node]{
				PrepareForUpdate: func(n, old *corev1.Node) { n.Spec = old.Spec },
				ValidateUpdate:   validation.ValidateNodeStatusUpdate,
				ResetFields:      specPath,
			},
			shortNames: []string{"no"},
		},
		resource[*corev1.PersistentVolume]{
			gv: corev1.SchemeGroupVersion, plural: "persistentvolumes", singular: "persistentvolume", kind: "PersistentVolume",
			newObj:  func() runtime.Object { return &corev1.PersistentVolume{} },
			newList: func() runtime.Object { return &corev1.PersistentVolumeList{} },
			rules: store.Rules[*corev1.PersistentVolume]{
				PrepareForCreate: func(pv *corev1.PersistentVolume) {
					pv.Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumePending}
				},
				PrepareForUpdate: func(pv, old *corev1.PersistentVolume) { pv.Status = old.Status },
				Validate:         validation.ValidatePersistentVolume,
				ValidateUpdate:   validation.ValidatePersistentVolumeUpdate,
				ResetFields:      statusPath,
			},
			status: &store.Rules[*corev1.PersistentVolume]{
				PrepareForUpdate: func(pv, old *corev1.PersistentVolume) { pv.Spec = old.Spec },
				ValidateUpdate:   validation.ValidatePersistentVolumeStatusUpdate,
				ResetFields:      specPath,
			},
			shortNames: []string{"pv"},
		},
		resource[*corev1.PersistentVolumeClaim]{
			gv: corev1.SchemeGroupVersion, plural: "persistentvolumeclaims", singular: "persistentvolumeclaim", kind: "PersistentVolumeClaim",
			newObj:  func() runtime.Object { return &corev1.PersistentVolumeClaim{} },
			newList: func() runtime.Object { return &corev1.PersistentVolumeClaimList{} },
			rules: store.Rules[*corev1.PersistentVolumeClaim]{
				Namespaced: true,
				PrepareForCreate: func(pvc *corev1.PersistentVolumeClaim) {
					pvc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}
				},
				PrepareForUpdate: func(pvc, old *corev1.PersistentVolumeClaim) { pvc.Status = old.Status },
				Validate:         validation.ValidatePersistentVolumeClaim,
				ValidateUpdate:   validation.ValidatePersistentVolumeClaimUpdate,
				ResetFields:      statusPath,
			},
			status: &store.Rules[*corev1.PersistentVolumeClaim]{
				PrepareForUpdate: func(pvc, old *corev1.PersistentVolumeClaim) { pvc.Spec = old.Spec },
				ValidateUpdate:   validation.ValidatePersistentVolumeClaimStatusUpdate,
				ResetFields:      specPath,
			},
			shortNames: []string{"pvc"},
		},
		// Only default/kubernetes may exist (validation refuses the others): its replicas keep
		// it, and these rows let admins read and, as upstream, update or delete it, which the
		// replicas then undo.
		resource[*corev1.Service]{
			gv: corev1.SchemeGroupVersion, plural: "services", singular: "service", kind: "Service",
			newObj:  func() runtime.Object { return &corev1.Service{} },
			newList: func() runtime.Object { return &corev1.ServiceList{} },
			rules: store.Rules[*corev1.Service]{
				Namespaced: true,
				PrepareForCreate: func(s *corev1.Service) {
					s.Status = corev1.ServiceStatus{}
					singleStack(&s.Spec)
				},
				PrepareForUpdate: func(s, old *corev1.Service) {
					s.Status = old.Status
					singleStack(&s.Spec)
				},
				Validate: validation.ValidateService, ValidateUpdate: validation.ValidateServiceUpdate,
				ResetFields: statusPath,
			},
			shortNames: []string{"svc"},
			categories: []string{"all"},
		},
		//lint:ignore SA1019 deprecated, still served: the kubernetes Service's Endpoints.
		resource[*corev1.Endpoints]{
			gv: corev1.SchemeGroupVersion, plural: "endpoints", singular: "endpoints", kind: "Endpoints",
			//lint:ignore SA1019 deprecated, still served: the kubernetes Service's Endpoints.
			newObj:  func() runtime.Object { return &corev1.Endpoints{} },
			newList: func() runtime.Object { return &corev1.EndpointsList{} },
			//lint:ignore SA1019 deprecated, still served: the kubernetes Service's Endpoints.
			rules: store.Rules[*corev1.Endpoints]{
				Namespaced: true, Validate: validation.ValidateEndpoints, ValidateUpdate: validation.ValidateEndpointsUpdate,
			},
			shortNames: []string{"ep"},
		},
		resource[*discoveryv1.EndpointSlice]{
			gv: discoveryv1.SchemeGroupVersion, plural: "endpointslices", singular: "endpointslice", kind: "EndpointSlice",
			newObj:  func() runtime.Object { return &discoveryv1.EndpointSlice{} },
			newList: func() runtime.Object { return &discoveryv1.EndpointSliceList{} },
			rules: store.Rules[*discoveryv1.EndpointSlice]{
				Namespaced: true, Validate: validation.ValidateEndpointSlice, ValidateUpdate: validation.ValidateEndpointSliceUpdate,
			},
		},
		resource[*coordinationv1.Lease]{
			gv: coordinationv1.SchemeGroupVersion, plural: "leases", singular: "lease", kind: "Lease",
			newObj:  func() runtime.Object { return &coordinationv1.Lease{} },
			newList: func() runtime.Object { return &coordinationv1.LeaseList{} },
			rules: store.Rules[*coordinationv1.Lease]{
				Namespaced: true, Validate: validation.ValidateLease, ValidateUpdate: validation.ValidateLeaseUpdate,
				// Leader-election clients take a lease with PUT when it does not exist yet.
				AllowCreateOnUpdate: true,
			},
		},
		resource[*certificatesv1.ClusterTrustBundle]{
			gv: certificatesv1.SchemeGroupVersion, plural: "clustertrustbundles", singular: "clustertrustbundle", kind: "ClusterTrustBundle",
			newObj:  func() runtime.Object { return &certificatesv1.ClusterTrustBundle{} },
			newList: func() runtime.Object { return &certificatesv1.ClusterTrustBundleList{} },
			rules: store.Rules[*certificatesv1.ClusterTrustBundle]{
				Validate: validation.ValidateClusterTrustBundle, ValidateUpdate: validation.ValidateClusterTrustBundleUpdate,
			},
		},
		// Status (storage health) is written upstream only through csinodes/status behind the
		// alpha CSIVolumeHealth gate, which idplane does not serve: create clears it and updates
		// keep the stored one.
		resource[*storagev1.CSINode]{
			gv: storagev1.SchemeGroupVersion, plural: "csinodes", singular: "csinode", kind: "CSINode",
			newObj:  func() runtime.Object { return &storagev1.CSINode{} },
			newList: func() runtime.Object { return &storagev1.CSINodeList{} },
			rules: store.Rules[*storagev1.CSINode]{
				PrepareForCreate: func(n *storagev1.CSINode) { n.Status = storagev1.CSINodeStatus{} },
				PrepareForUpdate: func(n, old *storagev1.CSINode) { n.Status = old.Status },
				Validate:         validation.ValidateCSINode,
				ValidateUpdate:   validation.ValidateCSINodeUpdate,
				ResetFields:      statusPath,
			},
			// As upstream, DELETE answers with the deleted object rather than a Status.
			returnDeleted: true,
		},
		// The attach/detach controller writes the spec (which volume on which node) once; the
		// external attacher reports progress through status. A new attachment starts with no
		// status, since only the attacher may say a volume is attached.
		resource[*storagev1.VolumeAttachment]{
			gv: storagev1.SchemeGroupVersion, plural: "volumeattachments", singular: "volumeattachment", kind: "VolumeAttachment",
			newObj:  func() runtime.Object { return &storagev1.VolumeAttachment{} },
			newList: func() runtime.Object { return &storagev1.VolumeAttachmentList{} },
			rules: store.Rules[*storagev1.VolumeAttachment]{
				PrepareForCreate: func(va *storagev1.VolumeAttachment) { va.Status = storagev1.VolumeAttachmentStatus{} },
				PrepareForUpdate: func(va, old *storagev1.VolumeAttachment) { va.Status = old.Status },
				Validate:         validation.ValidateVolumeAttachment,
				ValidateUpdate:   validation.ValidateVolumeAttachmentUpdate,
				ResetFields:      statusPath,
			},
			// The attacher may write status without retargeting the attachment or touching its
			// labels, annotations, finalizers or owners.
			status: &store.Rules[*storagev1.VolumeAttachment]{
				PrepareForUpdate: func(va, old *storagev1.VolumeAttachment) {
					va.Spec = old.Spec
					metav1.ResetObjectMetaForStatus(&va.ObjectMeta, &old.ObjectMeta)
				},
				ValidateUpdate: validation.ValidateVolumeAttachmentStatusUpdate,
				ResetFields:    metaSpecPath,
			},
			// As upstream, DELETE answers with the deleted attachment rather than a Status.
			returnDeleted: true,
		},
		// API Priority and Fairness configuration: admins write the specs (the server itself
		// keeps the mandatory and suggested ones), the config consumer writes status. As upstream,
		// the generation counts spec changes, which the config producer reads to tell an admin's
		// edit from its own objects.
		resource[*flowcontrolv1.FlowSchema]{
			gv: flowcontrolv1.SchemeGroupVersion, plural: "flowschemas", singular: "flowschema", kind: "FlowSchema",
			newObj:  func() runtime.Object { return &flowcontrolv1.FlowSchema{} },
			newList: func() runtime.Object { return &flowcontrolv1.FlowSchemaList{} },
			rules: store.Rules[*flowcontrolv1.FlowSchema]{
				PrepareForCreate: func(fs *flowcontrolv1.FlowSchema) {
					fs.Status = flowcontrolv1.FlowSchemaStatus{}
					fs.Generation = 1
				},
				PrepareForUpdate: func(fs, old *flowcontrolv1.FlowSchema) {
					fs.Status = old.Status
					fs.Generation = nextGeneration(fs.Spec, old.Spec, old.Generation)
				},
				Validate:       validation.ValidateFlowSchema,
				ValidateUpdate: validation.ValidateFlowSchemaUpdate,
				ResetFields:    statusPath,
			},
			status: &store.Rules[*flowcontrolv1.FlowSchema]{
				PrepareForUpdate: func(fs, old *flowcontrolv1.FlowSchema) {
					fs.Spec = old.Spec
					keepMetaButManagedFields(&fs.ObjectMeta, &old.ObjectMeta)
				},
				ValidateUpdate: validation.ValidateFlowSchemaStatusUpdate,
				ResetFields:    metaSpecPath,
			},
		},
		resource[*flowcontrolv1.PriorityLevelConfiguration]{
			gv: flowcontrolv1.SchemeGroupVersion, plural: "prioritylevelconfigurations", singular: "prioritylevelconfiguration", kind: "PriorityLevelConfiguration",
			newObj:  func() runtime.Object { return &flowcontrolv1.PriorityLevelConfiguration{} },
			newList: func() runtime.Object { return &flowcontrolv1.PriorityLevelConfigurationList{} },
			rules: store.Rules[*flowcontrolv1.PriorityLevelConfiguration]{
				PrepareForCreate: func(pl *flowcontrolv1.PriorityLevelConfiguration) {
					pl.Status = flowcontrolv1.PriorityLevelConfigurationStatus{}
					pl.Generation = 1
				},
				PrepareForUpdate: func(pl, old *flowcontrolv1.PriorityLevelConfiguration) {
					pl.Status = old.Status
					pl.Generation = nextGeneration(pl.Spec, old.Spec, old.Generation)
				},
				Validate:       validation.ValidatePriorityLevelConfiguration,
				ValidateUpdate: validation.ValidatePriorityLevelConfigurationUpdate,
				ResetFields:    statusPath,
			},
			status: &store.Rules[*flowcontrolv1.PriorityLevelConfiguration]{
				PrepareForUpdate: func(pl, old *flowcontrolv1.PriorityLevelConfiguration) {
					pl.Spec = old.Spec
					keepMetaButManagedFields(&pl.ObjectMeta, &old.ObjectMeta)
				},
				ValidateUpdate: validation.ValidatePriorityLevelConfigurationStatusUpdate,
				ResetFields:    metaSpecPath,
			},
		},
		resource[*windowsv1.GMSACredentialSpec]{
			gv: windowsv1.SchemeGroupVersion, plural: "gmsacredentialspecs", singular: "gmsacredentialspec", kind: "GMSACredentialSpec",
			newObj:  func() runtime.Object { return &windowsv1.GMSACredentialSpec{} },
			newList: func() runtime.Object { return &windowsv1.GMSACredentialSpecList{} },
			rules: store.Rules[*windowsv1.GMSACredentialSpec]{
				Validate: validation.ValidateGMSACredentialSpec, ValidateUpdate: validation.ValidateGMSACredentialSpecUpdate,
			},
		},
	}
}

// nextGeneration counts a change of spec, as upstream's generation does.
func nextGeneration[S any](spec, old S, generation int64) int64 {
	if apiequality.Semantic.DeepEqual(spec, old) {
		return generation
	}
	return generation + 1
}

// keepMetaButManagedFields keeps the stored metadata on a status write, as upstream's status
// endpoints of flowcontrol do: only the managers of the status may change.
func keepMetaButManagedFields(meta, old *metav1.ObjectMeta) {
	managedFields := meta.ManagedFields
	*meta = *old
	meta.ManagedFields = managedFields
}

// singleStack fills in the address families of a service's one cluster IP, as upstream's
// allocator records them: idplane allocates no addresses, so the family is the given IP's.
func singleStack(spec *corev1.ServiceSpec) {
	if spec.ClusterIP == "" {
		return
	}
	if len(spec.ClusterIPs) == 0 {
		spec.ClusterIPs = []string{spec.ClusterIP}
	}
	family := corev1.IPv4Protocol
	if netutils.IsIPv6String(spec.ClusterIP) {
		family = corev1.IPv6Protocol
	}
	if len(spec.IPFamilies) == 0 {
		spec.IPFamilies = []corev1.IPFamily{family}
	}
	if spec.IPFamilyPolicy == nil {
		policy := corev1.IPFamilyPolicySingleStack
		spec.IPFamilyPolicy = &policy
	}
}
