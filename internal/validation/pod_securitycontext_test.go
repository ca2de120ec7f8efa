package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateSecurityContext(t *testing.T) {
	long := strings.Repeat("p", 4096)
	tests := []struct {
		name      string
		sc        *corev1.SecurityContext
		hostUsers bool
		want      []string
	}{
		{name: "nil", sc: nil},
		{name: "empty", sc: &corev1.SecurityContext{}},
		{name: "negative ids", sc: &corev1.SecurityContext{RunAsUser: ptrTo[int64](-1), RunAsGroup: ptrTo[int64](-2)}, want: []string{
			"securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive",
			"securityContext.runAsGroup: Invalid value: -2: must be between 0 and 2147483647, inclusive",
		}},
		{name: "ids too large", sc: &corev1.SecurityContext{RunAsUser: ptrTo[int64](1 << 32), RunAsGroup: ptrTo[int64](1 << 32)}, want: []string{
			"securityContext.runAsUser: Invalid value: 4294967296: must be between 0 and 2147483647, inclusive",
			"securityContext.runAsGroup: Invalid value: 4294967296: must be between 0 and 2147483647, inclusive",
		}},
		{name: "default proc mount", sc: &corev1.SecurityContext{ProcMount: ptrTo(corev1.DefaultProcMount)}, hostUsers: true},
		{name: "unmasked proc mount in user namespace", sc: &corev1.SecurityContext{ProcMount: ptrTo(corev1.UnmaskedProcMount)}},
		{name: "unmasked proc mount with host users", sc: &corev1.SecurityContext{ProcMount: ptrTo(corev1.UnmaskedProcMount)}, hostUsers: true, want: []string{
			"securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`",
		}},
		{name: "unsupported proc mount", sc: &corev1.SecurityContext{ProcMount: ptrTo(corev1.ProcMountType("Masked"))}, hostUsers: true, want: []string{
			"securityContext.procMount: Unsupported value: \"Masked\": supported values: \"Default\", \"Unmasked\"",
		}},
		{name: "seccomp without type", sc: &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{}}, want: []string{
			"securityContext.seccompProfile.type: Required value: type is required when seccompProfile is set",
		}},
		{
			name: "seccomp without type but with profile",
			sc:   &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{LocalhostProfile: ptrTo("p.json")}},
			want: []string{
				"securityContext.seccompProfile.type: Required value: type is required when seccompProfile is set",
				"securityContext.seccompProfile.localhostProfile: Invalid value: {\"type\":\"\",\"localhostProfile\":\"p.json\"}: can only be set when seccomp type is Localhost",
			},
		},
		{name: "seccomp localhost without profile", sc: &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}}, want: []string{
			"securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost",
		}},
		{
			name: "seccomp localhost profile escaping",
			sc:   &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptrTo("../p.json")}},
			want: []string{
				"securityContext.seccompProfile.localhostProfile: Invalid value: \"../p.json\": must not contain '..'",
			},
		},
		{
			name: "seccomp localhost profile absolute",
			sc:   &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptrTo("/p.json")}},
			want: []string{
				"securityContext.seccompProfile.localhostProfile: Invalid value: \"/p.json\": must be a relative path",
			},
		},
		{name: "seccomp localhost", sc: &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptrTo("profiles/p.json")}}},
		{name: "seccomp runtime default", sc: &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}},
		{
			name: "seccomp unconfined with profile",
			sc:   &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined, LocalhostProfile: ptrTo("p.json")}},
			want: []string{
				"securityContext.seccompProfile.localhostProfile: Invalid value: {\"type\":\"Unconfined\",\"localhostProfile\":\"p.json\"}: can only be set when seccomp type is Localhost",
			},
		},
		{
			name: "seccomp unsupported type with profile",
			sc:   &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: "Strict", LocalhostProfile: ptrTo("p.json")}},
			want: []string{
				"securityContext.seccompProfile.type: Unsupported value: \"Strict\": supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\"",
				"securityContext.seccompProfile.localhostProfile: Invalid value: {\"type\":\"Strict\",\"localhostProfile\":\"p.json\"}: can only be set when seccomp type is Localhost",
			},
		},
		{
			name: "no escalation but privileged",
			sc:   &corev1.SecurityContext{AllowPrivilegeEscalation: ptrTo(false), Privileged: ptrTo(true)},
			want: []string{
				"securityContext: Invalid value: {\"privileged\":true,\"allowPrivilegeEscalation\":false}: cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
			},
		},
		{name: "escalation and privileged", sc: &corev1.SecurityContext{AllowPrivilegeEscalation: ptrTo(true), Privileged: ptrTo(true)}},
		{name: "privileged", sc: &corev1.SecurityContext{Privileged: ptrTo(true)}},
		{
			name: "no escalation but CAP_SYS_ADMIN added",
			sc: &corev1.SecurityContext{AllowPrivilegeEscalation: ptrTo(false), Capabilities: &corev1.Capabilities{
				Add: []corev1.Capability{"CAP_SYS_ADMIN", "SYS_ADMIN", "NET_ADMIN", "CAP_SYS_ADMIN"},
			}},
			want: []string{
				"securityContext: Invalid value: {\"capabilities\":{\"add\":[\"CAP_SYS_ADMIN\",\"SYS_ADMIN\",\"NET_ADMIN\",\"CAP_SYS_ADMIN\"]},\"allowPrivilegeEscalation\":false}: cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
				"securityContext: Invalid value: {\"capabilities\":{\"add\":[\"CAP_SYS_ADMIN\",\"SYS_ADMIN\",\"NET_ADMIN\",\"CAP_SYS_ADMIN\"]},\"allowPrivilegeEscalation\":false}: cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
			},
		},
		{
			name: "no escalation with CAP_SYS_ADMIN dropped",
			sc: &corev1.SecurityContext{AllowPrivilegeEscalation: ptrTo(false), Capabilities: &corev1.Capabilities{
				Drop: []corev1.Capability{"CAP_SYS_ADMIN"},
			}},
		},
		{
			name: "escalation with CAP_SYS_ADMIN added",
			sc:   &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"CAP_SYS_ADMIN"}}},
		},
		{name: "apparmor without type", sc: &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{LocalhostProfile: ptrTo("p")}}, want: []string{
			"securityContext.appArmorProfile.type: Required value: type is required when appArmorProfile is set",
		}},
		{name: "apparmor unsupported type", sc: &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: "Strict", LocalhostProfile: ptrTo("p")}}, want: []string{
			"securityContext.appArmorProfile.type: Unsupported value: \"Strict\": supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\"",
		}},
		{name: "apparmor localhost without profile", sc: &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost}}, want: []string{
			"securityContext.appArmorProfile.localhostProfile: Required value: must be set when AppArmor type is Localhost",
		}},
		{
			name: "apparmor localhost empty profile",
			sc:   &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptrTo("")}},
			want: []string{
				"securityContext.appArmorProfile.localhostProfile: Required value: must be set when AppArmor type is Localhost",
			},
		},
		{
			name: "apparmor localhost padded profile",
			sc:   &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptrTo(" p ")}},
			want: []string{
				"securityContext.appArmorProfile.localhostProfile: Invalid value: \" p \": must not be padded with whitespace",
			},
		},
		{
			name: "apparmor localhost blank profile",
			sc:   &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptrTo("  ")}},
			want: []string{
				"securityContext.appArmorProfile.localhostProfile: Invalid value: \"  \": must not be padded with whitespace",
			},
		},
		{
			name: "apparmor localhost profile too long",
			sc:   &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptrTo(long)}},
			want: []string{
				"securityContext.appArmorProfile.localhostProfile: Too long: may not be more than 4095 bytes",
			},
		},
		{
			name: "apparmor localhost profile padded and too long",
			sc:   &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptrTo(" " + long)}},
			want: []string{
				"securityContext.appArmorProfile.localhostProfile: Invalid value: \" pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp\": must not be padded with whitespace",
				"securityContext.appArmorProfile.localhostProfile: Too long: may not be more than 4095 bytes",
			},
		},
		{name: "apparmor localhost", sc: &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptrTo("k8s-nginx")}}},
		{
			name: "apparmor runtime default with profile",
			sc:   &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault, LocalhostProfile: ptrTo("p")}},
			want: []string{
				"securityContext.appArmorProfile.localhostProfile: Invalid value: \"p\": can only be set when AppArmor type is Localhost",
			},
		},
		{name: "apparmor unconfined", sc: &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}}},
		{
			name: "everything wrong at once, in order",
			sc: &corev1.SecurityContext{
				RunAsUser:                ptrTo[int64](-1),
				RunAsGroup:               ptrTo[int64](-1),
				ProcMount:                ptrTo(corev1.UnmaskedProcMount),
				SeccompProfile:           &corev1.SeccompProfile{Type: "Strict"},
				AllowPrivilegeEscalation: ptrTo(false),
				Privileged:               ptrTo(true),
				Capabilities:             &corev1.Capabilities{Add: []corev1.Capability{"CAP_SYS_ADMIN"}},
				AppArmorProfile:          &corev1.AppArmorProfile{Type: "Strict"},
			},
			hostUsers: true,
			want: []string{
				"securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive",
				"securityContext.runAsGroup: Invalid value: -1: must be between 0 and 2147483647, inclusive",
				"securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`",
				"securityContext.seccompProfile.type: Unsupported value: \"Strict\": supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\"",
				"securityContext: Invalid value: {\"capabilities\":{\"add\":[\"CAP_SYS_ADMIN\"]},\"privileged\":true,\"runAsUser\":-1,\"runAsGroup\":-1,\"allowPrivilegeEscalation\":false,\"procMount\":\"Unmasked\",\"seccompProfile\":{\"type\":\"Strict\"},\"appArmorProfile\":{\"type\":\"Strict\"}}: cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
				"securityContext: Invalid value: {\"capabilities\":{\"add\":[\"CAP_SYS_ADMIN\"]},\"privileged\":true,\"runAsUser\":-1,\"runAsGroup\":-1,\"allowPrivilegeEscalation\":false,\"procMount\":\"Unmasked\",\"seccompProfile\":{\"type\":\"Strict\"},\"appArmorProfile\":{\"type\":\"Strict\"}}: cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
				"securityContext.appArmorProfile.type: Unsupported value: \"Strict\": supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\"",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectExactErrors(t, validateSecurityContext(tc.sc, tc.hostUsers, field.NewPath("securityContext")), tc.want)
		})
	}
}
