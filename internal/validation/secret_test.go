package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func validSecret(typ corev1.SecretType, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"},
		Type:       typ,
		Data:       data,
	}
}

func TestValidateSecret(t *testing.T) {
	dockerCfg := []byte(`{"auths":{"registry.example.com":{"auth":"dXNlcjpwYXNz"}}}`)
	tests := []struct {
		name   string
		secret *corev1.Secret
		want   []want
	}{
		{name: "opaque", secret: validSecret(corev1.SecretTypeOpaque, map[string][]byte{"password": []byte("s3cret"), ".hidden_key-1": nil})},
		{
			name: "opaque from stringData",
			secret: func() *corev1.Secret {
				s := validSecret(corev1.SecretTypeOpaque, nil)
				s.StringData = map[string]string{"token": "x"}
				return s
			}(),
		},
		{name: "invalid key", secret: validSecret(corev1.SecretTypeOpaque, map[string][]byte{"a/b": nil}), want: []want{invalid("data[a/b]")}},
		{
			name: "invalid stringData key",
			secret: func() *corev1.Secret {
				s := validSecret(corev1.SecretTypeOpaque, nil)
				s.StringData = map[string]string{"..": "x"}
				return s
			}(),
			want: []want{invalid("stringData[..]")},
		},
		{
			name:   "too large",
			secret: validSecret(corev1.SecretTypeOpaque, map[string][]byte{"a": []byte(strings.Repeat("x", 1024*1024)), "b": []byte("y")}),
			want:   []want{tooLong("data")},
		},
		{
			name: "missing namespace",
			secret: func() *corev1.Secret {
				s := validSecret(corev1.SecretTypeOpaque, nil)
				s.Namespace = ""
				return s
			}(),
			want: []want{required("metadata.namespace")},
		},
		{
			name: "service account token",
			secret: func() *corev1.Secret {
				s := validSecret(corev1.SecretTypeServiceAccountToken, nil)
				s.Annotations = map[string]string{corev1.ServiceAccountNameKey: "default"}
				return s
			}(),
		},
		{
			name:   "service account token without account",
			secret: validSecret(corev1.SecretTypeServiceAccountToken, nil),
			want:   []want{required("metadata.annotations[kubernetes.io/service-account.name]")},
		},
		{name: "dockercfg", secret: validSecret(corev1.SecretTypeDockercfg, map[string][]byte{corev1.DockerConfigKey: dockerCfg})},
		{name: "dockercfg missing key", secret: validSecret(corev1.SecretTypeDockercfg, nil), want: []want{required("data[.dockercfg]")}},
		{
			name:   "dockercfg not JSON",
			secret: validSecret(corev1.SecretTypeDockercfg, map[string][]byte{corev1.DockerConfigKey: []byte("{")}),
			want:   []want{invalid("data[.dockercfg]")},
		},
		{name: "dockerconfigjson", secret: validSecret(corev1.SecretTypeDockerConfigJson, map[string][]byte{corev1.DockerConfigJsonKey: dockerCfg})},
		{
			name:   "dockerconfigjson not JSON",
			secret: validSecret(corev1.SecretTypeDockerConfigJson, map[string][]byte{corev1.DockerConfigJsonKey: []byte("auths")}),
			want:   []want{invalid("data[.dockerconfigjson]")},
		},
		{name: "basic auth with username only", secret: validSecret(corev1.SecretTypeBasicAuth, map[string][]byte{corev1.BasicAuthUsernameKey: []byte("u")})},
		{
			name:   "basic auth without credentials",
			secret: validSecret(corev1.SecretTypeBasicAuth, nil),
			want:   []want{required("data[username]"), required("data[password]")},
		},
		{
			name:   "ssh auth without key",
			secret: validSecret(corev1.SecretTypeSSHAuth, map[string][]byte{corev1.SSHAuthPrivateKey: nil}),
			want:   []want{required("data[ssh-privatekey]")},
		},
		{name: "tls", secret: validSecret(corev1.SecretTypeTLS, map[string][]byte{corev1.TLSCertKey: []byte("c"), corev1.TLSPrivateKeyKey: []byte("k")})},
		{
			name:   "tls without key",
			secret: validSecret(corev1.SecretTypeTLS, map[string][]byte{corev1.TLSCertKey: []byte("c")}),
			want:   []want{required("data[tls.key]")},
		},
		{
			name: "bootstrap token",
			secret: validSecret(corev1.SecretTypeBootstrapToken, map[string][]byte{
				"token-id": []byte("abcdef"), "token-secret": []byte("0123456789abcdef"), "usage-bootstrap-authentication": []byte("true"),
			}),
		},
		{name: "custom type", secret: validSecret("example.com/custom", map[string][]byte{"k": nil})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidateSecret(tc.secret), tc.want...)
		})
	}
}

func TestValidateSecretUpdate(t *testing.T) {
	immutable := func(s *corev1.Secret) { s.Immutable = ptrTo(true) }
	tests := []struct {
		name   string
		old    func(*corev1.Secret)
		mutate func(*corev1.Secret)
		want   []want
	}{
		{name: "change data", mutate: func(s *corev1.Secret) { s.Data["password"] = []byte("new") }},
		{name: "make immutable", mutate: immutable},
		{name: "change type", mutate: func(s *corev1.Secret) { s.Type = corev1.SecretTypeBasicAuth }, want: []want{invalid("type")}},
		{name: "relabel immutable", old: immutable, mutate: func(s *corev1.Secret) { s.Labels = map[string]string{"a": "b"} }},
		{name: "change immutable data", old: immutable, mutate: func(s *corev1.Secret) { s.Data["password"] = []byte("new") }, want: []want{forbidden("data")}},
		{
			name:   "change immutable data through stringData",
			old:    immutable,
			mutate: func(s *corev1.Secret) { s.StringData = map[string]string{"password": "new"} },
			want:   []want{forbidden("data")},
		},
		{name: "unset immutable", old: immutable, mutate: func(s *corev1.Secret) { s.Immutable = ptrTo(false) }, want: []want{forbidden("immutable")}},
		{name: "drop immutable", old: immutable, mutate: func(s *corev1.Secret) { s.Immutable = nil }, want: []want{forbidden("immutable")}},
		{name: "rename", mutate: func(s *corev1.Secret) { s.Name = "other" }, want: []want{invalid("metadata.name")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldS := validSecret(corev1.SecretTypeOpaque, map[string][]byte{"password": []byte("old")})
			oldS.ResourceVersion = "2"
			if tc.old != nil {
				tc.old(oldS)
			}
			newS := oldS.DeepCopy()
			tc.mutate(newS)
			expectErrors(t, ValidateSecretUpdate(newS, oldS), tc.want...)
		})
	}
}
