package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateVolumeMounts(t *testing.T) {
	volumes := map[string]corev1.VolumeSource{
		"data":  {EmptyDir: &corev1.EmptyDirVolumeSource{}},
		"image": {Image: &corev1.ImageVolumeSource{Reference: "example.com/tools:1"}},
		"claim": {PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}},
	}
	privileged := &corev1.SecurityContext{Privileged: ptrTo(true)}
	tests := []struct {
		name string
		ctr  corev1.Container
		want []string
	}{
		{name: "none"},
		{
			name: "valid",
			ctr: corev1.Container{SecurityContext: privileged, VolumeMounts: []corev1.VolumeMount{
				{Name: "data", MountPath: "/data", SubPath: "a/b", MountPropagation: ptrTo(corev1.MountPropagationBidirectional)},
				{Name: "image", MountPath: "/tools", ReadOnly: true, RecursiveReadOnly: ptrTo(corev1.RecursiveReadOnlyEnabled)},
				{Name: "data", MountPath: "/logs", SubPathExpr: "$(POD_NAME)", RecursiveReadOnly: ptrTo(corev1.RecursiveReadOnlyDisabled)},
			}},
		},
		{
			name: "names and paths",
			ctr: corev1.Container{VolumeMounts: []corev1.VolumeMount{
				{},
				{Name: "nope", MountPath: "/a"},
				{Name: "data", MountPath: "/a"},
			}},
			want: []string{
				"volumeMounts[0].name: Required value",
				"volumeMounts[0].name: Not found: \"\"",
				"volumeMounts[0].mountPath: Required value",
				"volumeMounts[1].name: Not found: \"nope\"",
				"volumeMounts[2].mountPath: Invalid value: \"/a\": must be unique",
			},
		},
		{
			name: "clashes with devices",
			ctr: corev1.Container{
				VolumeDevices: []corev1.VolumeDevice{{Name: "claim", DevicePath: "/dev/x"}, {Name: "other", DevicePath: "/dev/y"}},
				VolumeMounts:  []corev1.VolumeMount{{Name: "claim", MountPath: "/dev/y"}},
			},
			want: []string{
				"volumeMounts[0].name: Invalid value: \"claim\": must not already exist in volumeDevices",
				"volumeMounts[0].mountPath: Invalid value: \"/dev/y\": must not already exist as a path in volumeDevices",
			},
		},
		{
			name: "sub paths",
			ctr: corev1.Container{VolumeMounts: []corev1.VolumeMount{
				{Name: "image", MountPath: "/a", SubPath: "x", SubPathExpr: "y"},
				{Name: "data", MountPath: "/b", SubPath: "../x"},
				{Name: "data", MountPath: "/c", SubPathExpr: "/x"},
			}},
			want: []string{
				"volumeMounts[0].subPath: Invalid value: \"x\": not allowed in image volume sources",
				"volumeMounts[0].subPathExpr: Invalid value: \"y\": not allowed in image volume sources",
				"volumeMounts[0].subPathExpr: Invalid value: \"y\": subPathExpr and subPath are mutually exclusive",
				"volumeMounts[1].subPath: Invalid value: \"../x\": must not contain '..'",
				"volumeMounts[2].subPathExpr: Invalid value: \"/x\": must be a relative path",
			},
		},
		{
			name: "propagation",
			ctr: corev1.Container{VolumeMounts: []corev1.VolumeMount{
				{Name: "data", MountPath: "/a", MountPropagation: ptrTo(corev1.MountPropagationBidirectional)},
				{Name: "data", MountPath: "/b", MountPropagation: ptrTo(corev1.MountPropagationMode("Sideways"))},
				{Name: "data", MountPath: "/c", MountPropagation: ptrTo(corev1.MountPropagationHostToContainer)},
			}},
			want: []string{
				"volumeMounts[0].mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers",
				"volumeMounts[1].mountPropagation: Unsupported value: \"Sideways\": supported values: \"Bidirectional\", \"HostToContainer\", \"None\"",
			},
		},
		{
			name: "recursive read-only",
			ctr: corev1.Container{VolumeMounts: []corev1.VolumeMount{
				{Name: "data", MountPath: "/a", RecursiveReadOnly: ptrTo(corev1.RecursiveReadOnlyIfPossible)},
				{Name: "data", MountPath: "/b", ReadOnly: true, RecursiveReadOnly: ptrTo(corev1.RecursiveReadOnlyEnabled), MountPropagation: ptrTo(corev1.MountPropagationHostToContainer)},
				{Name: "data", MountPath: "/c", RecursiveReadOnly: ptrTo(corev1.RecursiveReadOnlyMode("Always"))},
			}},
			want: []string{
				"volumeMounts[0].recursiveReadOnly: Forbidden: may only be specified when readOnly is true",
				"volumeMounts[1].recursiveReadOnly: Forbidden: may only be specified when mountPropagation is None or not specified",
				"volumeMounts[2].recursiveReadOnly: Unsupported value: \"Always\": supported values: \"Disabled\", \"Enabled\", \"IfPossible\"",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectExactErrors(t, validateVolumeMounts(&tc.ctr, volumes, field.NewPath("volumeMounts")), tc.want)
		})
	}
}
