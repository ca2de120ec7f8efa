package defaults

import storagev1 "k8s.io/api/storage/v1"

// VolumeAttachment defaults the inline volume spec a CSI migration attachment may carry.
func VolumeAttachment(va *storagev1.VolumeAttachment) {
	if spec := va.Spec.Source.InlineVolumeSpec; spec != nil {
		persistentVolumeSource(spec)
	}
}

// VolumeAttachmentList defaults every attachment of the list.
func VolumeAttachmentList(l *storagev1.VolumeAttachmentList) {
	for i := range l.Items {
		VolumeAttachment(&l.Items[i])
	}
}
