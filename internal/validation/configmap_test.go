package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func validConfigMap() *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "app-config", Namespace: "default"},
		Data:       map[string]string{"app.yaml": "a: 1", "LOG_LEVEL": "debug"},
		BinaryData: map[string][]byte{"logo.png": {0x89, 0x50}},
	}
}

func TestValidateConfigMap(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*corev1.ConfigMap)
		want   []want
	}{
		{name: "valid", mutate: func(*corev1.ConfigMap) {}},
		{name: "empty", mutate: func(c *corev1.ConfigMap) { c.Data, c.BinaryData = nil, nil }},
		{name: "invalid data key", mutate: func(c *corev1.ConfigMap) { c.Data["a b"] = "" }, want: []want{invalid("data[a b]")}},
		{name: "invalid binaryData key", mutate: func(c *corev1.ConfigMap) { c.BinaryData["x/y"] = nil }, want: []want{invalid("binaryData[x/y]")}},
		{name: "key in both", mutate: func(c *corev1.ConfigMap) { c.BinaryData["app.yaml"] = nil }, want: []want{invalid("data[app.yaml]")}},
		{
			name: "too large",
			mutate: func(c *corev1.ConfigMap) {
				c.Data["big"] = strings.Repeat("x", 1024*1024-10)
				c.BinaryData["big.bin"] = make([]byte, 20)
			},
			want: []want{tooLong("[]")},
		},
		{name: "invalid name", mutate: func(c *corev1.ConfigMap) { c.Name = "App_Config" }, want: []want{invalid("metadata.name")}},
		{name: "missing namespace", mutate: func(c *corev1.ConfigMap) { c.Namespace = "" }, want: []want{required("metadata.namespace")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfigMap()
			tc.mutate(c)
			expectErrors(t, ValidateConfigMap(c), tc.want...)
		})
	}
}

func TestValidateConfigMapUpdate(t *testing.T) {
	immutable := func(c *corev1.ConfigMap) { c.Immutable = ptrTo(true) }
	tests := []struct {
		name   string
		old    func(*corev1.ConfigMap)
		mutate func(*corev1.ConfigMap)
		want   []want
	}{
		{name: "change data", mutate: func(c *corev1.ConfigMap) { c.Data["LOG_LEVEL"] = "info" }},
		{name: "relabel immutable", old: immutable, mutate: func(c *corev1.ConfigMap) { c.Labels = map[string]string{"a": "b"} }},
		{name: "change immutable data", old: immutable, mutate: func(c *corev1.ConfigMap) { c.Data["LOG_LEVEL"] = "info" }, want: []want{forbidden("data")}},
		{
			name:   "change immutable binaryData",
			old:    immutable,
			mutate: func(c *corev1.ConfigMap) { c.BinaryData["logo.png"] = []byte{1} },
			want:   []want{forbidden("binaryData")},
		},
		{name: "unset immutable", old: immutable, mutate: func(c *corev1.ConfigMap) { c.Immutable = nil }, want: []want{forbidden("immutable")}},
		{name: "invalid key", mutate: func(c *corev1.ConfigMap) { c.Data["?"] = "" }, want: []want{invalid("data[?]")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldC := validConfigMap()
			oldC.ResourceVersion = "4"
			if tc.old != nil {
				tc.old(oldC)
			}
			newC := oldC.DeepCopy()
			tc.mutate(newC)
			expectErrors(t, ValidateConfigMapUpdate(newC, oldC), tc.want...)
		})
	}
}
