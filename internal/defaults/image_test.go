package defaults

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestPullPolicyFor(t *testing.T) {
	sha256 := strings.Repeat("a", 64)
	tests := []struct {
		name  string
		image string
		want  corev1.PullPolicy
	}{
		{"no tag means latest", "nginx", corev1.PullAlways},
		{"explicit latest", "nginx:latest", corev1.PullAlways},
		{"pinned tag", "nginx:1.27", corev1.PullIfNotPresent},
		{"tag comparison is case sensitive", "nginx:Latest", corev1.PullIfNotPresent},
		{"digest only", "nginx@sha256:" + sha256, corev1.PullIfNotPresent},
		{"latest tag with digest", "nginx:latest@sha256:" + sha256, corev1.PullAlways},
		{"registry with port, no tag", "registry.example.com:5000/team/app", corev1.PullAlways},
		{"localhost registry with tag", "localhost:5000/app:v1", corev1.PullIfNotPresent},
		{"ipv6 registry", "[::1]:5000/app", corev1.PullAlways},
		{"fully qualified docker hub", "docker.io/library/nginx", corev1.PullAlways},
		{"upper-case host is a registry", "Registry/app", corev1.PullAlways},
		{"empty image does not parse", "", corev1.PullIfNotPresent},
		{"upper-case repository does not parse", "Nginx", corev1.PullIfNotPresent},
		{"upper-case path does not parse", "team/App", corev1.PullIfNotPresent},
		{"empty tag does not parse", "nginx:", corev1.PullIfNotPresent},
		{"unsupported digest algorithm does not parse", "nginx@md5:" + sha256, corev1.PullIfNotPresent},
		{"short sha256 digest does not parse", "nginx:latest@sha256:abc", corev1.PullIfNotPresent},
		{"bare image id does not parse", sha256, corev1.PullIfNotPresent},
		{"path longer than 255 does not parse", "example.com/" + strings.Repeat("a", 256), corev1.PullIfNotPresent},
		{"path of 255 parses", "example.com/" + strings.Repeat("a", 255), corev1.PullAlways},
		{"tag longer than 128 does not parse", "nginx:" + strings.Repeat("t", 129), corev1.PullIfNotPresent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pullPolicyFor(tt.image); got != tt.want {
				t.Errorf("pullPolicyFor(%q) = %s, want %s", tt.image, got, tt.want)
			}
		})
	}
}
