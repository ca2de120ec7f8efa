package defaults

import (
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// pullPolicyFor is the pull policy upstream picks for an image that names none: Always when
// the reference means "latest" (an explicit :latest tag, or neither tag nor digest), otherwise
// IfNotPresent. A reference that does not parse gets IfNotPresent, as upstream ignores the
// parse error and sees no tag.
func pullPolicyFor(image string) corev1.PullPolicy {
	tag, digest, ok := parseImageReference(image)
	if ok && (tag == "latest" || tag == "" && digest == "") {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// The reference grammar of the distribution project (docker/OCI image names).
const (
	refAlphaNumeric = `[a-z0-9]+`
	refSeparator    = `(?:[._]|__|[-]+)`
	refPathPart     = refAlphaNumeric + `(?:` + refSeparator + refAlphaNumeric + `)*`
	refDomainPart   = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	refHost         = `(?:` + refDomainPart + `(?:\.` + refDomainPart + `)*|\[[a-fA-F0-9:]+\])`
	refDomain       = refHost + `(?::[0-9]+)?`
	refName         = `(?:` + refDomain + `/)?` + refPathPart + `(?:/` + refPathPart + `)*`
	refTag          = `[\w][\w.-]{0,127}`
	refDigest       = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`

	refPathMaxLength = 255
	dockerHubDomain  = "docker.io"
)

var (
	referenceRE = regexp.MustCompile(`^(` + refName + `)(?::(` + refTag + `))?(?:@(` + refDigest + `))?$`)
	// A bare 64-hex string is an image ID, which the reference parser refuses as a name.
	imageIDRE = regexp.MustCompile(`^[a-f0-9]{64}$`)
	// Only the digest algorithms the API server links in are accepted; others fail to parse.
	digestHexRE = map[string]*regexp.Regexp{
		"sha256": regexp.MustCompile(`^[a-f0-9]{64}$`),
		"sha384": regexp.MustCompile(`^[a-f0-9]{96}$`),
		"sha512": regexp.MustCompile(`^[a-f0-9]{128}$`),
	}
)

// parseImageReference splits an image reference, normalised the way container runtimes see it
// (docker.io and library/ implied), into tag and digest; ok is false when it is not a valid
// reference.
func parseImageReference(image string) (tag, digest string, ok bool) {
	if imageIDRE.MatchString(image) {
		return "", "", false
	}
	domain, remainder := splitDomain(image)
	repository := remainder
	if i := strings.IndexByte(remainder, ':'); i >= 0 {
		repository = remainder[:i]
	}
	if strings.ToLower(repository) != repository {
		return "", "", false
	}
	m := referenceRE.FindStringSubmatch(domain + "/" + remainder)
	if m == nil || len(m[1])-len(domain)-1 > refPathMaxLength {
		return "", "", false
	}
	if m[3] != "" && !validDigest(m[3]) {
		return "", "", false
	}
	return m[2], m[3], true
}

// splitDomain separates the registry host from the repository path. The first path element is
// a host only if it looks like one (has a dot or port, is localhost, or has upper case);
// otherwise the image lives on Docker Hub, where single-element names sit under library/.
func splitDomain(image string) (domain, remainder string) {
	i := strings.IndexByte(image, '/')
	if i == -1 || (!strings.ContainsAny(image[:i], ".:") && image[:i] != "localhost" && strings.ToLower(image[:i]) == image[:i]) {
		domain, remainder = dockerHubDomain, image
	} else {
		domain, remainder = image[:i], image[i+1:]
	}
	if domain == "index.docker.io" {
		domain = dockerHubDomain
	}
	if domain == dockerHubDomain && !strings.ContainsRune(remainder, '/') {
		remainder = "library/" + remainder
	}
	return domain, remainder
}

func validDigest(digest string) bool {
	algorithm, hex, _ := strings.Cut(digest, ":")
	re, known := digestHexRE[algorithm]
	return known && re.MatchString(hex)
}
