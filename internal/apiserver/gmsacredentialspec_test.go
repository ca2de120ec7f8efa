package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	windowsv1 "github.com/idplane/idplane/api/windows/v1"
)

var (
	gmsaV1       = schema.GroupVersionResource{Group: "windows.k8s.io", Version: "v1", Resource: "gmsacredentialspecs"}
	gmsaV1alpha1 = schema.GroupVersionResource{Group: "windows.k8s.io", Version: "v1alpha1", Resource: "gmsacredentialspecs"}
)

// designCredSpec is the credspec of the GMSA design's example, plus fields no schema names.
const designCredSpec = `{"ActiveDirectoryConfig":{"GroupManagedServiceAccounts":[{"Name":"WebApplication1","Scope":"CONTOSO"},{"Name":"WebApplication1","Scope":"contoso.com"}]},` +
	`"CmsPlugins":["ActiveDirectory"],"DomainJoinConfig":{"DnsName":"contoso.com","DnsTreeName":"contoso.com","Guid":"244818ae-87ca-4fcd-92ec-e79e5252348a",` +
	`"MachineAccountName":"WebApplication1","NetBiosName":"CONTOSO","Sid":"S-1-5-21-2126729477-2524075714-3094792973"},` +
	`"FutureWindowsField":{"nested":[1,2.5,true,null,{"deep":"x"}],"big":12345678901234567890}}`

