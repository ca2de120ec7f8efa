package printers

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Node role labels: node-role.kubernetes.io/<role> (any value) and the older
// kubernetes.io/role=<role>.
const (
	nodeRoleLabelPrefix = "node-role.kubernetes.io/"
	legacyNodeRoleLabel = "kubernetes.io/role"
)

// Namespaces prints namespaces as NAME STATUS AGE.
var Namespaces = New(
	[]metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Status", Type: "string", Description: "The status of the namespace"},
		ageColumn,
	},
	func(ns *corev1.Namespace) ([]any, error) {
		return []any{ns.Name, string(ns.Status.Phase), age(ns.CreationTimestamp)}, nil
	},
)

// Nodes prints nodes as NAME STATUS ROLES AGE VERSION, wide INTERNAL-IP EXTERNAL-IP OS-IMAGE
// KERNEL-VERSION CONTAINER-RUNTIME.
var Nodes = New(
	[]metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Status", Type: "string", Description: "The status of the node"},
		{Name: "Roles", Type: "string", Description: "The roles of the node"},
		ageColumn,
		{Name: "Version", Type: "string", Description: corev1.NodeSystemInfo{}.SwaggerDoc()["kubeletVersion"]},
		{Name: "Internal-IP", Type: "string", Priority: 1, Description: corev1.NodeStatus{}.SwaggerDoc()["addresses"]},
		{Name: "External-IP", Type: "string", Priority: 1, Description: corev1.NodeStatus{}.SwaggerDoc()["addresses"]},
		{Name: "OS-Image", Type: "string", Priority: 1, Description: corev1.NodeSystemInfo{}.SwaggerDoc()["osImage"]},
		{Name: "Kernel-Version", Type: "string", Priority: 1, Description: corev1.NodeSystemInfo{}.SwaggerDoc()["kernelVersion"]},
		{Name: "Container-Runtime", Type: "string", Priority: 1, Description: corev1.NodeSystemInfo{}.SwaggerDoc()["containerRuntimeVersion"]},
	},
	func(n *corev1.Node) ([]any, error) {
		info := n.Status.NodeInfo
		return []any{
			n.Name,
			nodeStatus(n),
			orNone(strings.Join(nodeRoles(n), ",")),
			age(n.CreationTimestamp),
			info.KubeletVersion,
			orNone(nodeAddress(n, corev1.NodeInternalIP)),
			orNone(nodeAddress(n, corev1.NodeExternalIP)),
			orUnknown(info.OSImage),
			orUnknown(info.KernelVersion),
			orUnknown(info.ContainerRuntimeVersion),
		}, nil
	},
)

// nodeStatus is Ready or NotReady from the Ready condition (Unknown without one), plus
// SchedulingDisabled for a cordoned node.
func nodeStatus(n *corev1.Node) string {
	status := []string{"Unknown"}
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		// The last Ready condition wins, should a node report more than one.
		if c.Status == corev1.ConditionTrue {
			status[0] = "Ready"
		} else {
			status[0] = "NotReady"
		}
	}
	if n.Spec.Unschedulable {
		status = append(status, "SchedulingDisabled")
	}
	return strings.Join(status, ",")
}

// nodeRoles returns the node's roles, sorted and without duplicates.
func nodeRoles(n *corev1.Node) []string {
	var roles []string
	for k, v := range n.Labels {
		switch {
		case strings.HasPrefix(k, nodeRoleLabelPrefix):
			if role := strings.TrimPrefix(k, nodeRoleLabelPrefix); role != "" {
				roles = append(roles, role)
			}
		case k == legacyNodeRoleLabel && v != "":
			roles = append(roles, v)
		}
	}
	slices.Sort(roles)
	return slices.Compact(roles)
}

// nodeAddress is the node's first address of the given type.
func nodeAddress(n *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range n.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return ""
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}

