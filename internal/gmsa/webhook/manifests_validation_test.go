package webhook

import (
	"context"
	"fmt"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/idplane/idplane/internal/defaults"
	"github.com/idplane/idplane/internal/validation"
)

// TestManifestsPassServerValidation runs every object of deploy/gmsa-webhook through the
// validation a kube-apiserver would run on create, so a manifest a real cluster refuses (as it
// refused the CRD without its API approval annotation) fails here rather than at `kubectl apply`.
// The CRD goes through apiextensions-apiserver's own validation. For the built-in kinds no
// library outside k8s.io/kubernetes holds the server's rules, so each is checked with what exists:
// apimachinery's object-meta and label-selector validation, and idplane's own validation of the
// kinds idplane serves (namespaces, service accounts, RBAC, and a Deployment's template as the
// defaulted pod it makes).
func TestManifestsPassServerValidation(t *testing.T) {
	for _, obj := range manifests(t) {
		name := fmt.Sprintf("%T %s", obj, objectName(obj))
		t.Run(name, func(t *testing.T) {
			if errs := validateManifest(t, obj); len(errs) > 0 {
				t.Errorf("a server would refuse it: %v", errs.ToAggregate())
			}
		})
	}
}

// TestCRDValidationRefusesUnapprovedGroup shows the CRD check is the server's: without the
// approval annotation, the protected group windows.k8s.io is refused with the server's message.
func TestCRDValidationRefusesUnapprovedGroup(t *testing.T) {
	crd := only[*apiextensionsv1.CustomResourceDefinition](t, manifests(t)).DeepCopy()
	delete(crd.Annotations, apiextensionsv1.KubeAPIApprovedAnnotation)
	errs := validateCRD(t, crd)
	want := field.Required(field.NewPath("metadata", "annotations").Key(apiextensionsv1.KubeAPIApprovedAnnotation), "").Field
	for _, e := range errs {
		if e.Field == want && e.Type == field.ErrorTypeRequired {
			return
		}
	}
	t.Errorf("errors %v, want %s required", errs, want)
}

func objectName(obj runtime.Object) string {
	if m, ok := obj.(metav1.Object); ok {
		return m.GetName()
	}
	return "?"
}

func validateManifest(t *testing.T, obj runtime.Object) field.ErrorList {
	meta := field.NewPath("metadata")
	switch o := obj.(type) {
	case *apiextensionsv1.CustomResourceDefinition:
		return validateCRD(t, o)
	case *corev1.Namespace:
		return validation.ValidateNamespace(o)
	case *corev1.ServiceAccount:
		return validation.ValidateServiceAccount(o)
	case *rbacv1.ClusterRole:
		return validation.ValidateClusterRole(o)
	case *rbacv1.ClusterRoleBinding:
		return validation.ValidateClusterRoleBinding(o)
	case *appsv1.Deployment:
		errs := apivalidation.ValidateObjectMeta(&o.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, meta)
		errs = append(errs, validateSelectorMatches(o.Spec.Selector, o.Spec.Template.Labels, field.NewPath("spec", "selector"))...)
		// The pods the Deployment makes: its template with the name and namespace they get,
		// defaulted as the server defaults a pod before validating it.
		pod := &corev1.Pod{ObjectMeta: *o.Spec.Template.ObjectMeta.DeepCopy(), Spec: *o.Spec.Template.Spec.DeepCopy()}
		pod.Name, pod.Namespace = o.Name+"-5d4f8b7c9-abcde", o.Namespace
		defaults.Pod(pod)
		return append(errs, validation.ValidatePod(pod)...)
	case *policyv1.PodDisruptionBudget:
		errs := apivalidation.ValidateObjectMeta(&o.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, meta)
		return append(errs, metav1validation.ValidateLabelSelector(o.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, field.NewPath("spec", "selector"))...)
	case *corev1.Service:
		return apivalidation.ValidateObjectMeta(&o.ObjectMeta, true, apivalidation.NameIsDNS1035Label, meta)
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		return apivalidation.ValidateObjectMeta(&o.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, meta)
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		return apivalidation.ValidateObjectMeta(&o.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, meta)
	}
	t.Fatalf("no validation for %T: add one", obj)
	return nil
}

// validateCRD defaults and converts the v1 object as the apiextensions server does before its
// create validation.
func validateCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	t.Helper()
	scheme := runtime.NewScheme()
	apiextensionsinstall.Install(scheme)
	v1 := crd.DeepCopy()
	scheme.Default(v1)
	var internal apiextensions.CustomResourceDefinition
	if err := scheme.Convert(v1, &internal, nil); err != nil {
		t.Fatalf("converting the CRD: %v", err)
	}
	return crdvalidation.ValidateCustomResourceDefinition(context.Background(), &internal)
}

func validateSelectorMatches(sel *metav1.LabelSelector, podLabels map[string]string, fldPath *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, fldPath)
	if len(errs) > 0 {
		return errs
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return field.ErrorList{field.Invalid(fldPath, sel, err.Error())}
	}
	if s.Empty() || !s.Matches(labels.Set(podLabels)) {
		errs = append(errs, field.Invalid(fldPath, sel, "`selector` does not match template `labels`"))
	}
	return errs
}
