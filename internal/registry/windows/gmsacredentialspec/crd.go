// Package gmsacredentialspec describes GMSACredentialSpecs (the credential specs of Windows Group
// Managed Service Accounts that pods name) to kubectl as a custom resource definition; their
// storage is the registry's table's (internal/registry/resources).
package gmsacredentialspec

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	windowsv1 "github.com/idplane/idplane/api/windows/v1"
	windowsv1alpha1 "github.com/idplane/idplane/api/windows/v1alpha1"
)

// CRD describes the built-in resource as the CustomResourceDefinition that clusters running the
// GMSA webhook install (gmsacredentialspecs.windows.k8s.io), established since now. Deployment
// scripts and operators check for that CRD before they create credential specs; idplane serves
// the resource itself and lists the CRD so they find it.
func CRD() *apiextensionsv1.CustomResourceDefinition {
	now := metav1.Now()
	names := apiextensionsv1.CustomResourceDefinitionNames{
		Plural:   "gmsacredentialspecs",
		Singular: "gmsacredentialspec",
		Kind:     "GMSACredentialSpec",
		ListKind: "GMSACredentialSpecList",
	}
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Description: "GMSACredentialSpec is the credential spec of a Windows Group Managed Service Account (GMSA).",
		Type:        "object",
		Required:    []string{"credspec"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"apiVersion": {Type: "string", Description: "APIVersion defines the versioned schema of this representation of an object."},
			"kind":       {Type: "string", Description: "Kind is a string value representing the REST resource this object represents."},
			"metadata":   {Type: "object"},
			"credspec": {
				Type:                   "object",
				XPreserveUnknownFields: ptr.To(true),
				Description:            "GMSA credential spec, kept exactly as written: a JSON object of at most 64 KiB nesting at most 32 levels deep.",
			},
		},
	}}
	version := func(name string, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: true, Storage: storage, Schema: schema.DeepCopy()}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{
			Name:              names.Plural + "." + windowsv1.GroupName,
			CreationTimestamp: now,
		},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: windowsv1.GroupName,
			Names: names,
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				version(windowsv1.SchemeGroupVersion.Version, true),
				version(windowsv1alpha1.SchemeGroupVersion.Version, false),
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{
			// What the CRD controller reports once a CRD's names are in use, word for word, for
			// scripts that wait for condition Established.
			Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
				{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue, LastTransitionTime: now, Reason: "NoConflicts", Message: "no conflicts found"},
				{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, LastTransitionTime: now, Reason: "InitialNamesAccepted", Message: "the initial names have been accepted"},
			},
			AcceptedNames:  names,
			StoredVersions: []string{windowsv1.SchemeGroupVersion.Version},
		},
	}
}
