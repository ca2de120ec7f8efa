package gmsacredentialspec

import (
	"slices"
	"testing"

	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"

	windowsv1 "github.com/idplane/idplane/api/windows/v1"
	windowsv1alpha1 "github.com/idplane/idplane/api/windows/v1alpha1"
	generated "github.com/idplane/idplane/internal/generated/openapi"
)

// TestCRDMatchesOpenAPI: the CRD's schema says what the served OpenAPI definitions say, for every
// version, so scripts reading either see one type.
func TestCRDMatchesOpenAPI(t *testing.T) {
	defs := generated.GetOpenAPIDefinitions(func(path string) spec.Ref { return spec.MustCreateRef(path) })
	crd := CRD()
	models := map[string][2]string{
		"v1":       {windowsv1.GMSACredentialSpec{}.OpenAPIModelName(), windowsv1.CredSpec{}.OpenAPIModelName()},
		"v1alpha1": {windowsv1alpha1.GMSACredentialSpec{}.OpenAPIModelName(), windowsv1alpha1.CredSpec{}.OpenAPIModelName()},
	}
	if len(crd.Spec.Versions) != len(models) {
		t.Fatalf("CRD versions %v, want %d", crd.Spec.Versions, len(models))
	}
	for _, v := range crd.Spec.Versions {
		names, ok := models[v.Name]
		if !ok {
			t.Fatalf("CRD serves unexpected version %s", v.Name)
		}
		object, credspec := definition(t, defs, names[0]), definition(t, defs, names[1])
		schema := v.Schema.OpenAPIV3Schema
		if schema.Type != "object" || !slices.Equal(schema.Required, object.Required) {
			t.Errorf("%s: schema type %q required %v; OpenAPI requires %v", v.Name, schema.Type, schema.Required, object.Required)
		}
		for name := range object.Properties {
			if _, ok := schema.Properties[name]; !ok {
				t.Errorf("%s: CRD schema lacks property %s", v.Name, name)
			}
		}
		for name := range schema.Properties {
			if _, ok := object.Properties[name]; !ok {
				t.Errorf("%s: CRD schema has property %s the type does not", v.Name, name)
			}
		}
		got := schema.Properties["credspec"]
		if got.Type != credspec.Type[0] || got.XPreserveUnknownFields == nil || !*got.XPreserveUnknownFields ||
			credspec.Extensions["x-kubernetes-preserve-unknown-fields"] != true {
			t.Errorf("%s: credspec is %+v in the CRD and %+v in OpenAPI; want an object keeping unknown fields in both", v.Name, got, credspec)
		}
	}
	if crd.Name != "gmsacredentialspecs.windows.k8s.io" || crd.Spec.Scope != "Cluster" || !slices.Equal(crd.Status.StoredVersions, []string{"v1"}) {
		t.Errorf("CRD %s scope %s stored %v", crd.Name, crd.Spec.Scope, crd.Status.StoredVersions)
	}
}

func definition(t *testing.T, defs map[string]common.OpenAPIDefinition, name string) spec.Schema {
	t.Helper()
	d, ok := defs[name]
	if !ok {
		t.Fatalf("no OpenAPI definition %s", name)
	}
	return d.Schema
}
