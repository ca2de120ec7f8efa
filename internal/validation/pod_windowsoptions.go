package validation

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/idplane/idplane/internal/podwalk"
)

// Bounds of the Windows security options. A credential spec is a few hundred bytes in practice;
// the cap only keeps a pod from making every node and watcher carry an arbitrary blob. The
// runAsUserName bounds are Active Directory's naming rules (a domain name under 256 characters,
// a NetBIOS domain name of at most 15, a user logon name of at most 104) and, as the issue asks
// beyond upstream, at most 256 for the whole name; like upstream, the lengths are counted in
// bytes, apart from the NetBIOS name's, which is counted in characters.
const (
	maxGMSACredentialSpecKiB      = 64
	maxGMSACredentialSpecBytes    = maxGMSACredentialSpecKiB * 1024
	maxRunAsUserNameBytes         = 256
	maxRunAsUserNameDomainBytes   = 255
	maxRunAsUserNameNetBIOSLength = 15
	maxRunAsUserNameUserBytes     = 104
	maxDNSLabelBytes              = 63
)

// netBIOSForbiddenChars may appear nowhere in a NetBIOS domain name.
const netBIOSForbiddenChars = `\/:*?"<>|`

// userNameForbiddenChars may appear nowhere in a Windows user logon name.
const userNameForbiddenChars = `"/\:;|=,+*?<>@[]`

// validatePodWindowsOptions checks the Windows options of the pod and of each of its containers,
// and that they agree on whether the pod is a host-process pod. Whether the pod may carry Windows
// options at all is validatePodOS's business (a Linux pod may not).
func validatePodWindowsOptions(spec *corev1.PodSpec, specPath *field.Path) field.ErrorList {
	var podOpts *corev1.WindowsSecurityContextOptions
	if spec.SecurityContext != nil {
		podOpts = spec.SecurityContext.WindowsOptions
	}
	allErrs := validateWindowsOptions(podOpts, specPath.Child("securityContext", "windowsOptions"))

	var podHostProcess *bool
	if podOpts != nil {
		podHostProcess = podOpts.HostProcess
	}
	containers, hostProcessContainers := 0, 0
	for c := range podwalk.Containers(spec) {
		var opts *corev1.WindowsSecurityContextOptions
		if c.SecurityContext != nil {
			opts = c.SecurityContext.WindowsOptions
		}
		optsPath := c.Path(specPath).Child("securityContext", "windowsOptions")
		allErrs = append(allErrs, validateWindowsOptions(opts, optsPath)...)

		containers++
		hostProcess := podHostProcess
		if opts != nil && opts.HostProcess != nil {
			hostProcess = opts.HostProcess
			if podHostProcess != nil && *podHostProcess != *hostProcess {
				allErrs = append(allErrs, field.Invalid(optsPath.Child("hostProcess"), *hostProcess,
					fmt.Sprintf("pod hostProcess value must be identical if both are specified, was %v", *podHostProcess)))
			}
		}
		if hostProcess != nil && *hostProcess {
			hostProcessContainers++
		}
	}
	// A host-process container is a process on the node itself, not in the pod's sandbox: a pod
	// cannot be half sandboxed, and its containers have the node's network whatever it says.
	// Upstream also refuses them when the cluster disallows privileged containers; idplane leaves
	// that policy to admission, as it does for privileged containers.
	if hostProcessContainers > 0 {
		if hostProcessContainers != containers {
			allErrs = append(allErrs, field.Invalid(specPath, "", "If pod contains any hostProcess containers then all containers must be HostProcess containers"))
		}
		if !spec.HostNetwork {
			allErrs = append(allErrs, field.Invalid(specPath.Child("hostNetwork"), spec.HostNetwork, "hostNetwork must be true if pod contains any hostProcess containers"))
		}
	}
	return allErrs
}

// validateWindowsOptions checks the fields of one set of Windows options (the pod's or a
// container's); hostProcess is checked across the pod by validatePodWindowsOptions.
func validateWindowsOptions(opts *corev1.WindowsSecurityContextOptions, fldPath *field.Path) field.ErrorList {
	if opts == nil {
		return nil
	}
	var allErrs field.ErrorList
	if opts.GMSACredentialSpecName != nil {
		// It names a GMSACredentialSpec object.
		allErrs = append(allErrs, validateDNS1123Subdomain(*opts.GMSACredentialSpecName, fldPath.Child("gmsaCredentialSpecName"))...)
	}
	if opts.GMSACredentialSpec != nil {
		allErrs = append(allErrs, validateGMSACredentialSpec(*opts.GMSACredentialSpec, fldPath.Child("gmsaCredentialSpec"))...)
	}
	if opts.RunAsUserName != nil {
		for _, msg := range runAsUserNameErrors(*opts.RunAsUserName) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("runAsUserName"), *opts.RunAsUserName, msg))
		}
	}
	return allErrs
}

