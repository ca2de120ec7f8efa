package volumes

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/idplane/idplane/internal/agent/atomicwriter"
	"github.com/idplane/idplane/internal/agent/podcerts"
)

// certSources also hands out pod certificates: the key and chain name the source they are for.
type certSources struct {
	*fakeSources
	err error
}

func (c *certSources) PodCertificate(_ context.Context, pod *corev1.Pod, volume string, index int, s *corev1.PodCertificateProjection) ([]byte, []byte, error) {
	c.calls = append(c.calls, fmt.Sprintf("podcert/%s/%d", volume, index))
	if c.err != nil {
		return nil, nil, c.err
	}
	return []byte(fmt.Sprintf("KEY %s %s/%d|", pod.Name, volume, index)), []byte("CHAIN " + s.SignerName), nil
}

func TestPodCertificateSource(t *testing.T) {
	proj := func(defaultMode *int32, sources ...corev1.VolumeProjection) corev1.VolumeSource {
		return corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: defaultMode, Sources: sources}}
	}
	cert := func(p corev1.PodCertificateProjection) corev1.VolumeProjection {
		if p.SignerName == "" {
			p.SignerName = "example.com/s"
		}
		p.KeyType = "ED25519"
		return corev1.VolumeProjection{PodCertificate: &p}
	}
	issuing := func(f *fakeSources) Sources { return &certSources{fakeSources: f} }
	refusing := func(f *fakeSources) Sources {
		return &certSources{fakeSources: f, err: &podcerts.RefusedError{Request: "team/req-1", Condition: "Denied", Reason: "UnsupportedKeyType", Message: "use ECDSAP256"}}
	}
	pending := func(f *fakeSources) Sources {
		return &certSources{fakeSources: f, err: errors.New("PodCertificateRequest team/req-1 is not issued yet")}
	}
	owned := func(f fakeOwner) func(*corev1.Pod) { return f.apply }
	runBuildCases(t, []buildCase{
		{name: "credential bundle: the key, then the chain", src: issuing, volume: proj(nil, cert(corev1.PodCertificateProjection{CredentialBundlePath: "tls/bundle.pem"})),
			want: map[string]atomicwriter.FileProjection{"tls/bundle.pem": file("KEY web vol/0|CHAIN example.com/s", 0o644)}},
		{name: "key and chain files, second source", src: issuing,
			volume: proj(i32(0o440), corev1.VolumeProjection{DownwardAPI: &corev1.DownwardAPIProjection{}}, cert(corev1.PodCertificateProjection{KeyPath: "key.pem", CertificateChainPath: "chain.pem"})),
			want:   map[string]atomicwriter.FileProjection{"key.pem": file("KEY web vol/1|", 0o440), "chain.pem": file("CHAIN example.com/s", 0o440)}},
		{name: "all three files", src: issuing, volume: proj(nil, cert(corev1.PodCertificateProjection{CredentialBundlePath: "b", KeyPath: "k", CertificateChainPath: "c"})),
			want: map[string]atomicwriter.FileProjection{"b": file("KEY web vol/0|CHAIN example.com/s", 0o644), "k": file("KEY web vol/0|", 0o644), "c": file("CHAIN example.com/s", 0o644)}},
		{name: "with fsGroup: 0600 and group read", src: issuing, pod: owned(fakeOwner{fsGroup: i64(2000)}),
			volume: proj(nil, cert(corev1.PodCertificateProjection{CredentialBundlePath: "b"})),
			want:   map[string]atomicwriter.FileProjection{"b": {Data: []byte("KEY web vol/0|CHAIN example.com/s"), Mode: 0o640, GID: i64(2000)}}},
		{name: "with one runAsUser: 0600 owned by it", src: issuing, pod: owned(fakeOwner{runAsUser: i64(1000)}),
			volume: proj(nil, cert(corev1.PodCertificateProjection{KeyPath: "k", CertificateChainPath: "c"})),
			want: map[string]atomicwriter.FileProjection{
				"k": {Data: []byte("KEY web vol/0|"), Mode: 0o600, UID: i64(1000)},
				"c": {Data: []byte("CHAIN example.com/s"), Mode: 0o600, UID: i64(1000)},
			}},
		{name: "denied: the signer's message", src: refusing, volume: proj(nil, cert(corev1.PodCertificateProjection{CredentialBundlePath: "b"})),
			outcome: failure, errHas: `reason="UnsupportedKeyType", message="use ECDSAP256"`},
		{name: "not issued yet", src: pending, volume: proj(nil, cert(corev1.PodCertificateProjection{CredentialBundlePath: "b"})),
			outcome: notReady, errHas: "not issued yet"},
		{name: "path collides with another source", src: issuing,
			volume:  proj(nil, corev1.VolumeProjection{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "b"}}, cert(corev1.PodCertificateProjection{CredentialBundlePath: "b"})),
			outcome: failure, errHas: "already written"},
		{name: "key without chain", src: issuing, volume: proj(nil, cert(corev1.PodCertificateProjection{KeyPath: "k"})), outcome: failure, errHas: "go together"},
		{name: "no file", src: issuing, volume: proj(nil, cert(corev1.PodCertificateProjection{})), outcome: failure, errHas: "names no file"},
		{name: "sources that cannot request certificates", volume: proj(nil, cert(corev1.PodCertificateProjection{CredentialBundlePath: "b"})), outcome: failure, errHas: "cannot request"},
	})
}

// fakeOwner sets the pod's fsGroup or every container's runAsUser.
type fakeOwner struct{ fsGroup, runAsUser *int64 }

func (f fakeOwner) apply(p *corev1.Pod) {
	p.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: f.fsGroup, RunAsUser: f.runAsUser}
}

// TestPodCertificateNotRequestedForARefusedPath: a path that escapes the volume (the API would
// refuse it; the agent does not rely on that) fails the volume before a key is made or a
// certificate requested.
func TestPodCertificateNotRequestedForARefusedPath(t *testing.T) {
	for _, p := range []corev1.PodCertificateProjection{
		{CredentialBundlePath: "../../../etc/cron.d/x"},
		{KeyPath: "/abs/key", CertificateChainPath: "c"},
		{KeyPath: "k", CertificateChainPath: "..data/c"},
	} {
		p.SignerName, p.KeyType = "example.com/s", "ED25519"
		src := &certSources{fakeSources: newSources()}
		v := &corev1.Volume{Name: "vol", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{PodCertificate: &p}}}}}
		if _, err := Build(context.Background(), basePod(), v, src); err == nil || IsNotReady(err) {
			t.Fatalf("%+v: Build = %v, want a failure", p, err)
		}
		if len(src.calls) != 0 {
			t.Errorf("%+v: sources called: %v", p, src.calls)
		}
	}
}
