package printers

import (
	"cmp"
	"k8s.io/apiserver/pkg/registry/rest"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// namespaces prints namespaces as NAME STATUS AGE.
var namespaces rest.TableConvertor = newTable(
	nameColumn[*corev1.Namespace](),
	stringColumn("Status", "The status of the namespace", func(ns *corev1.Namespace) any { return string(ns.Status.Phase) }),
	ageColumn[*corev1.Namespace](),
)

// nodes prints nodes as NAME STATUS ROLES AGE VERSION, wide INTERNAL-IP EXTERNAL-IP OS-IMAGE
// KERNEL-VERSION CONTAINER-RUNTIME.
var nodes rest.TableConvertor = newTable(
	nameColumn[*corev1.Node](),
	stringColumn("Status", "The status of the node", func(n *corev1.Node) any { return nodeStatus(n) }),
	stringColumn("Roles", "The roles of the node", func(n *corev1.Node) any { return orNone(strings.Join(nodeRoles(n.Labels), ",")) }),
	ageColumn[*corev1.Node](),
	stringColumn("Version", doc(corev1.NodeSystemInfo{}, "kubeletVersion"), func(n *corev1.Node) any { return n.Status.NodeInfo.KubeletVersion }),
	stringColumn("Internal-IP", doc(corev1.NodeStatus{}, "addresses"), func(n *corev1.Node) any { return orNone(firstAddress(n, corev1.NodeInternalIP)) }).wide(),
	stringColumn("External-IP", doc(corev1.NodeStatus{}, "addresses"), func(n *corev1.Node) any { return orNone(firstAddress(n, corev1.NodeExternalIP)) }).wide(),
	stringColumn("OS-Image", doc(corev1.NodeSystemInfo{}, "osImage"), func(n *corev1.Node) any { return orUnknown(n.Status.NodeInfo.OSImage) }).wide(),
	stringColumn("Kernel-Version", doc(corev1.NodeSystemInfo{}, "kernelVersion"), func(n *corev1.Node) any { return orUnknown(n.Status.NodeInfo.KernelVersion) }).wide(),
	stringColumn("Container-Runtime", doc(corev1.NodeSystemInfo{}, "containerRuntimeVersion"), func(n *corev1.Node) any { return orUnknown(n.Status.NodeInfo.ContainerRuntimeVersion) }).wide(),
)

// nodeStatus is the node's readiness (Ready, NotReady, or Unknown while it has reported none),
// followed by SchedulingDisabled for a cordoned node.
func nodeStatus(n *corev1.Node) string {
	readiness := "Unknown"
	for _, c := range n.Status.Conditions {
		// Should a node report Ready twice, the later report stands.
		if c.Type != corev1.NodeReady {
			continue
		}
		readiness = "NotReady"
		if c.Status == corev1.ConditionTrue {
			readiness = "Ready"
		}
	}
	if n.Spec.Unschedulable {
		return readiness + ",SchedulingDisabled"
	}
	return readiness
}

// nodeRoles reads a node's roles, sorted and each once, from both role labels:
// node-role.kubernetes.io/<role> (any value) and the older kubernetes.io/role=<role>.
func nodeRoles(labels map[string]string) []string {
	roles := sets.New[string]()
	for key, value := range labels {
		if role, ok := strings.CutPrefix(key, "node-role.kubernetes.io/"); ok {
			roles.Insert(role)
		} else if key == "kubernetes.io/role" {
			roles.Insert(value)
		}
	}
	roles.Delete("")
	return sets.List(roles)
}

func firstAddress(n *corev1.Node, kind corev1.NodeAddressType) string {
	i := slices.IndexFunc(n.Status.Addresses, func(a corev1.NodeAddress) bool { return a.Type == kind })
	if i < 0 {
		return ""
	}
	return n.Status.Addresses[i].Address
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}

// secrets prints secrets as NAME TYPE DATA AGE.
var secrets rest.TableConvertor = newTable(
	nameColumn[*corev1.Secret](),
	stringColumn("Type", doc(corev1.Secret{}, "type"), func(s *corev1.Secret) any { return string(s.Type) }),
	stringColumn("Data", doc(corev1.Secret{}, "data"), func(s *corev1.Secret) any { return int64(len(s.Data)) }),
	ageColumn[*corev1.Secret](),
)

// configMaps prints config maps as NAME DATA AGE; DATA counts text and binary keys.
var configMaps rest.TableConvertor = newTable(
	nameColumn[*corev1.ConfigMap](),
	stringColumn("Data", doc(corev1.ConfigMap{}, "data"), func(c *corev1.ConfigMap) any { return int64(len(c.Data) + len(c.BinaryData)) }),
	ageColumn[*corev1.ConfigMap](),
)

// serviceAccounts prints service accounts as NAME SECRETS AGE.
var serviceAccounts rest.TableConvertor = newTable(
	nameColumn[*corev1.ServiceAccount](),
	stringColumn("Secrets", doc(corev1.ServiceAccount{}, "secrets"), func(sa *corev1.ServiceAccount) any { return int64(len(sa.Secrets)) }),
	ageColumn[*corev1.ServiceAccount](),
)

// persistentVolumes prints volumes as NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM
// STORAGECLASS VOLUMEATTRIBUTESCLASS REASON AGE, wide VOLUMEMODE.
var persistentVolumes rest.TableConvertor = newTable(
	nameColumn[*corev1.PersistentVolume](),
	stringColumn("Capacity", doc(corev1.PersistentVolumeSpec{}, "capacity"), func(pv *corev1.PersistentVolume) any { return storageSize(pv.Spec.Capacity) }),
	stringColumn("Access Modes", doc(corev1.PersistentVolumeSpec{}, "accessModes"), func(pv *corev1.PersistentVolume) any { return accessModes(pv.Spec.AccessModes) }),
	stringColumn("Reclaim Policy", doc(corev1.PersistentVolumeSpec{}, "persistentVolumeReclaimPolicy"), func(pv *corev1.PersistentVolume) any { return string(pv.Spec.PersistentVolumeReclaimPolicy) }),
	stringColumn("Status", doc(corev1.PersistentVolumeStatus{}, "phase"), func(pv *corev1.PersistentVolume) any { return phase(pv, string(pv.Status.Phase)) }),
	stringColumn("Claim", doc(corev1.PersistentVolumeSpec{}, "claimRef"), func(pv *corev1.PersistentVolume) any { return claimOf(pv.Spec.ClaimRef) }),
	stringColumn("StorageClass", "StorageClass of the pv", func(pv *corev1.PersistentVolume) any { return storageClass(pv, &pv.Spec.StorageClassName) }),
	stringColumn("VolumeAttributesClass", "VolumeAttributesClass of the pv", func(pv *corev1.PersistentVolume) any { return orUnset(pv.Spec.VolumeAttributesClassName) }),
	stringColumn("Reason", doc(corev1.PersistentVolumeStatus{}, "reason"), func(pv *corev1.PersistentVolume) any { return pv.Status.Reason }),
	ageColumn[*corev1.PersistentVolume](),
	stringColumn("VolumeMode", doc(corev1.PersistentVolumeSpec{}, "volumeMode"), func(pv *corev1.PersistentVolume) any { return orUnset((*string)(pv.Spec.VolumeMode)) }).wide(),
)

// persistentVolumeClaims prints claims as NAME STATUS VOLUME CAPACITY ACCESS MODES
// STORAGECLASS VOLUMEATTRIBUTESCLASS AGE, wide VOLUMEMODE. Capacity and access modes are those
// of the bound volume, so they stay empty until the claim is bound.
var persistentVolumeClaims rest.TableConvertor = newTable(
	nameColumn[*corev1.PersistentVolumeClaim](),
	stringColumn("Status", doc(corev1.PersistentVolumeClaimStatus{}, "phase"), func(pvc *corev1.PersistentVolumeClaim) any { return phase(pvc, string(pvc.Status.Phase)) }),
	stringColumn("Volume", doc(corev1.PersistentVolumeClaimSpec{}, "volumeName"), func(pvc *corev1.PersistentVolumeClaim) any { return pvc.Spec.VolumeName }),
	stringColumn("Capacity", doc(corev1.PersistentVolumeClaimStatus{}, "capacity"), func(pvc *corev1.PersistentVolumeClaim) any {
		return ifBound(pvc, func() string { return storageSize(pvc.Status.Capacity) })
	}),
	stringColumn("Access Modes", doc(corev1.PersistentVolumeClaimStatus{}, "accessModes"), func(pvc *corev1.PersistentVolumeClaim) any {
		return ifBound(pvc, func() string { return accessModes(pvc.Status.AccessModes) })
	}),
	stringColumn("StorageClass", "StorageClass of the pvc", func(pvc *corev1.PersistentVolumeClaim) any { return storageClass(pvc, pvc.Spec.StorageClassName) }),
	stringColumn("VolumeAttributesClass", "VolumeAttributesClass of the pvc", func(pvc *corev1.PersistentVolumeClaim) any { return orUnset(pvc.Spec.VolumeAttributesClassName) }),
	ageColumn[*corev1.PersistentVolumeClaim](),
	stringColumn("VolumeMode", doc(corev1.PersistentVolumeClaimSpec{}, "volumeMode"), func(pvc *corev1.PersistentVolumeClaim) any { return orUnset((*string)(pvc.Spec.VolumeMode)) }).wide(),
)

// phase is an object's phase, or Terminating once its deletion has begun.
func phase(obj metav1.Object, current string) string {
	if obj.GetDeletionTimestamp() != nil {
		return "Terminating"
	}
	return current
}

func claimOf(ref *corev1.ObjectReference) string {
	if ref == nil {
		return ""
	}
	return ref.Namespace + "/" + ref.Name
}

// storageClass prefers the beta annotation, when present even if empty, to the field.
func storageClass(obj metav1.Object, field *string) string {
	if class, ok := obj.GetAnnotations()[corev1.BetaStorageClassAnnotation]; ok {
		return class
	}
	if field == nil {
		return ""
	}
	return *field
}

func storageSize(resources corev1.ResourceList) string {
	size := resources[corev1.ResourceStorage]
	return size.String()
}

// ifBound is the claim's cell from its bound volume, empty while there is none.
func ifBound(pvc *corev1.PersistentVolumeClaim, cell func() string) string {
	if pvc.Spec.VolumeName == "" {
		return ""
	}
	return cell()
}

// accessModeAbbreviations lists the modes in the order tables show them.
var accessModeAbbreviations = []struct {
	mode  corev1.PersistentVolumeAccessMode
	short string
}{
	{corev1.ReadWriteOnce, "RWO"},
	{corev1.ReadOnlyMany, "ROX"},
	{corev1.ReadWriteMany, "RWX"},
	{corev1.ReadWriteOncePod, "RWOP"},
}

// accessModes abbreviates the modes in a fixed order, each once.
func accessModes(modes []corev1.PersistentVolumeAccessMode) string {
	var short []string
	for _, a := range accessModeAbbreviations {
		if slices.Contains(modes, a.mode) {
			short = append(short, a.short)
		}
	}
	return strings.Join(short, ",")
}

func orUnset(s *string) string {
	if s == nil {
		return "<unset>"
	}
	return *s
}

// events prints events as LAST SEEN TYPE REASON OBJECT MESSAGE, wide SUBOBJECT SOURCE FIRST
// SEEN COUNT NAME. As upstream, the name column comes last and only in wide output.
var events rest.TableConvertor = newTable(
	timedColumn("Last Seen", "string", doc(corev1.Event{}, "lastTimestamp"), func(e *corev1.Event, now time.Time) any { return age(eventLastSeen(e), now) }),
	stringColumn("Type", doc(corev1.Event{}, "type"), func(e *corev1.Event) any { return e.Type }),
	stringColumn("Reason", doc(corev1.Event{}, "reason"), func(e *corev1.Event) any { return e.Reason }),
	stringColumn("Object", doc(corev1.Event{}, "involvedObject"), func(e *corev1.Event) any { return involvedObject(e.InvolvedObject) }),
	stringColumn("Subobject", doc(corev1.ObjectReference{}, "fieldPath"), func(e *corev1.Event) any { return e.InvolvedObject.FieldPath }).wide(),
	stringColumn("Source", doc(corev1.Event{}, "source"), func(e *corev1.Event) any { return eventSource(e) }).wide(),
	stringColumn("Message", doc(corev1.Event{}, "message"), func(e *corev1.Event) any { return strings.TrimSpace(e.Message) }),
	timedColumn("First Seen", "string", doc(corev1.Event{}, "firstTimestamp"), func(e *corev1.Event, now time.Time) any { return age(eventFirstSeen(e), now) }).wide(),
	stringColumn("Count", doc(corev1.Event{}, "count"), func(e *corev1.Event) any { return eventCount(e) }).wide(),
	nameColumn[*corev1.Event]().wide(),
)

// An event's times and count are in the core fields (firstTimestamp, lastTimestamp, count)
// or, when an events.k8s.io recorder wrote it, in eventTime and series; a zero core count is
// a singleton event.

func eventFirstSeen(e *corev1.Event) time.Time {
	if e.FirstTimestamp.IsZero() {
		return e.EventTime.Time
	}
	return e.FirstTimestamp.Time
}

func eventLastSeen(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case e.LastTimestamp.IsZero():
		return eventFirstSeen(e)
	default:
		return e.LastTimestamp.Time
	}
}

func eventCount(e *corev1.Event) int64 {
	switch {
	case e.Series != nil:
		return int64(e.Series.Count)
	case e.Count == 0:
		return 1
	default:
		return int64(e.Count)
	}
}

// involvedObject is kind/name in lower case, or the kind alone for an unnamed object.
func involvedObject(ref corev1.ObjectReference) string {
	kind := strings.ToLower(ref.Kind)
	if ref.Name == "" {
		return kind
	}
	return kind + "/" + ref.Name
}

// eventSource is "component, host", falling back to the reporting controller and instance.
func eventSource(e *corev1.Event) string {
	component := cmp.Or(e.Source.Component, e.ReportingController)
	host := cmp.Or(e.Source.Host, e.ReportingInstance)
	if host == "" {
		return component
	}
	return component + ", " + host
}
