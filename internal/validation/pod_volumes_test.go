package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateVolumeSource(t *testing.T) {
	downward := func(files ...corev1.DownwardAPIVolumeFile) corev1.VolumeSource {
		return corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: files}}
	}
	podName := corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}
	tests := []struct {
		name string
		src  corev1.VolumeSource
		want []string
	}{
		{name: "nfs", src: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs.example", Path: "/exports"}}},
		{name: "nfs without server or path", src: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{}}, want: []string{
			"volume.nfs.server: Required value",
			"volume.nfs.path: Required value",
			"volume.nfs.path: Invalid value: \"\": must be an absolute path",
		}},
		{name: "nfs relative path", src: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs.example", Path: "exports"}}, want: []string{
			"volume.nfs.path: Invalid value: \"exports\": must be an absolute path",
		}},
		{name: "fc by target", src: corev1.VolumeSource{FC: &corev1.FCVolumeSource{TargetWWNs: []string{"500a0982991b8dc5"}, Lun: ptrTo[int32](2)}}},
		{name: "fc by wwid", src: corev1.VolumeSource{FC: &corev1.FCVolumeSource{WWIDs: []string{"3600508b400105e210000900000490000"}}}},
		{name: "fc without disk", src: corev1.VolumeSource{FC: &corev1.FCVolumeSource{}}, want: []string{
			"volume.fc.targetWWNs: Required value: must specify either targetWWNs or wwids, but not both",
		}},
		{name: "fc by both", src: corev1.VolumeSource{FC: &corev1.FCVolumeSource{TargetWWNs: []string{"a"}, WWIDs: []string{"b"}, Lun: ptrTo[int32](256)}}, want: []string{
			"volume.fc.targetWWNs: Invalid value: [\"a\"]: targetWWNs and wwids can not be specified simultaneously",
			"volume.fc.lun: Invalid value: 256: must be between 0 and 255, inclusive",
		}},
		{name: "fc target without lun", src: corev1.VolumeSource{FC: &corev1.FCVolumeSource{TargetWWNs: []string{"a"}}}, want: []string{
			"volume.fc.lun: Required value: lun is required if targetWWNs is specified",
		}},
		{name: "downward api", src: downward(
			corev1.DownwardAPIVolumeFile{Path: "name", FieldRef: &podName, Mode: ptrTo[int32](0o644)},
			corev1.DownwardAPIVolumeFile{Path: "cpu", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu"}},
		)},
		{name: "downward api file without source", src: downward(corev1.DownwardAPIVolumeFile{Path: "x"}), want: []string{
			"volume.downwardAPI.items[0]: Required value: one of fieldRef and resourceFieldRef is required",
		}},
		{
			name: "downward api file with both sources",
			src: downward(corev1.DownwardAPIVolumeFile{
				Path:             "x",
				FieldRef:         &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.nodeName"},
				ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.gpu"},
			}),
			want: []string{
				"volume.downwardAPI.items[0].fieldRef.fieldPath: Unsupported value: \"spec.nodeName\": supported values: \"metadata.annotations\", \"metadata.labels\", \"metadata.name\", \"metadata.namespace\", \"metadata.uid\"",
				"volume.downwardAPI.items[0]: Invalid value: \"resource\": fieldRef and resourceFieldRef can not be specified simultaneously",
			},
		},
		{
			name: "downward api file breaking path, resource and mode rules",
			src: downward(corev1.DownwardAPIVolumeFile{
				Path:             "..data/x",
				ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory"},
				Mode:             ptrTo[int32](0o1777),
			}, corev1.DownwardAPIVolumeFile{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu"}}),
			want: []string{
				"volume.downwardAPI.items[0].path: Invalid value: \"..data/x\": must not start with '..'",
				"volume.downwardAPI.items[0].resourceFieldRef.containerName: Required value",
				"volume.downwardAPI.items[0].mode: Invalid value: 1023: must be a number between 0 and 0777 (octal), both inclusive",
				"volume.downwardAPI.items[1].path: Required value",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectExactErrors(t, validateVolumeSource(&tc.src, "vol", "pod", field.NewPath("volume")), tc.want)
		})
	}
}
