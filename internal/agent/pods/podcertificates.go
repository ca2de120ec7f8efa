package pods

import (
	"context"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/idplane/idplane/internal/agent/podcerts"
)

// podCertsDir, under the agent's root, holds the pods' certificate keys: outside pods/, which
// volumes are written under, and owner-only.
const podCertsDir = "podcerts"

// startPodCertificates starts the manager of the pods' podCertificate sources: a change to one
// of the node's requests brings its pod back to the queue.
func (m *Manager) startPodCertificates(ctx context.Context) (*podcerts.Manager, error) {
	certs, err := podcerts.New(podcerts.Config{
		NodeName: m.c.NodeName,
		StateDir: filepath.Join(m.c.RootDir, podCertsDir),
		Client:   m.c.Client,
		Clock:    m.c.Clock,
		OnChange: func(namespace, podName string) {
			m.queue.Add(cache.NewObjectName(namespace, podName).String())
		},
	})
	if err != nil {
		return nil, err
	}
	m.certs = certs
	go certs.Run(ctx)
	return certs, nil
}

func (s sources) PodCertificate(ctx context.Context, pod *corev1.Pod, volume string, index int, source *corev1.PodCertificateProjection) ([]byte, []byte, error) {
	return s.certs.Credentials(ctx, pod, volume, index, source)
}

// earliest is the earlier of two times, zero meaning none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}
