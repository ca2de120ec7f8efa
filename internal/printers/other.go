package printers

import (
	"k8s.io/apiserver/pkg/registry/rest"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/utils/ptr"
)

// leases prints leases as NAME HOLDER AGE.
var leases rest.TableConvertor = newTable(
	nameColumn[*coordinationv1.Lease](),
	stringColumn("Holder", doc(coordinationv1.LeaseSpec{}, "holderIdentity"), func(l *coordinationv1.Lease) any { return ptr.Deref(l.Spec.HolderIdentity, "") }),
	ageColumn[*coordinationv1.Lease](),
)

// volumeAttachments prints attachments as NAME ATTACHER PV NODE ATTACHED AGE. Upstream marks
// the attacher column as a name too; kept so clients see the same definitions.
var volumeAttachments rest.TableConvertor = newTable(
	nameColumn[*storagev1.VolumeAttachment](),
	stringColumn("Attacher", doc(storagev1.VolumeAttachmentSpec{}, "attacher"), func(va *storagev1.VolumeAttachment) any { return va.Spec.Attacher }).names(),
	stringColumn("PV", doc(storagev1.VolumeAttachmentSource{}, "persistentVolumeName"), func(va *storagev1.VolumeAttachment) any { return ptr.Deref(va.Spec.Source.PersistentVolumeName, "") }),
	stringColumn("Node", doc(storagev1.VolumeAttachmentSpec{}, "nodeName"), func(va *storagev1.VolumeAttachment) any { return va.Spec.NodeName }),
	booleanColumn("Attached", doc(storagev1.VolumeAttachmentStatus{}, "attached"), func(va *storagev1.VolumeAttachment) any { return va.Status.Attached }),
	ageColumn[*storagev1.VolumeAttachment](),
)

// csiNodes prints CSI nodes as NAME DRIVERS AGE.
var csiNodes rest.TableConvertor = newTable(
	nameColumn[*storagev1.CSINode](),
	integerColumn("Drivers", "Drivers indicates the number of CSI drivers registered on the node", func(n *storagev1.CSINode) any { return int64(len(n.Spec.Drivers)) }),
	ageColumn[*storagev1.CSINode](),
)

// certificateSigningRequests prints CSRs as NAME AGE SIGNERNAME REQUESTOR REQUESTEDDURATION
// CONDITION.
var certificateSigningRequests rest.TableConvertor = newTable(
	nameColumn[*certificatesv1.CertificateSigningRequest](),
	ageColumn[*certificatesv1.CertificateSigningRequest](),
	stringColumn("SignerName", doc(certificatesv1.CertificateSigningRequestSpec{}, "signerName"), func(csr *certificatesv1.CertificateSigningRequest) any { return orNone(csr.Spec.SignerName) }),
	stringColumn("Requestor", doc(certificatesv1.CertificateSigningRequestSpec{}, "username"), func(csr *certificatesv1.CertificateSigningRequest) any { return csr.Spec.Username }),
	stringColumn("RequestedDuration", doc(certificatesv1.CertificateSigningRequestSpec{}, "expirationSeconds"), func(csr *certificatesv1.CertificateSigningRequest) any {
		return requestedDuration(csr.Spec.ExpirationSeconds)
	}),
	stringColumn("Condition", doc(certificatesv1.CertificateSigningRequestStatus{}, "conditions"), func(csr *certificatesv1.CertificateSigningRequest) any { return csrCondition(csr) }),
)

func requestedDuration(seconds *int32) string {
	if seconds == nil {
		return "<none>"
	}
	return duration.HumanDuration(time.Duration(*seconds) * time.Second)
}

// csrCondition summarises a CSR by its decision (Denied over Approved, Pending without either),
// then Failed and Issued where they apply. Conditions count by type alone, as upstream.
func csrCondition(csr *certificatesv1.CertificateSigningRequest) string {
	has := map[certificatesv1.RequestConditionType]bool{}
	for _, c := range csr.Status.Conditions {
		has[c.Type] = true
	}
	summary := []string{"Pending"}
	if has[certificatesv1.CertificateDenied] {
		summary[0] = "Denied"
	} else if has[certificatesv1.CertificateApproved] {
		summary[0] = "Approved"
	}
	if has[certificatesv1.CertificateFailed] {
		summary = append(summary, "Failed")
	}
	if len(csr.Status.Certificate) > 0 {
		summary = append(summary, "Issued")
	}
	return strings.Join(summary, ",")
}

// clusterTrustBundles prints bundles as NAME SIGNERNAME.
var clusterTrustBundles rest.TableConvertor = newTable(
	nameColumn[*certificatesv1.ClusterTrustBundle](),
	stringColumn("SignerName", doc(certificatesv1.ClusterTrustBundleSpec{}, "signerName"), func(b *certificatesv1.ClusterTrustBundle) any { return orNone(b.Spec.SignerName) }),
)
