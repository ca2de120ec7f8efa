// Package fieldlabels says, per served kind, which fields a field selector may name and how to read
// them from an object. The scheme's label conversion (which names are accepted) and the stores'
// attribute functions (what the names select) both come from this one table, so they cannot drift.
package fieldlabels

import (
	"fmt"
	"strconv"

	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	nodev1alpha1 "github.com/idplane/idplane/api/node/v1alpha1"
	windowsv1 "github.com/idplane/idplane/api/windows/v1"
	windowsv1alpha1 "github.com/idplane/idplane/api/windows/v1alpha1"
)

// kind is one kind's selectable fields beyond metadata.name (and metadata.namespace when namespaced).
type kind struct {
	gvk        schema.GroupVersionKind
	namespaced bool
	// example is an empty object of the kind; extra applied to it lists the selectable names.
	example runtime.Object
	extra   func(runtime.Object) fields.Set
}

var kinds = map[schema.GroupVersionKind]kind{}

func add(k kind) { kinds[k.gvk] = k }

func init() {
	core := corev1.SchemeGroupVersion
	add(kind{core.WithKind("Pod"), true, &corev1.Pod{}, func(o runtime.Object) fields.Set {
		p := o.(*corev1.Pod)
		return fields.Set{
			"spec.nodeName":            p.Spec.NodeName,
			"spec.restartPolicy":       string(p.Spec.RestartPolicy),
			"spec.schedulerName":       p.Spec.SchedulerName,
			"spec.serviceAccountName":  p.Spec.ServiceAccountName,
			"spec.hostNetwork":         strconv.FormatBool(p.Spec.HostNetwork),
			"status.phase":             string(p.Status.Phase),
			"status.podIP":             p.Status.PodIP,
			"status.nominatedNodeName": p.Status.NominatedNodeName,
		}
	}})
	add(kind{core.WithKind("Secret"), true, &corev1.Secret{}, func(o runtime.Object) fields.Set {
		return fields.Set{"type": string(o.(*corev1.Secret).Type)}
	}})
	add(kind{core.WithKind("Namespace"), false, &corev1.Namespace{}, func(o runtime.Object) fields.Set {
		return fields.Set{"status.phase": string(o.(*corev1.Namespace).Status.Phase)}
	}})
	add(kind{core.WithKind("Node"), false, &corev1.Node{}, func(o runtime.Object) fields.Set {
		return fields.Set{"spec.unschedulable": strconv.FormatBool(o.(*corev1.Node).Spec.Unschedulable)}
	}})
	add(kind{core.WithKind("Event"), true, &corev1.Event{}, func(o runtime.Object) fields.Set {
		e := o.(*corev1.Event)
		source := e.Source.Component
		if source == "" {
			source = e.ReportingController
		}
		return fields.Set{
			"involvedObject.kind":            e.InvolvedObject.Kind,
			"involvedObject.namespace":       e.InvolvedObject.Namespace,
			"involvedObject.name":            e.InvolvedObject.Name,
			"involvedObject.uid":             string(e.InvolvedObject.UID),
			"involvedObject.apiVersion":      e.InvolvedObject.APIVersion,
			"involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
			"involvedObject.fieldPath":       e.InvolvedObject.FieldPath,
			"reason":                         e.Reason,
			"reportingComponent":             e.ReportingController,
			"source":                         source,
			"type":                           e.Type,
		}
	}})
	add(kind{core.WithKind("Service"), true, &corev1.Service{}, func(o runtime.Object) fields.Set {
		svc := o.(*corev1.Service)
		return fields.Set{"spec.clusterIP": svc.Spec.ClusterIP, "spec.type": string(svc.Spec.Type)}
	}})
	add(kind{discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), true, nil, nil})
	for _, name := range []string{"ConfigMap", "ServiceAccount", "PersistentVolumeClaim", "Endpoints"} {
		add(kind{core.WithKind(name), true, nil, nil})
	}
	add(kind{core.WithKind("PersistentVolume"), false, nil, nil})
	add(kind{coordinationv1.SchemeGroupVersion.WithKind("Lease"), true, nil, nil})
	add(kind{flowcontrolv1.SchemeGroupVersion.WithKind("FlowSchema"), false, nil, nil})
	add(kind{flowcontrolv1.SchemeGroupVersion.WithKind("PriorityLevelConfiguration"), false, nil, nil})
	for _, name := range []string{"Role", "RoleBinding"} {
		add(kind{rbacv1.SchemeGroupVersion.WithKind(name), true, nil, nil})
	}
	for _, name := range []string{"ClusterRole", "ClusterRoleBinding"} {
		add(kind{rbacv1.SchemeGroupVersion.WithKind(name), false, nil, nil})
	}
	for _, name := range []string{"VolumeAttachment", "CSINode"} {
		add(kind{storagev1.SchemeGroupVersion.WithKind(name), false, nil, nil})
	}
	add(kind{certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"), false, &certificatesv1.CertificateSigningRequest{}, func(o runtime.Object) fields.Set {
		return fields.Set{"spec.signerName": o.(*certificatesv1.CertificateSigningRequest).Spec.SignerName}
	}})
	add(kind{certificatesv1.SchemeGroupVersion.WithKind("ClusterTrustBundle"), false, &certificatesv1.ClusterTrustBundle{}, func(o runtime.Object) fields.Set {
		return fields.Set{"spec.signerName": o.(*certificatesv1.ClusterTrustBundle).Spec.SignerName}
	}})
	for _, gv := range []schema.GroupVersion{windowsv1.SchemeGroupVersion, windowsv1alpha1.SchemeGroupVersion} {
		add(kind{gv.WithKind("GMSACredentialSpec"), false, nil, nil})
	}
	// A node lists and watches only its pods' requests, by spec.nodeName; signers by spec.signerName.
	// v1beta1 lists select the stored v1 objects by the same names.
	for _, gv := range []schema.GroupVersion{certificatesv1.SchemeGroupVersion, certificatesv1beta1.SchemeGroupVersion} {
		add(kind{gv.WithKind("PodCertificateRequest"), true, &certificatesv1.PodCertificateRequest{}, func(o runtime.Object) fields.Set {
			r := o.(*certificatesv1.PodCertificateRequest)
			return fields.Set{"spec.signerName": r.Spec.SignerName, "spec.podName": r.Spec.PodName, "spec.nodeName": string(r.Spec.NodeName)}
		}})
	}
	// A node's readable objects are selected by the node's name, which every request must give.
	add(kind{nodev1alpha1.SchemeGroupVersion.WithKind("NodeReadable"), true, &nodev1alpha1.NodeReadable{}, func(o runtime.Object) fields.Set {
		return fields.Set{nodev1alpha1.NodeNameField: o.(*nodev1alpha1.NodeReadable).NodeName}
	}})
	// Selectors on v1beta1 lists name the same fields; the objects filtered are the stored v1 ones.
	add(kind{certificatesv1beta1.SchemeGroupVersion.WithKind("CertificateSigningRequest"), false, &certificatesv1.CertificateSigningRequest{}, func(o runtime.Object) fields.Set {
		return fields.Set{"spec.signerName": o.(*certificatesv1.CertificateSigningRequest).Spec.SignerName}
	}})
}

