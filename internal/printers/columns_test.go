package printers

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	windowsv1 "github.com/idplane/idplane/api/windows/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestColumnDefinitions pins every table's column definitions (names, types, formats,
// priorities and descriptions) to testdata/columns.json: clients see them, so they change
// only on purpose.
func TestColumnDefinitions(t *testing.T) {
	tables := []struct {
		name      string
		convertor rest.TableConvertor
		sample    runtime.Object
	}{
		{"namespaces", namespaces, &corev1.Namespace{}},
		{"nodes", nodes, &corev1.Node{}},
		{"pods", pods, &corev1.Pod{}},
		{"secrets", secrets, &corev1.Secret{}},
		{"configmaps", configMaps, &corev1.ConfigMap{}},
		{"serviceaccounts", serviceAccounts, &corev1.ServiceAccount{}},
		{"persistentvolumes", persistentVolumes, &corev1.PersistentVolume{}},
		{"persistentvolumeclaims", persistentVolumeClaims, &corev1.PersistentVolumeClaim{}},
		{"events", events, &corev1.Event{}},
		{"services", services, &corev1.Service{}},
		//lint:ignore SA1019 v1 Endpoints are deprecated, not gone: the kubernetes Service's are served and kept as upstream keeps them.
		{"endpoints", endpoints, &corev1.Endpoints{}},
		{"endpointslices", endpointSlices, &discoveryv1.EndpointSlice{}},
		{"leases", leases, &coordinationv1.Lease{}},
		{"volumeattachments", volumeAttachments, &storagev1.VolumeAttachment{}},
		{"csinodes", csiNodes, &storagev1.CSINode{}},
		{"certificatesigningrequests", certificateSigningRequests, &certificatesv1.CertificateSigningRequest{}},
		{"clustertrustbundles", clusterTrustBundles, &certificatesv1.ClusterTrustBundle{}},
		{"podcertificaterequests", podCertificateRequests, &certificatesv1.PodCertificateRequest{}},
		{"roles", roles, &rbacv1.Role{}},
		{"clusterroles", clusterRoles, &rbacv1.ClusterRole{}},
		{"rolebindings", roleBindings, &rbacv1.RoleBinding{}},
		{"clusterrolebindings", clusterRoleBindings, &rbacv1.ClusterRoleBinding{}},
		{"gmsacredentialspecs", gmsaCredentialSpecs, &windowsv1.GMSACredentialSpec{}},
		{"flowschemas", flowSchemas, &flowcontrolv1.FlowSchema{}},
		{"prioritylevelconfigurations", priorityLevelConfigurations, &flowcontrolv1.PriorityLevelConfiguration{}},
	}
	got := map[string][]metav1.TableColumnDefinition{}
	for _, tt := range tables {
		table, err := tt.convertor.ConvertToTable(context.Background(), tt.sample, nil)
		if err != nil {
			t.Fatalf("%s: ConvertToTable: %v", tt.name, err)
		}
		got[tt.name] = table.ColumnDefinitions
	}

	golden := filepath.Join("testdata", "columns.json")
	if *update {
		data, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("reading %s (run with -update to create it): %v", golden, err)
	}
	var want map[string][]metav1.TableColumnDefinition
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatalf("decoding %s: %v", golden, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("column definitions differ from %s (-want +got):\n%s", golden, diff)
	}
}
