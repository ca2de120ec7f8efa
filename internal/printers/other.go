package printers

import (
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/utils/ptr"
)

// Leases prints leases as NAME HOLDER AGE.
var Leases = New(
	[]metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Holder", Type: "string", Description: coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]},
		ageColumn,
	},
	func(l *coordinationv1.Lease) ([]any, error) {
		return []any{l.Name, ptr.Deref(l.Spec.HolderIdentity, ""), age(l.CreationTimestamp)}, nil
	},
)

// VolumeAttachments prints attachments as NAME ATTACHER PV NODE ATTACHED AGE.
var VolumeAttachments = New(
	[]metav1.TableColumnDefinition{
		nameColumn,
		// Upstream marks this column as a name too; kept so clients see the same definitions.
		{Name: "Attacher", Type: "string", Format: "name", Description: storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["attacher"]},
		{Name: "PV", Type: "string", Description: storagev1.VolumeAttachmentSource{}.SwaggerDoc()["persistentVolumeName"]},
		{Name: "Node", Type: "string", Description: storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["nodeName"]},
		{Name: "Attached", Type: "boolean", Description: storagev1.VolumeAttachmentStatus{}.SwaggerDoc()["attached"]},
		ageColumn,
	},
	func(va *storagev1.VolumeAttachment) ([]any, error) {
		return []any{
			va.Name,
			va.Spec.Attacher,
			ptr.Deref(va.Spec.Source.PersistentVolumeName, ""),
			va.Spec.NodeName,
			va.Status.Attached,
			age(va.CreationTimestamp),
		}, nil
	},
)

// CSINodes prints CSI nodes as NAME DRIVERS AGE.
var CSINodes = New(
	[]metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Drivers", Type: "integer", Description: "Drivers indicates the number of CSI drivers registered on the node"},
		ageColumn,
	},
	func(n *storagev1.CSINode) ([]any, error) {
		return []any{n.Name, int64(len(n.Spec.Drivers)), age(n.CreationTimestamp)}, nil
	},
)

// CertificateSigningRequests prints CSRs as NAME AGE SIGNERNAME REQUESTOR REQUESTEDDURATION
// CONDITION.
var CertificateSigningRequests = New(
	[]metav1.TableColumnDefinition{
		nameColumn,
		ageColumn,
		{Name: "SignerName", Type: "string", Description: certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["signerName"]},
		{Name: "Requestor", Type: "string", Description: certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["username"]},
		{Name: "RequestedDuration", Type: "string", Description: certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["expirationSeconds"]},
		{Name: "Condition", Type: "string", Description: certificatesv1.CertificateSigningRequestStatus{}.SwaggerDoc()["conditions"]},
	},
	func(csr *certificatesv1.CertificateSigningRequest) ([]any, error) {
		requested := "<none>"
		if s := csr.Spec.ExpirationSeconds; s != nil {
			requested = duration.HumanDuration(time.Duration(*s) * time.Second)
		}
		return []any{
			csr.Name,
			age(csr.CreationTimestamp),
			orNone(csr.Spec.SignerName),
			csr.Spec.Username,
			requested,
			csrCondition(csr),
		}, nil
	},
)

// csrCondition summarises a CSR as Denied, Approved or Pending (in that precedence), then
// Failed and Issued when they apply.
func csrCondition(csr *certificatesv1.CertificateSigningRequest) string {
	var approved, denied, failed bool
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			approved = true
		case certificatesv1.CertificateDenied:
			denied = true
		case certificatesv1.CertificateFailed:
			failed = true
		}
	}
	status := "Pending"
	switch {
	case denied:
		status = "Denied"
	case approved:
		status = "Approved"
	}
	if failed {
		status += ",Failed"
	}
	if len(csr.Status.Certificate) > 0 {
		status += ",Issued"
	}
	return status
}

// ClusterTrustBundles prints bundles as NAME SIGNERNAME.
var ClusterTrustBundles = New(
	[]metav1.TableColumnDefinition{
		nameColumn,
		{Name: "SignerName", Type: "string", Description: certificatesv1.ClusterTrustBundleSpec{}.SwaggerDoc()["signerName"]},
	},
	func(b *certificatesv1.ClusterTrustBundle) ([]any, error) {
		return []any{b.Name, orNone(b.Spec.SignerName)}, nil
	},
)
