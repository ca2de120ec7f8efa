package printers

import (
	"reflect"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/ptr"

	windowsv1 "github.com/idplane/idplane/api/windows/v1"
)

func nodeReady(s corev1.ConditionStatus) []corev1.NodeCondition {
	return []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}, {Type: corev1.NodeReady, Status: s}}
}

func TestRows(t *testing.T) {
	tests := []struct {
		name      string
		convertor rest.TableConvertor
		obj       runtime.Object
		want      []any
	}{
		{
			name:      "active namespace",
			convertor: namespaces,
			obj:       &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", CreationTimestamp: ago(50 * time.Hour)}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
			want:      []any{"team-a", "Active", "2d2h"},
		},
		{
			name:      "ready node with roles and addresses",
			convertor: nodes,
			obj: &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: ago(10 * 24 * time.Hour), Labels: map[string]string{
					"node-role.kubernetes.io/control-plane": "",
					"node-role.kubernetes.io/worker":        "true",
					"kubernetes.io/role":                    "worker",
					"node-role.kubernetes.io/":              "",
					"topology.kubernetes.io/zone":           "a",
				}},
				Status: corev1.NodeStatus{
					Conditions: nodeReady(corev1.ConditionTrue),
					Addresses: []corev1.NodeAddress{
						{Type: corev1.NodeHostName, Address: "n1"},
						{Type: corev1.NodeInternalIP, Address: "10.0.0.1"},
						{Type: corev1.NodeInternalIP, Address: "10.0.0.2"},
						{Type: corev1.NodeExternalIP, Address: "203.0.113.1"},
					},
					NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.0", OSImage: "Debian", KernelVersion: "6.1", ContainerRuntimeVersion: "containerd://2.1"},
				},
			},
			want: []any{"n1", "Ready", "control-plane,worker", "10d", "v1.37.0", "10.0.0.1", "203.0.113.1", "Debian", "6.1", "containerd://2.1"},
		},
		{
			name:      "cordoned node that is not ready",
			convertor: nodes,
			obj: &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: "n2"},
				Spec:       corev1.NodeSpec{Unschedulable: true},
				Status:     corev1.NodeStatus{Conditions: nodeReady(corev1.ConditionUnknown)},
			},
			want: []any{"n2", "NotReady,SchedulingDisabled", "<none>", "<unknown>", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"},
		},
		{
			name:      "node without a Ready condition",
			convertor: nodes,
			obj:       &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n3"}},
			want:      []any{"n3", "Unknown", "<none>", "<unknown>", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"},
		},
		{
			name:      "secret counts data keys",
			convertor: secrets,
			obj:       &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"a": nil, "b": nil}},
			want:      []any{"s", "Opaque", int64(2), "<unknown>"},
		},
		{
			name:      "config map counts text and binary keys",
			convertor: configMaps,
			obj:       &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"a": ""}, BinaryData: map[string][]byte{"b": nil}},
			want:      []any{"c", int64(2), "<unknown>"},
		},
		{
			name:      "service account counts secrets",
			convertor: serviceAccounts,
			obj:       &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Secrets: []corev1.ObjectReference{{Name: "tok"}}},
			want:      []any{"default", int64(1), "<unknown>"},
		},
		{
			name:      "bound persistent volume",
			convertor: persistentVolumes,
			obj: &corev1.PersistentVolume{
				ObjectMeta: metav1.ObjectMeta{Name: "pv1", CreationTimestamp: ago(5 * time.Minute)},
				Spec: corev1.PersistentVolumeSpec{
					Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
					AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod, corev1.ReadWriteMany, corev1.ReadWriteOnce, corev1.ReadWriteOnce},
					PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
					ClaimRef:                      &corev1.ObjectReference{Namespace: "apps", Name: "data"},
					StorageClassName:              "fast",
					VolumeAttributesClassName:     ptr.To("gold"),
					VolumeMode:                    ptr.To(corev1.PersistentVolumeFilesystem),
				},
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
			},
			want: []any{"pv1", "10Gi", "RWO,RWX,RWOP", "Retain", "Bound", "apps/data", "fast", "gold", "", "5m", "Filesystem"},
		},
		{
			name:      "terminating persistent volume with class annotation",
			convertor: persistentVolumes,
			obj: &corev1.PersistentVolume{
				ObjectMeta: metav1.ObjectMeta{
					Name:              "pv2",
					DeletionTimestamp: ptr.To(ago(time.Second)),
					Annotations:       map[string]string{corev1.BetaStorageClassAnnotation: "legacy"},
				},
				Spec:   corev1.PersistentVolumeSpec{StorageClassName: "fast"},
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeReleased, Reason: "gone"},
			},
			want: []any{"pv2", "0", "", "", "Terminating", "", "legacy", "<unset>", "gone", "<unknown>", "<unset>"},
		},
		{
			name:      "bound claim shows the volume's capacity and modes",
			convertor: persistentVolumeClaims,
			obj: &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					VolumeName:       "pv1",
					StorageClassName: ptr.To("fast"),
					VolumeMode:       ptr.To(corev1.PersistentVolumeBlock),
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
				Status: corev1.PersistentVolumeClaimStatus{
					Phase:       corev1.ClaimBound,
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
					Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
				},
			},
			want: []any{"data", "Bound", "pv1", "10Gi", "ROX", "fast", "<unset>", "<unknown>", "Block"},
		},
		{
			name:      "pending claim leaves capacity and modes empty",
			convertor: persistentVolumeClaims,
			obj: &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec:       corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}},
				Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
			},
			want: []any{"data", "Pending", "", "", "", "", "<unset>", "<unknown>", "<unset>"},
		},
		{
			name:      "core event",
			convertor: events,
			obj: &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{Name: "p.17a"},
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web-0", FieldPath: "spec.containers{app}"},
				Reason:         "BackOff",
				Message:        "Back-off restarting failed container\n",
				Source:         corev1.EventSource{Component: "kubelet", Host: "n1"},
				FirstTimestamp: ago(time.Hour),
				LastTimestamp:  ago(time.Minute),
				Count:          12,
				Type:           corev1.EventTypeWarning,
			},
			want: []any{"60s", "Warning", "BackOff", "pod/web-0", "spec.containers{app}", "kubelet, n1", "Back-off restarting failed container", "60m", int64(12), "p.17a"},
		},
		{
			name:      "events.k8s.io style event with series",
			convertor: events,
			obj: &corev1.Event{
				ObjectMeta:          metav1.ObjectMeta{Name: "e"},
				InvolvedObject:      corev1.ObjectReference{Kind: "Node"},
				Reason:              "Rebooted",
				EventTime:           metav1.NewMicroTime(testNow.Add(-2 * time.Hour)),
				Series:              &corev1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(testNow.Add(-30 * time.Second))},
				ReportingController: "example.com/watcher",
				Type:                corev1.EventTypeNormal,
			},
			want: []any{"30s", "Normal", "Rebooted", "node", "", "example.com/watcher", "", "120m", int64(3), "e"},
		},
		{
			name:      "singleton event counts one and reuses first seen",
			convertor: events,
			obj: &corev1.Event{
				ObjectMeta:        metav1.ObjectMeta{Name: "e"},
				InvolvedObject:    corev1.ObjectReference{Kind: "Lease", Name: "l"},
				EventTime:         metav1.NewMicroTime(testNow.Add(-90 * time.Second)),
				ReportingInstance: "ctrl-1",
			},
			want: []any{"90s", "", "", "lease/l", "", ", ctrl-1", "", "90s", int64(1), "e"},
		},
		{
			name:      "lease with holder",
			convertor: leases,
			obj:       &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "ctrl"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("ctrl-1_abc")}},
			want:      []any{"ctrl", "ctrl-1_abc", "<unknown>"},
		},
		{
			name:      "lease without holder",
			convertor: leases,
			obj:       &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "ctrl"}},
			want:      []any{"ctrl", "", "<unknown>"},
		},
		{
			name:      "volume attachment",
			convertor: volumeAttachments,
			obj: &storagev1.VolumeAttachment{
				ObjectMeta: metav1.ObjectMeta{Name: "csi-123"},
				Spec: storagev1.VolumeAttachmentSpec{
					Attacher: "csi.example.com",
					NodeName: "n1",
					Source:   storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv1")},
				},
				Status: storagev1.VolumeAttachmentStatus{Attached: true},
			},
			want: []any{"csi-123", "csi.example.com", "pv1", "n1", true, "<unknown>"},
		},
		{
			name:      "gmsa credential spec",
			convertor: gmsaCredentialSpecs,
			obj: &windowsv1.GMSACredentialSpec{
				ObjectMeta: metav1.ObjectMeta{Name: "webapp1-credspec", CreationTimestamp: ago(90 * time.Second)},
				CredSpec:   windowsv1.CredSpec{Raw: []byte(`{"CmsPlugins":["ActiveDirectory"]}`)},
			},
			want: []any{"webapp1-credspec", "90s"},
		},
		{
			name:      "csi node counts drivers",
			convertor: csiNodes,
			obj: &storagev1.CSINode{
				ObjectMeta: metav1.ObjectMeta{Name: "n1"},
				Spec:       storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "a"}, {Name: "b"}}},
			},
			want: []any{"n1", int64(2), "<unknown>"},
		},
		{
			name:      "approved and issued csr",
			convertor: certificateSigningRequests,
			obj: &certificatesv1.CertificateSigningRequest{
				ObjectMeta: metav1.ObjectMeta{Name: "csr-1", CreationTimestamp: ago(90 * time.Second)},
				Spec: certificatesv1.CertificateSigningRequestSpec{
					SignerName:        "kubernetes.io/kube-apiserver-client",
					Username:          "alice",
					ExpirationSeconds: ptr.To[int32](86400),
				},
				Status: certificatesv1.CertificateSigningRequestStatus{
					Conditions:  []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}},
					Certificate: []byte("cert"),
				},
			},
			want: []any{"csr-1", "90s", "kubernetes.io/kube-apiserver-client", "alice", "24h", "Approved,Issued"},
		},
		{
			name:      "denied wins over approved, failed is appended",
			convertor: certificateSigningRequests,
			obj: &certificatesv1.CertificateSigningRequest{
				ObjectMeta: metav1.ObjectMeta{Name: "csr-2"},
				Status: certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{
					{Type: certificatesv1.CertificateApproved}, {Type: certificatesv1.CertificateDenied}, {Type: certificatesv1.CertificateFailed},
				}},
			},
			want: []any{"csr-2", "<unknown>", "<none>", "", "<none>", "Denied,Failed"},
		},
		{
			name:      "new csr is pending",
			convertor: certificateSigningRequests,
			obj:       &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "csr-3"}},
			want:      []any{"csr-3", "<unknown>", "<none>", "", "<none>", "Pending"},
		},
		{
			name:      "pending pod certificate request",
			convertor: podCertificateRequests,
			obj: &certificatesv1.PodCertificateRequest{
				ObjectMeta: metav1.ObjectMeta{Name: "pcr-1", CreationTimestamp: ago(90 * time.Second)},
				Spec:       certificatesv1.PodCertificateRequestSpec{SignerName: "idplane.io/spiffe", PodName: "p", ServiceAccountName: "sa", NodeName: "n1"},
			},
			want: []any{"pcr-1", "idplane.io/spiffe", "p", "sa", "Pending", "90s", "n1"},
		},
		{
			name:      "denied pod certificate request shows its reason",
			convertor: podCertificateRequests,
			obj: &certificatesv1.PodCertificateRequest{
				ObjectMeta: metav1.ObjectMeta{Name: "pcr-2"},
				Status: certificatesv1.PodCertificateRequestStatus{Conditions: []metav1.Condition{
					{Type: certificatesv1.PodCertificateRequestConditionTypeDenied, Status: metav1.ConditionTrue, Reason: "UnsupportedKeyType"},
				}},
			},
			want: []any{"pcr-2", "<none>", "<none>", "<none>", "Denied(UnsupportedKeyType)", "<unknown>", "<none>"},
		},
		{
			name:      "issued pod certificate request",
			convertor: podCertificateRequests,
			obj: &certificatesv1.PodCertificateRequest{
				ObjectMeta: metav1.ObjectMeta{Name: "pcr-3"},
				Status: certificatesv1.PodCertificateRequestStatus{Conditions: []metav1.Condition{
					{Type: certificatesv1.PodCertificateRequestConditionTypeIssued, Status: metav1.ConditionTrue, Reason: "Issued"},
				}},
			},
			want: []any{"pcr-3", "<none>", "<none>", "<none>", "Issued", "<unknown>", "<none>"},
		},
		{
			name:      "cluster trust bundle with signer",
			convertor: clusterTrustBundles,
			obj:       &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "example.com:ca:1"}, Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/ca"}},
			want:      []any{"example.com:ca:1", "example.com/ca"},
		},
		{
			name:      "cluster trust bundle without signer",
			convertor: clusterTrustBundles,
			obj:       &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "roots"}},
			want:      []any{"roots", "<none>"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cells(t, tt.convertor, tt.obj); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("cells = %#v\nwant    %#v", got, tt.want)
			}
		})
	}
}