// Secrets prints secrets as NAME TYPE DATA AGE.
var Secrets = New(
	[]metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Type", Type: "string", Description: corev1.Secret{}.SwaggerDoc()["type"]},
		{Name: "Data", Type: "string", Description: corev1.Secret{}.SwaggerDoc()["data"]},
		ageColumn,
	},
	func(s *corev1.Secret) ([]any, error) {
		return []any{s.Name, string(s.Type), int64(len(s.Data)), age(s.CreationTimestamp)}, nil
	},
)

// ConfigMaps prints config maps as NAME DATA AGE; DATA counts text and binary keys.
var ConfigMaps = New(
	[]metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Data", Type: "string", Description: corev1.ConfigMap{}.SwaggerDoc()["data"]},
		ageColumn,
	},
	func(c *corev1.ConfigMap) ([]any, error) {
		return []any{c.Name, int64(len(c.Data) + len(c.BinaryData)), age(c.CreationTimestamp)}, nil
	},
)

// ServiceAccounts prints service accounts as NAME SECRETS AGE.
var ServiceAccounts = New(
	[]metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Secrets", Type: "string", Description: corev1.ServiceAccount{}.SwaggerDoc()["secrets"]},
		ageColumn,
	},
	func(sa *corev1.ServiceAccount) ([]any, error) {
		return []any{sa.Name, int64(len(sa.Secrets)), age(sa.CreationTimestamp)}, nil
	},
)

// PersistentVolumes prints volumes as NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM
// STORAGECLASS VOLUMEATTRIBUTESCLASS REASON AGE, wide VOLUMEMODE.
var PersistentVolumes = New(
	[]metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Capacity", Type: "string", Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["capacity"]},
		{Name: "Access Modes", Type: "string", Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["accessModes"]},
		{Name: "Reclaim Policy", Type: "string", Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["persistentVolumeReclaimPolicy"]},
		{Name: "Status", Type: "string", Description: corev1.PersistentVolumeStatus{}.SwaggerDoc()["phase"]},
		{Name: "Claim", Type: "string", Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["claimRef"]},
		{Name: "StorageClass", Type: "string", Description: "StorageClass of the pv"},
		{Name: "VolumeAttributesClass", Type: "string", Description: "VolumeAttributesClass of the pv"},
		{Name: "Reason", Type: "string", Description: corev1.PersistentVolumeStatus{}.SwaggerDoc()["reason"]},
		ageColumn,
		{Name: "VolumeMode", Type: "string", Priority: 1, Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["volumeMode"]},
	},
	func(pv *corev1.PersistentVolume) ([]any, error) {
		claim := ""
		if ref := pv.Spec.ClaimRef; ref != nil {
			claim = ref.Namespace + "/" + ref.Name
		}
		phase := string(pv.Status.Phase)
		if pv.DeletionTimestamp != nil {
			phase = "Terminating"
		}
		class, found := pv.Annotations[corev1.BetaStorageClassAnnotation]
		if !found {
			class = pv.Spec.StorageClassName
		}
		capacity := pv.Spec.Capacity[corev1.ResourceStorage]
		return []any{
			pv.Name,
			capacity.String(),
			accessModes(pv.Spec.AccessModes),
			string(pv.Spec.PersistentVolumeReclaimPolicy),
			phase,
			claim,
			class,
			orUnset(pv.Spec.VolumeAttributesClassName),
			pv.Status.Reason,
			age(pv.CreationTimestamp),
			orUnset((*string)(pv.Spec.VolumeMode)),
		}, nil
	},
)