// validateGMSACredentialSpec requires JSON, which upstream does not: the runtime passes the spec
// to Windows' container service as a JSON document, and GMSA admission compares it with the named object's as JSON values.
// The errors leave the value out, since it may be 64 KiB of text the client already has.
func validateGMSACredentialSpec(spec string, fldPath *field.Path) field.ErrorList {
	var msg string
	switch {
	case spec == "":
		msg = "gmsaCredentialSpec cannot be an empty string"
	case len(spec) > maxGMSACredentialSpecBytes:
		msg = fmt.Sprintf("gmsaCredentialSpec size must be under %d KiB", maxGMSACredentialSpecKiB)
	default:
		// The decoder checks the whole document, nesting depth included, before copying it.
		var raw json.RawMessage
		if err := json.Unmarshal([]byte(spec), &raw); err != nil {
			msg = "gmsaCredentialSpec must be valid JSON: " + err.Error()
		}
	}
	if msg == "" {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, field.OmitValueType{}, msg)}
}

// runAsUserNameErrors returns what is wrong with a Windows user name, `USER` or `DOMAIN\USER`,
// by upstream's rules; nothing when it is valid.
func runAsUserNameErrors(name string) []string {
	if name == "" {
		return []string{"runAsUserName cannot be an empty string"}
	}
	if strings.ContainsFunc(name, isASCIIControl) {
		return []string{"runAsUserName cannot contain control characters"}
	}
	domain, user, hasDomain := strings.Cut(name, `\`)
	if !hasDomain {
		domain, user = "", name
	} else if strings.Contains(user, `\`) {
		return []string{"runAsUserName cannot contain more than one backslash"}
	}

	var msgs []string
	if len(name) > maxRunAsUserNameBytes {
		msgs = append(msgs, fmt.Sprintf("runAsUserName must be at most %d characters", maxRunAsUserNameBytes))
	}
	if len(domain) > maxRunAsUserNameDomainBytes {
		msgs = append(msgs, fmt.Sprintf("runAsUserName's Domain length must be under %d characters", maxRunAsUserNameDomainBytes+1))
	}
	if hasDomain && !isNetBIOSDomain(domain) && !isWindowsDNSDomain(domain) {
		msgs = append(msgs, "runAsUserName's Domain doesn't match the NetBios nor the DNS format")
	}
	switch {
	case user == "":
		msgs = append(msgs, "runAsUserName's User cannot be empty")
	case len(user) > maxRunAsUserNameUserBytes:
		msgs = append(msgs, fmt.Sprintf("runAsUserName's User length must not be longer than %d characters", maxRunAsUserNameUserBytes))
	}
	// Active Directory refuses logon names made of nothing but periods and spaces.
	if user != "" && strings.Trim(user, ". ") == "" {
		msgs = append(msgs, "runAsUserName's User cannot contain only periods or spaces")
	}
	if strings.ContainsAny(user, userNameForbiddenChars) {
		msgs = append(msgs, `runAsUserName's User cannot contain the following characters: "/\:;|=,+*?<>@[]`)
	}
	return msgs
}

// isASCIIControl: upstream refuses the C0 controls and DEL, not the Unicode C1 controls.
func isASCIIControl(r rune) bool { return r < 0x20 || r == 0x7f }

// isNetBIOSDomain: 1 to 15 characters, not starting with a dot, none of the reserved ones. Any
// other character, space and non-ASCII included, is allowed; a byte that is not UTF-8 counts as
// one character.
func isNetBIOSDomain(domain string) bool {
	return domain != "" && domain[0] != '.' &&
		utf8.RuneCountInString(domain) <= maxRunAsUserNameNetBIOSLength &&
		!strings.ContainsAny(domain, netBIOSForbiddenChars)
}

// isWindowsDNSDomain: dot-separated labels of 1 to 63 ASCII letters, digits and hyphens, neither
// starting nor ending with a hyphen. Unlike Kubernetes object names, upper case is allowed, and
// the overall length is bounded only by the domain limit.
func isWindowsDNSDomain(domain string) bool {
	for label := range strings.SplitSeq(domain, ".") {
		if label == "" || len(label) > maxDNSLabelBytes || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := range len(label) {
			if c := label[i]; !isASCIIAlphanumeric(c) && c != '-' {
				return false
			}
		}
	}
	return true
}

func isASCIIAlphanumeric(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
