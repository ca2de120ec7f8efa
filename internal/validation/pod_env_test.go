package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateEnv(t *testing.T) {
	cmRef := func(name, key string) *corev1.ConfigMapKeySelector {
		return &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
	}
	secretRef := func(name, key string) *corev1.SecretKeySelector {
		return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
	}
	tests := []struct {
		name string
		vars []corev1.EnvVar
		want []string
	}{
		{name: "none"},
		{
			name: "valid",
			vars: []corev1.EnvVar{
				{Name: "PLAIN", Value: "x"},
				{Name: "relaxed.name-1:ok"},
				{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
				{Name: "CPU", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1m")}}},
				{Name: "CM", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: cmRef("cfg", "k")}},
				{Name: "SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: secretRef("sec", "k")}},
				{Name: "FILE", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: "cfg", Path: "env/vars", Key: "K"}}},
			},
		},
		{name: "missing name", vars: []corev1.EnvVar{{Value: "x"}}, want: []string{
			"env[0].name: Required value",
		}},
		{name: "name with equals sign", vars: []corev1.EnvVar{{Name: "A=B"}}, want: []string{
			"env[0].name: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='",
		}},
		{name: "valueFrom without source", vars: []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{}}}, want: []string{
			"env[0].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`",
		}},
		{name: "valueFrom and value", vars: []corev1.EnvVar{{Name: "A", Value: "x", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: cmRef("cfg", "k")}}}, want: []string{
			"env[0].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty",
		}},
		{
			name: "valueFrom and value with two sources",
			vars: []corev1.EnvVar{{Name: "A", Value: "x", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: cmRef("cfg", "k"), SecretKeyRef: secretRef("sec", "k")}}},
			want: []string{
				"env[0].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty",
			},
		},
		{
			name: "every source, each invalid",
			vars: []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{
				FieldRef:         &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.restartPolicy"},
				ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.gpu"},
				ConfigMapKeyRef:  cmRef("", ""),
				SecretKeyRef:     secretRef("Sec", "a/b"),
				FileKeyRef:       &corev1.FileKeySelector{},
			}}},
			want: []string{
				"env[0].valueFrom.fieldRef.fieldPath: Unsupported value: \"spec.restartPolicy\": supported values: \"metadata.name\", \"metadata.namespace\", \"metadata.uid\", \"spec.nodeName\", \"spec.serviceAccountName\", \"status.hostIP\", \"status.hostIPs\", \"status.podIP\", \"status.podIPs\"",
				"env[0].valueFrom.resourceFieldRef.resource: Unsupported value: \"limits.gpu\": supported values: \"limits.cpu\", \"limits.ephemeral-storage\", \"limits.memory\", \"requests.cpu\", \"requests.ephemeral-storage\", \"requests.memory\"",
				"env[0].valueFrom.configMapKeyRef.name: Invalid value: \"\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
				"env[0].valueFrom.configMapKeyRef.key: Required value",
				"env[0].valueFrom.secretKeyRef.name: Invalid value: \"Sec\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
				"env[0].valueFrom.secretKeyRef.key: Invalid value: \"a/b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
				"env[0].valueFrom.fileKeyRef.volumeName: Required value",
				"env[0].valueFrom.fileKeyRef.path: Required value",
				"env[0].valueFrom.fileKeyRef.key: Required value",
				"env[0].valueFrom: Invalid value: \"\": may not have more than one field specified at a time",
			},
		},
		{
			name: "file key selector escaping its volume",
			vars: []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: "cfg", Path: "../x", Key: "A=B"}}}},
			want: []string{
				"env[0].valueFrom.fileKeyRef.path: Invalid value: \"../x\": must not contain '..'",
				"env[0].valueFrom.fileKeyRef.key: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='",
			},
		},
		{
			name: "file key selector absolute path",
			vars: []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: "cfg", Path: "/x", Key: "K"}}}},
			want: []string{
				"env[0].valueFrom.fileKeyRef.path: Invalid value: \"/x\": must be a relative path",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectExactErrors(t, validateEnv(tc.vars, field.NewPath("env")), tc.want)
		})
	}
}

func TestValidateEnvFrom(t *testing.T) {
	cm := func(name string) *corev1.ConfigMapEnvSource {
		return &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}
	}
	secret := func(name string) *corev1.SecretEnvSource {
		return &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}
	}
	tests := []struct {
		name    string
		sources []corev1.EnvFromSource
		want    []string
	}{
		{name: "none"},
		{name: "valid", sources: []corev1.EnvFromSource{{ConfigMapRef: cm("cfg")}, {Prefix: "S_", SecretRef: secret("sec")}, {Prefix: "1.relaxed", ConfigMapRef: cm("generated-")}}},
		{name: "prefix with equals sign", sources: []corev1.EnvFromSource{{Prefix: "A=", ConfigMapRef: cm("cfg")}}, want: []string{
			"envFrom[0].prefix: Invalid value: \"A=\": a valid environment variable name must consist only of printable ASCII characters other than '='",
		}},
		// The error is reported at the list, not at the entry: upstream's path, kept.
		{name: "without source", sources: []corev1.EnvFromSource{{ConfigMapRef: cm("cfg")}, {Prefix: "X_"}}, want: []string{
			"envFrom: Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`",
		}},
		{name: "both sources", sources: []corev1.EnvFromSource{{ConfigMapRef: cm("cfg"), SecretRef: secret("sec")}}, want: []string{
			"envFrom: Invalid value: \"\": may not have more than one field specified at a time",
		}},
		{name: "source without name", sources: []corev1.EnvFromSource{{ConfigMapRef: cm("")}, {SecretRef: secret("")}}, want: []string{
			"envFrom[0].configMapRef.name: Required value",
			"envFrom[1].secretRef.name: Required value",
		}},
		{name: "source with invalid name", sources: []corev1.EnvFromSource{{ConfigMapRef: cm("Cfg")}, {SecretRef: secret("sec_1")}}, want: []string{
			"envFrom[0].configMapRef.name: Invalid value: \"Cfg\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
			"envFrom[1].secretRef.name: Invalid value: \"sec_1\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
		}},
		{
			name:    "everything wrong at once, in order",
			sources: []corev1.EnvFromSource{{Prefix: "A=", ConfigMapRef: cm(""), SecretRef: secret("Sec")}},
			want: []string{
				"envFrom[0].prefix: Invalid value: \"A=\": a valid environment variable name must consist only of printable ASCII characters other than '='",
				"envFrom[0].configMapRef.name: Required value",
				"envFrom[0].secretRef.name: Invalid value: \"Sec\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
				"envFrom: Invalid value: \"\": may not have more than one field specified at a time",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectExactErrors(t, validateEnvFrom(tc.sources, field.NewPath("envFrom")), tc.want)
		})
	}
}

// The "one of" wording is built from the union's table, so a source added to
// a table is named in the error without touching the message.
func TestUnionCountErrors(t *testing.T) {
	tests := []struct {
		name string
		set  int
		want []string
	}{
		{name: "none of the env var sources", set: 0, want: []string{
			"valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`",
		}},
		{name: "one", set: 1},
		{name: "several", set: 3, want: []string{
			"valueFrom: Invalid value: \"\": may not have more than one field specified at a time",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectExactErrors(t, unionCountErrors(tc.set, envVarSources, field.NewPath("valueFrom")), tc.want)
		})
	}
	expectExactErrors(t, unionCountErrors(0, envFromSources, field.NewPath("envFrom")), []string{
		"envFrom: Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`",
	})
}