// credSpecObject is a GMSACredentialSpec at apiVersion with credspec given as JSON text.
func credSpecObject(t *testing.T, apiVersion, name, credspec string) *unstructured.Unstructured {
	t.Helper()
	var doc any
	if err := json.Unmarshal([]byte(credspec), &doc); err != nil {
		t.Fatalf("test credspec %q: %v", credspec, err)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": "GMSACredentialSpec",
		"metadata": map[string]any{"name": name},
		"credspec": doc,
	}}
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("decoding %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}

// rawCredSpec reads the object at version as the server writes it and returns its credspec.
func rawCredSpec(t *testing.T, ts *testServer, version, name string) []byte {
	t.Helper()
	body, err := ts.client.CoreV1().RESTClient().Get().AbsPath("/apis/windows.k8s.io", version, "gmsacredentialspecs", name).DoRaw(context.Background())
	if err != nil {
		t.Fatalf("GET %s %s: %v", version, name, err)
	}
	var obj struct {
		APIVersion string          `json:"apiVersion"`
		CredSpec   json.RawMessage `json:"credspec"`
	}
	if err := json.Unmarshal(body, &obj); err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
	if obj.APIVersion != "windows.k8s.io/"+version {
		t.Errorf("GET at %s answered apiVersion %s", version, obj.APIVersion)
	}
	return obj.CredSpec
}

func TestGMSACredentialSpecs(t *testing.T) {
	ts := startTestServer(t, t.TempDir(), nil)
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(ts.config)
	v1, v1alpha1 := dyn.Resource(gmsaV1), dyn.Resource(gmsaV1alpha1)

	w, err := v1.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	// The design's object, created at the design's version, with fields nobody declared.
	if _, err := v1alpha1.Create(ctx, credSpecObject(t, "windows.k8s.io/v1alpha1", "webapp1-credspec", designCredSpec), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating at v1alpha1: %v", err)
	}

	t.Run("both versions show the same document", func(t *testing.T) {
		for _, version := range []string{"v1", "v1alpha1"} {
			if got := rawCredSpec(t, ts, version, "webapp1-credspec"); !sameJSON(t, got, []byte(designCredSpec)) {
				t.Errorf("%s credspec = %s, want %s", version, got, designCredSpec)
			}
		}
		for _, r := range []dynamic.NamespaceableResourceInterface{v1, v1alpha1} {
			list, err := r.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=webapp1-credspec"})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != 1 {
				t.Errorf("list by name: %d items", len(list.Items))
			}
		}
	})

	t.Run("stored as JSON at v1", func(t *testing.T) {
		etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{ts.etcd.clientURL}, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer etcd.Close()
		// Built-in resources are keyed by resource alone, whatever their group.
		resp, err := etcd.Get(ctx, "/registry/gmsacredentialspecs/webapp1-credspec")
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != 1 {
			t.Fatalf("%d keys stored", len(resp.Kvs))
		}
		var stored struct {
			APIVersion string          `json:"apiVersion"`
			CredSpec   json.RawMessage `json:"credspec"`
		}
		if err := json.Unmarshal(resp.Kvs[0].Value, &stored); err != nil {
			t.Fatalf("stored value is not JSON: %v\n%q", err, resp.Kvs[0].Value)
		}
		if stored.APIVersion != "windows.k8s.io/v1" || !sameJSON(t, stored.CredSpec, []byte(designCredSpec)) {
			t.Errorf("stored %s", resp.Kvs[0].Value)
		}
	})

	t.Run("update, merge patch and server-side apply keep unknown fields", func(t *testing.T) {
		obj, err := v1.Get(ctx, "webapp1-credspec", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedField(obj.Object, "CONTOSO2", "credspec", "DomainJoinConfig", "NetBiosName"); err != nil {
			t.Fatal(err)
		}
		if _, err := v1.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update: %v", err)
		}
		if _, err := v1alpha1.Patch(ctx, "webapp1-credspec", types.MergePatchType, []byte(`{"credspec":{"FutureWindowsField":{"added":"y"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatalf("merge patch: %v", err)
		}
		applied := credSpecObject(t, "windows.k8s.io/v1", "webapp1-credspec", `{"DomainJoinConfig":{"Sid":"S-1-5-21-1"}}`)
		body, err := json.Marshal(applied.Object)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v1.Patch(ctx, "webapp1-credspec", types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "admin", Force: ptr(true)}); err != nil {
			t.Fatalf("server-side apply: %v", err)
		}
		got := rawCredSpec(t, ts, "v1", "webapp1-credspec")
		var doc map[string]any
		if err := json.Unmarshal(got, &doc); err != nil {
			t.Fatal(err)
		}
		join := doc["DomainJoinConfig"].(map[string]any)
		future := doc["FutureWindowsField"].(map[string]any)
		if join["NetBiosName"] != "CONTOSO2" || join["Sid"] != "S-1-5-21-1" || join["DnsName"] != "contoso.com" ||
			future["added"] != "y" || future["nested"] == nil || doc["CmsPlugins"] == nil {
			t.Errorf("after update, merge patch and apply: %s", got)
		}
		// Apply owns exactly the field it set, inside the document.
		live, err := v1.Get(ctx, "webapp1-credspec", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var owned string
		for _, mf := range live.GetManagedFields() {
			if mf.Manager == "admin" {
				owned = mf.FieldsV1.GetRawString()
			}
		}
		if want := `{"f:credspec":{"f:DomainJoinConfig":{".":{},"f:Sid":{}}}}`; owned != want {
			t.Errorf("fields applied by admin: %s, want %s", owned, want)
		}
	})

	t.Run("strategic merge patch is refused like a custom resource's", func(t *testing.T) {
		_, err := v1.Patch(ctx, "webapp1-credspec", types.StrategicMergePatchType, []byte(`{"credspec":{"DomainJoinConfig":{"NetBiosName":"X"}}}`), metav1.PatchOptions{})
		if !apierrors.IsUnsupportedMediaType(err) {
			t.Errorf("strategic merge patch: %v, want 415", err)
		}
	})

	t.Run("invalid objects are 422 with field paths", func(t *testing.T) {
		deep := strings.Repeat(`{"k":`, windowsv1.MaxCredSpecDepth+1) + "1" + strings.Repeat("}", windowsv1.MaxCredSpecDepth+1)
		huge := `{"k":"` + strings.Repeat("x", windowsv1.MaxCredSpecBytes) + `"}`
		tests := []struct {
			name, objName, credspec string
			wantField               string
		}{
			{"a string", "a", `"ActiveDirectory"`, "credspec"},
			{"an array", "a", `[{"k":1}]`, "credspec"},
			{"over 64 KiB", "a", huge, "credspec"},
			{"too deep", "a", deep, "credspec" + strings.Repeat(".k", windowsv1.MaxCredSpecDepth)},
			{"a name that is no DNS subdomain", "Web_App", `{}`, "metadata.name"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				_, err := v1.Create(ctx, credSpecObject(t, "windows.k8s.io/v1", tc.objName, tc.credspec), metav1.CreateOptions{})
				expectInvalid(t, err, tc.wantField)
			})
		}
		t.Run("no credspec", func(t *testing.T) {
			obj := credSpecObject(t, "windows.k8s.io/v1alpha1", "a", `{}`)
			delete(obj.Object, "credspec")
			_, err := v1alpha1.Create(ctx, obj, metav1.CreateOptions{})
			expectInvalid(t, err, "credspec")
		})
		t.Run("a repeated key", func(t *testing.T) {
			body := []byte(`{"apiVersion":"windows.k8s.io/v1","kind":"GMSACredentialSpec","metadata":{"name":"a"},"credspec":{"k":1,"k":2}}`)
			err := ts.client.CoreV1().RESTClient().Post().AbsPath("/apis/windows.k8s.io/v1/gmsacredentialspecs").
				SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
			expectInvalid(t, err, "credspec.k")
		})
		t.Run("an update to a string", func(t *testing.T) {
			_, err := v1.Patch(ctx, "webapp1-credspec", types.JSONPatchType, []byte(`[{"op":"replace","path":"/credspec","value":"x"}]`), metav1.PatchOptions{})
			expectInvalid(t, err, "credspec")
		})
	})

	t.Run("table", func(t *testing.T) {
		var table metav1.Table
		err := ts.client.CoreV1().RESTClient().Get().AbsPath("/apis/windows.k8s.io/v1alpha1/gmsacredentialspecs").
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Into(&table)
		if err != nil {
			t.Fatal(err)
		}
		var columns []string
		for _, c := range table.ColumnDefinitions {
			columns = append(columns, c.Name)
		}
		if !reflect.DeepEqual(columns, []string{"Name", "Age"}) || len(table.Rows) != 1 || table.Rows[0].Cells[0] != "webapp1-credspec" {
			t.Errorf("table columns %v rows %v", columns, table.Rows)
		}
	})

	t.Run("listed as a CRD", func(t *testing.T) {
		var crd apiextensionsv1.CustomResourceDefinition
		err := ts.client.CoreV1().RESTClient().Get().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gmsacredentialspecs.windows.k8s.io").Do(ctx).Into(&crd)
		if err != nil {
			t.Fatal(err)
		}
		established := false
		for _, c := range crd.Status.Conditions {
			established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
		}
		if crd.Spec.Group != "windows.k8s.io" || crd.Spec.Names.Kind != "GMSACredentialSpec" || !established || len(crd.Spec.Versions) != 2 {
			t.Errorf("CRD %+v", crd)
		}
		for _, v := range crd.Spec.Versions {
			p := v.Schema.OpenAPIV3Schema.Properties["credspec"]
			if p.Type != "object" || p.XPreserveUnknownFields == nil || !*p.XPreserveUnknownFields {
				t.Errorf("%s credspec schema %+v", v.Name, p)
			}
		}
	})

	t.Run("OpenAPI", func(t *testing.T) {
		body, err := ts.client.CoreV1().RESTClient().Get().AbsPath("/openapi/v3/apis/windows.k8s.io/v1alpha1").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Paths map[string]struct {
				Patch *struct {
					RequestBody struct {
						Content map[string]any `json:"content"`
					} `json:"requestBody"`
				} `json:"patch"`
			} `json:"paths"`
			Components struct {
				Schemas map[string]map[string]any `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatal(err)
		}
		credspec := doc.Components.Schemas["io.k8s.windows.v1alpha1.CredSpec"]
		if credspec["type"] != "object" || credspec["x-kubernetes-preserve-unknown-fields"] != true {
			t.Errorf("credspec schema %v", credspec)
		}
		patch := doc.Paths["/apis/windows.k8s.io/v1alpha1/gmsacredentialspecs/{name}"].Patch
		if patch == nil {
			t.Fatal("no PATCH operation")
		}
		if _, ok := patch.RequestBody.Content[string(types.MergePatchType)]; !ok {
			t.Errorf("PATCH consumes %v, want merge patch among them", patch.RequestBody.Content)
		}
		if _, ok := patch.RequestBody.Content[string(types.StrategicMergePatchType)]; ok {
			t.Errorf("PATCH consumes %v, want no strategic merge patch", patch.RequestBody.Content)
		}
	})

	if err := v1alpha1.Delete(ctx, "webapp1-credspec", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Run("watch saw every change", func(t *testing.T) {
		want := []watch.EventType{watch.Added, watch.Modified, watch.Modified, watch.Modified, watch.Deleted}
		var got []watch.EventType
		timeout := time.After(10 * time.Second)
		for len(got) < len(want) {
			select {
			case e := <-w.ResultChan():
				got = append(got, e.Type)
			case <-timeout:
				t.Fatalf("events %v, want %v", got, want)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("events %v, want %v", got, want)
		}
	})
}

// expectInvalid requires a 422 whose causes name field.
func expectInvalid(t *testing.T, err error, field string) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != http.StatusUnprocessableEntity {
		t.Fatalf("got %v, want 422", err)
	}
	var fields []string
	if d := status.Status().Details; d != nil {
		for _, c := range d.Causes {
			fields = append(fields, c.Field)
			if c.Field == field {
				return
			}
		}
	}
	t.Errorf("422 names fields %v, want %s: %v", fields, field, err)
}