// PersistentVolumeClaims prints claims as NAME STATUS VOLUME CAPACITY ACCESS MODES
// STORAGECLASS VOLUMEATTRIBUTESCLASS AGE, wide VOLUMEMODE. Capacity and access modes are those
// of the bound volume, so they stay empty until the claim is bound.
var PersistentVolumeClaims = New(
	[]metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Status", Type: "string", Description: corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["phase"]},
		{Name: "Volume", Type: "string", Description: corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeName"]},
		{Name: "Capacity", Type: "string", Description: corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["capacity"]},
		{Name: "Access Modes", Type: "string", Description: corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["accessModes"]},
		{Name: "StorageClass", Type: "string", Description: "StorageClass of the pvc"},
		{Name: "VolumeAttributesClass", Type: "string", Description: "VolumeAttributesClass of the pvc"},
		ageColumn,
		{Name: "VolumeMode", Type: "string", Priority: 1, Description: corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeMode"]},
	},
	func(pvc *corev1.PersistentVolumeClaim) ([]any, error) {
		phase := string(pvc.Status.Phase)
		if pvc.DeletionTimestamp != nil {
			phase = "Terminating"
		}
		capacity, modes := "", ""
		if pvc.Spec.VolumeName != "" {
			storage := pvc.Status.Capacity[corev1.ResourceStorage]
			capacity = storage.String()
			modes = accessModes(pvc.Status.AccessModes)
		}
		class, found := pvc.Annotations[corev1.BetaStorageClassAnnotation]
		if !found && pvc.Spec.StorageClassName != nil {
			class = *pvc.Spec.StorageClassName
		}
		return []any{
			pvc.Name,
			phase,
			pvc.Spec.VolumeName,
			capacity,
			modes,
			class,
			orUnset(pvc.Spec.VolumeAttributesClassName),
			age(pvc.CreationTimestamp),
			orUnset((*string)(pvc.Spec.VolumeMode)),
		}, nil
	},
)

// accessModes abbreviates access modes in a fixed order, each once.
func accessModes(modes []corev1.PersistentVolumeAccessMode) string {
	var short []string
	for _, m := range []struct {
		mode  corev1.PersistentVolumeAccessMode
		short string
	}{
		{corev1.ReadWriteOnce, "RWO"},
		{corev1.ReadOnlyMany, "ROX"},
		{corev1.ReadWriteMany, "RWX"},
		{corev1.ReadWriteOncePod, "RWOP"},
	} {
		if slices.Contains(modes, m.mode) {
			short = append(short, m.short)
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

// Events prints events as LAST SEEN TYPE REASON OBJECT MESSAGE, wide SUBOBJECT SOURCE FIRST
// SEEN COUNT NAME. As upstream, the name column comes last and only in wide output.
var Events = New(
	[]metav1.TableColumnDefinition{
		{Name: "Last Seen", Type: "string", Description: corev1.Event{}.SwaggerDoc()["lastTimestamp"]},
		{Name: "Type", Type: "string", Description: corev1.Event{}.SwaggerDoc()["type"]},
		{Name: "Reason", Type: "string", Description: corev1.Event{}.SwaggerDoc()["reason"]},
		{Name: "Object", Type: "string", Description: corev1.Event{}.SwaggerDoc()["involvedObject"]},
		{Name: "Subobject", Type: "string", Priority: 1, Description: corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]},
		{Name: "Source", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["source"]},
		{Name: "Message", Type: "string", Description: corev1.Event{}.SwaggerDoc()["message"]},
		{Name: "First Seen", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["firstTimestamp"]},
		{Name: "Count", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["count"]},
		{Name: "Name", Type: "string", Priority: 1, Format: "name", Description: objectMetaDoc["name"]},
	},
	eventCells,
)

// eventCells reads times and counts from whichever of the core (firstTimestamp, count) and
// events.k8s.io (eventTime, series) fields the recorder filled in.
func eventCells(e *corev1.Event) ([]any, error) {
	firstSeen := age(e.FirstTimestamp)
	if e.FirstTimestamp.IsZero() {
		firstSeen = microAge(e.EventTime)
	}
	lastSeen := age(e.LastTimestamp)
	if e.LastTimestamp.IsZero() {
		lastSeen = firstSeen
	}
	count := e.Count
	if e.Series != nil {
		lastSeen = microAge(e.Series.LastObservedTime)
		count = e.Series.Count
	} else if count == 0 {
		count = 1
	}
	object := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		object = fmt.Sprintf("%s/%s", object, e.InvolvedObject.Name)
	}
	return []any{
		lastSeen,
		e.Type,
		e.Reason,
		object,
		e.InvolvedObject.FieldPath,
		eventSource(e),
		strings.TrimSpace(e.Message),
		firstSeen,
		int64(count),
		e.Name,
	}, nil
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
