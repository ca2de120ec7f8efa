package volumes

import (
	"context"
	"io/fs"

	corev1 "k8s.io/api/core/v1"

	"github.com/idplane/idplane/internal/agent/atomicwriter"
	"github.com/idplane/idplane/internal/agent/podcerts"
)

// PodCertificateSource may also be implemented by a Sources: it returns the PKCS#8 PEM key and
// the PEM certificate chain of source index of the projected volume named volume. An error for
// which podcerts.IsRefused holds fails the volume (the signer's final answer); any other is
// waited for. Without it a podCertificate source fails the volume.
type PodCertificateSource interface {
	PodCertificate(ctx context.Context, pod *corev1.Pod, volume string, index int, source *corev1.PodCertificateProjection) (key, chain []byte, err error)
}

// podCertificate adds a source's credential bundle (the key, then the chain) and/or its key and
// chain files, with the mode rules of a service-account token: they hold a private key.
func (b *builder) podCertificate(s *corev1.PodCertificateProjection, index int, mode fs.FileMode, what string) {
	switch {
	case s.SignerName == "":
		b.fail("%s: signerName is required", what)
		return
	case (s.KeyPath == "") != (s.CertificateChainPath == ""):
		b.fail("%s: keyPath and certificateChainPath go together", what)
		return
	case s.CredentialBundlePath == "" && s.KeyPath == "":
		b.fail("%s: names no file to write (credentialBundlePath, or keyPath and certificateChainPath)", what)
		return
	}
	// The paths are checked before a key is made or a certificate requested for them.
	for _, p := range []string{s.CredentialBundlePath, s.KeyPath, s.CertificateChainPath} {
		if p == "" {
			continue
		}
		if _, err := atomicwriter.ValidatePath(p); err != nil {
			b.fail("%s: %w", what, err)
			return
		}
	}
	src, ok := b.src.(PodCertificateSource)
	if !ok {
		b.fail("%s: the agent cannot request pod certificates here", what)
		return
	}
	key, chain, err := src.PodCertificate(b.ctx, b.pod, b.volumeName, index, s)
	if err != nil {
		if podcerts.IsRefused(err) {
			b.fail("%s: %w", what, err)
		} else {
			b.wait("%s: %w", what, err)
		}
		return
	}
	if s.CredentialBundlePath != "" {
		bundle := make([]byte, 0, len(key)+len(chain))
		bundle = append(append(bundle, key...), chain...)
		b.add(s.CredentialBundlePath, what+" credentialBundlePath", b.owner.token(bundle, mode))
	}
	if s.KeyPath != "" {
		b.add(s.KeyPath, what+" keyPath", b.owner.token(key, mode))
		b.add(s.CertificateChainPath, what+" certificateChainPath", b.owner.token(chain, mode))
	}
}
