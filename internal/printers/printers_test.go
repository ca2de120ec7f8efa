package printers

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	windowsv1 "github.com/idplane/idplane/api/windows/v1"
)

var testNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// frozen is c printing at testNow, so that ages are deterministic.
func frozen(c rest.TableConvertor) rest.TableConvertor {
	return c.(interface {
		withClock(clock.PassiveClock) rest.TableConvertor
	}).withClock(clocktesting.NewFakePassiveClock(testNow))
}

// ago is a timestamp d before testNow.
func ago(d time.Duration) metav1.Time { return metav1.NewTime(testNow.Add(-d)) }

// cells converts obj with c and returns the cells of its single row.
func cells(t *testing.T, c rest.TableConvertor, obj runtime.Object) []any {
	t.Helper()
	table, err := frozen(c).ConvertToTable(context.Background(), obj, nil)
	if err != nil {
		t.Fatalf("ConvertToTable: %v", err)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("got %d rows, want 1", len(table.Rows))
	}
	return table.Rows[0].Cells
}

func TestConvertToTable(t *testing.T) {
	list := &corev1.SecretList{
		ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next", RemainingItemCount: ptr.To[int64](7)},
		Items: []corev1.Secret{
			{ObjectMeta: metav1.ObjectMeta{Name: "a", CreationTimestamp: ago(time.Hour)}, Type: corev1.SecretTypeOpaque},
			{ObjectMeta: metav1.ObjectMeta{Name: "b", CreationTimestamp: ago(time.Minute)}, Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": nil, "tls.key": nil}},
		},
	}
	single := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "c", ResourceVersion: "9"}}

	tests := []struct {
		name        string
		obj         runtime.Object
		options     runtime.Object
		wantRows    [][]any
		wantHeaders bool
		wantRV      string
		wantCont    string
		wantRemain  *int64
	}{
		{
			name:        "list carries list meta and one row per item",
			obj:         list,
			options:     &metav1.TableOptions{},
			wantRows:    [][]any{{"a", "Opaque", int64(0), "60m"}, {"b", "kubernetes.io/tls", int64(2), "60s"}},
			wantHeaders: true,
			wantRV:      "42",
			wantCont:    "next",
			wantRemain:  ptr.To[int64](7),
		},
		{
			name:        "single object carries its resource version",
			obj:         single,
			wantRows:    [][]any{{"c", "", int64(0), "<unknown>"}},
			wantHeaders: true,
			wantRV:      "9",
		},
		{
			name:     "noHeaders drops the column definitions",
			obj:      single,
			options:  &metav1.TableOptions{NoHeaders: true},
			wantRows: [][]any{{"c", "", int64(0), "<unknown>"}},
			wantRV:   "9",
		},
		{
			name:        "empty list has no rows",
			obj:         &corev1.SecretList{},
			wantRows:    [][]any{},
			wantHeaders: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := frozen(secrets).ConvertToTable(context.Background(), tt.obj, tt.options)
			if err != nil {
				t.Fatalf("ConvertToTable: %v", err)
			}
			if table.Rows == nil {
				t.Errorf("rows are nil, want an empty list so they encode as []")
			}
			var got [][]any
			for _, r := range table.Rows {
				got = append(got, r.Cells)
				if r.Object.Object == nil {
					t.Errorf("row %v has no object", r.Cells)
				}
			}
			if len(got) != len(tt.wantRows) || (len(got) > 0 && !reflect.DeepEqual(got, tt.wantRows)) {
				t.Errorf("rows = %v, want %v", got, tt.wantRows)
			}
			if (len(table.ColumnDefinitions) > 0) != tt.wantHeaders {
				t.Errorf("column definitions = %v, want headers %v", table.ColumnDefinitions, tt.wantHeaders)
			}
			if table.ResourceVersion != tt.wantRV || table.Continue != tt.wantCont || !reflect.DeepEqual(table.RemainingItemCount, tt.wantRemain) {
				t.Errorf("list meta = %q %q %v, want %q %q %v", table.ResourceVersion, table.Continue, table.RemainingItemCount, tt.wantRV, tt.wantCont, tt.wantRemain)
			}
		})
	}

	t.Run("rows point at the list items", func(t *testing.T) {
		table, err := frozen(secrets).ConvertToTable(context.Background(), list, nil)
		if err != nil {
			t.Fatalf("ConvertToTable: %v", err)
		}
		if got := table.Rows[1].Object.Object; got != &list.Items[1] {
			t.Errorf("row object = %p, want the second item %p", got, &list.Items[1])
		}
	})

	errorTests := []struct {
		name    string
		obj     runtime.Object
		options runtime.Object
		want    string
	}{
		{"other object type", &corev1.ConfigMap{}, nil, "cannot print *v1.ConfigMap"},
		{"other list type", &corev1.ConfigMapList{Items: make([]corev1.ConfigMap, 1)}, nil, "cannot print *v1.ConfigMap"},
		{"unknown table options", single, &metav1.ListOptions{}, "unrecognized type *v1.ListOptions"},
	}
	for _, tt := range errorTests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := frozen(secrets).ConvertToTable(context.Background(), tt.obj, tt.options)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestColumns checks every convertor's column definitions against the cells it produces.
