package apiserver

import (
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	nodev1alpha1 "github.com/idplane/idplane/api/node/v1alpha1"
	windowsv1 "github.com/idplane/idplane/api/windows/v1"
	windowsv1alpha1 "github.com/idplane/idplane/api/windows/v1alpha1"
	csrv1beta1 "github.com/idplane/idplane/internal/conversion/certificatesv1beta1"
	gmsav1alpha1 "github.com/idplane/idplane/internal/conversion/windowsv1alpha1"
	"github.com/idplane/idplane/internal/defaults"
	"github.com/idplane/idplane/internal/registry/fieldlabels"
)

var (
	// scheme knows every served type twice: at its real version and at the internal version of its
	// group. idplane has no internal types; registering the external type as the internal one makes
	// the library's "convert to internal" a no-op that only sets the kind.
	scheme = runtime.NewScheme()
	// externalScheme has only the real versions; the OpenAPI definition namer uses it so the
	// documents never advertise version __internal.
	externalScheme = runtime.NewScheme()
	codecs         = serializer.NewCodecFactory(scheme)
	parameterCodec = runtime.NewParameterCodec(scheme)
)

// served lists, per group version, the types whose external form is also their internal form.
// A group served at several versions lists its preferred version first.
var served = []struct {
	gv    schema.GroupVersion
	add   func(*runtime.Scheme) error
	types []runtime.Object
}{
	{corev1.SchemeGroupVersion, corev1.AddToScheme, []runtime.Object{
		&corev1.Namespace{}, &corev1.NamespaceList{},
		&corev1.Node{}, &corev1.NodeList{},
		&corev1.Pod{}, &corev1.PodList{}, &corev1.Binding{},
		&corev1.Secret{}, &corev1.SecretList{},
		&corev1.ConfigMap{}, &corev1.ConfigMapList{},
		&corev1.ServiceAccount{}, &corev1.ServiceAccountList{},
		&corev1.PersistentVolume{}, &corev1.PersistentVolumeList{},
		&corev1.PersistentVolumeClaim{}, &corev1.PersistentVolumeClaimList{},
		&corev1.Event{}, &corev1.EventList{},
		&corev1.Service{}, &corev1.ServiceList{},
		//lint:ignore SA1019 v1 Endpoints are deprecated, not gone: the kubernetes Service's are served and kept as upstream keeps them.
		&corev1.Endpoints{}, &corev1.EndpointsList{},
	}},
	{discoveryv1.SchemeGroupVersion, discoveryv1.AddToScheme, []runtime.Object{
		&discoveryv1.EndpointSlice{}, &discoveryv1.EndpointSliceList{},
	}},
	{policyv1.SchemeGroupVersion, policyv1.AddToScheme, []runtime.Object{&policyv1.Eviction{}}},
	{coordinationv1.SchemeGroupVersion, coordinationv1.AddToScheme, []runtime.Object{
		&coordinationv1.Lease{}, &coordinationv1.LeaseList{},
	}},
	{authenticationv1.SchemeGroupVersion, authenticationv1.AddToScheme, []runtime.Object{
		&authenticationv1.SelfSubjectReview{},
	}},
	{authorizationv1.SchemeGroupVersion, authorizationv1.AddToScheme, []runtime.Object{
		&authorizationv1.SubjectAccessReview{}, &authorizationv1.SelfSubjectAccessReview{},
		&authorizationv1.LocalSubjectAccessReview{}, &authorizationv1.SelfSubjectRulesReview{},
	}},
	{rbacv1.SchemeGroupVersion, rbacv1.AddToScheme, []runtime.Object{
		&rbacv1.Role{}, &rbacv1.RoleList{}, &rbacv1.RoleBinding{}, &rbacv1.RoleBindingList{},
		&rbacv1.ClusterRole{}, &rbacv1.ClusterRoleList{}, &rbacv1.ClusterRoleBinding{}, &rbacv1.ClusterRoleBindingList{},
	}},
	{certificatesv1.SchemeGroupVersion, certificatesv1.AddToScheme, []runtime.Object{
		&certificatesv1.CertificateSigningRequest{}, &certificatesv1.CertificateSigningRequestList{},
		&certificatesv1.ClusterTrustBundle{}, &certificatesv1.ClusterTrustBundleList{},
		&certificatesv1.PodCertificateRequest{}, &certificatesv1.PodCertificateRequestList{},
	}},
	// v1beta1 has no internal form of its own: it converts to and from v1 (see init).
	{certificatesv1beta1.SchemeGroupVersion, certificatesv1beta1.AddToScheme, nil},
	{storagev1.SchemeGroupVersion, storagev1.AddToScheme, []runtime.Object{
		&storagev1.VolumeAttachment{}, &storagev1.VolumeAttachmentList{}, &storagev1.CSINode{}, &storagev1.CSINodeList{},
	}},
	{flowcontrolv1.SchemeGroupVersion, flowcontrolv1.AddToScheme, []runtime.Object{
		&flowcontrolv1.FlowSchema{}, &flowcontrolv1.FlowSchemaList{},
		&flowcontrolv1.PriorityLevelConfiguration{}, &flowcontrolv1.PriorityLevelConfigurationList{},
	}},
	{apiextensionsv1.SchemeGroupVersion, apiextensionsv1.AddToScheme, []runtime.Object{
		&apiextensionsv1.CustomResourceDefinition{}, &apiextensionsv1.CustomResourceDefinitionList{},
	}},
	{windowsv1.SchemeGroupVersion, windowsv1.AddToScheme, []runtime.Object{
		&windowsv1.GMSACredentialSpec{}, &windowsv1.GMSACredentialSpecList{},
	}},
	// v1alpha1, the GMSA design's version, converts to and from v1 (see init).
	{windowsv1alpha1.SchemeGroupVersion, windowsv1alpha1.AddToScheme, nil},
	{nodev1alpha1.SchemeGroupVersion, nodev1alpha1.AddToScheme, []runtime.Object{
		&nodev1alpha1.NodeReadable{}, &nodev1alpha1.NodeReadableList{},
	}},
}

func init() {
	priority := map[string][]schema.GroupVersion{}
	var groupOrder []string
	for _, g := range served {
		utilruntime.Must(g.add(scheme))
		utilruntime.Must(g.add(externalScheme))
		internal := schema.GroupVersion{Group: g.gv.Group, Version: runtime.APIVersionInternal}
		scheme.AddKnownTypes(internal, g.types...)
		if _, seen := priority[g.gv.Group]; !seen {
			groupOrder = append(groupOrder, g.gv.Group)
		}
		priority[g.gv.Group] = append(priority[g.gv.Group], g.gv)
	}
	for _, group := range groupOrder {
		utilruntime.Must(scheme.SetVersionPriority(priority[group]...))
	}
	unversioned := schema.GroupVersion{Version: "v1"}
	metav1.AddToGroupVersion(scheme, unversioned)
	metav1.AddToGroupVersion(externalScheme, unversioned)
	for _, s := range []*runtime.Scheme{scheme, externalScheme} {
		s.AddUnversionedTypes(unversioned,
			&metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
	}
	utilruntime.Must(csrv1beta1.AddToScheme(scheme))
	utilruntime.Must(gmsav1alpha1.AddToScheme(scheme))
	utilruntime.Must(fieldlabels.Register(scheme))
	defaults.RegisterDefaults(scheme)
}