// Register makes the scheme accept, for each kind, exactly the field labels Attrs produces.
func Register(s *runtime.Scheme) error {
	for gvk, k := range kinds {
		known := k.fieldSet(nil)
		err := s.AddFieldLabelConversionFunc(gvk, func(label, value string) (string, string, error) {
			if _, ok := known[label]; ok {
				return label, value, nil
			}
			return "", "", fmt.Errorf("field label not supported: %s", label)
		})
		if err != nil {
			return fmt.Errorf("registering field labels of %s: %w", gvk, err)
		}
	}
	return nil
}

// fieldSet returns the kind's fields for obj, or every selectable name with empty values when obj
// is nil.
func (k kind) fieldSet(obj runtime.Object) fields.Set {
	if obj == nil {
		set := fields.Set{"metadata.name": ""}
		if k.namespaced {
			set["metadata.namespace"] = ""
		}
		if k.extra != nil {
			for name := range k.extra(k.example) {
				set[name] = ""
			}
		}
		return set
	}
	var extra fields.Set
	if k.extra != nil {
		extra = k.extra(obj)
	}
	var name, namespace string
	if m, err := meta.Accessor(obj); err == nil {
		name, namespace = m.GetName(), m.GetNamespace()
	}
	return sparse(extra, name, k.namespaced, namespace)
}

// sparse is the set the watch cache keeps beside every object for as long as it holds it: only
// the fields with a value, in a map sized for them. A selector reads a field that is absent as
// empty (fields.Set.Get), so "f=" and "f!=" match as they would with the empty value present,
// and a pod's set, whose status fields are mostly empty, fits the map's smallest size (8) instead
// of growing into a table twice as large.
func sparse(extra fields.Set, name string, namespaced bool, namespace string) fields.Set {
	n := 0
	for _, v := range extra {
		if v != "" {
			n++
		}
	}
	if name != "" {
		n++
	}
	if namespaced && namespace != "" {
		n++
	}
	set := make(fields.Set, n)
	for f, v := range extra {
		if v != "" {
			set[f] = v
		}
	}
	if name != "" {
		set["metadata.name"] = name
	}
	if namespaced && namespace != "" {
		set["metadata.namespace"] = namespace
	}
	return set
}

// AttrsFunc returns the store attribute function for kind gvk: the object's labels and the fields
// that kind's selectors may name.
func AttrsFunc(gvk schema.GroupVersionKind) func(runtime.Object) (labels.Set, fields.Set, error) {
	k, ok := kinds[gvk]
	if !ok {
		panic(fmt.Sprintf("fieldlabels: kind %s is not registered", gvk))
	}
	return func(obj runtime.Object) (labels.Set, fields.Set, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, nil, fmt.Errorf("reading object metadata: %w", err)
		}
		return labels.Set(m.GetLabels()), k.fieldSet(obj), nil
	}
}