func TestColumns(t *testing.T) {
	tests := []struct {
		name      string
		convertor rest.TableConvertor
		sample    runtime.Object
		wantFirst string
		wide      []string
	}{
		{"namespaces", namespaces, &corev1.Namespace{}, "Name", nil},
		{"nodes", nodes, &corev1.Node{}, "Name", []string{"Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"}},
		{"pods", pods, &corev1.Pod{}, "Name", []string{"IP", "Node", "Nominated Node", "Readiness Gates"}},
		{"secrets", secrets, &corev1.Secret{}, "Name", nil},
		{"config maps", configMaps, &corev1.ConfigMap{}, "Name", nil},
		{"service accounts", serviceAccounts, &corev1.ServiceAccount{}, "Name", nil},
		{"persistent volumes", persistentVolumes, &corev1.PersistentVolume{}, "Name", []string{"VolumeMode"}},
		{"claims", persistentVolumeClaims, &corev1.PersistentVolumeClaim{}, "Name", []string{"VolumeMode"}},
		{"events", events, &corev1.Event{}, "Last Seen", []string{"Subobject", "Source", "First Seen", "Count", "Name"}},
		{"leases", leases, &coordinationv1.Lease{}, "Name", nil},
		{"volume attachments", volumeAttachments, &storagev1.VolumeAttachment{}, "Name", nil},
		{"csi nodes", csiNodes, &storagev1.CSINode{}, "Name", nil},
		{"csrs", certificateSigningRequests, &certificatesv1.CertificateSigningRequest{}, "Name", nil},
		{"cluster trust bundles", clusterTrustBundles, &certificatesv1.ClusterTrustBundle{}, "Name", nil},
		{"pod certificate requests", podCertificateRequests, &certificatesv1.PodCertificateRequest{}, "Name", []string{"Node"}},
		{"gmsa credential specs", gmsaCredentialSpecs, &windowsv1.GMSACredentialSpec{}, "Name", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := tt.convertor.ConvertToTable(context.Background(), tt.sample, nil)
			if err != nil {
				t.Fatalf("ConvertToTable: %v", err)
			}
			cols := table.ColumnDefinitions
			if len(table.Rows[0].Cells) != len(cols) {
				t.Fatalf("%d cells for %d columns", len(table.Rows[0].Cells), len(cols))
			}
			if cols[0].Name != tt.wantFirst {
				t.Errorf("first column = %q, want %q", cols[0].Name, tt.wantFirst)
			}
			var wide []string
			names := 0
			for _, c := range cols {
				if c.Priority == 1 {
					wide = append(wide, c.Name)
				}
				if c.Name == "Name" {
					names++
					if c.Format != "name" || c.Description == "" {
						t.Errorf("name column = %+v, want format name and the object-meta description", c)
					}
				}
			}
			if names != 1 {
				t.Errorf("%d Name columns, want 1", names)
			}
			if !reflect.DeepEqual(wide, tt.wide) {
				t.Errorf("wide columns = %v, want %v", wide, tt.wide)
			}
		})
	}
}
