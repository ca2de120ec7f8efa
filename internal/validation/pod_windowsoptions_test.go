package validation

import (
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Fragments of runAsUserNameErrors' messages, one per rule.
const (
	msgEmpty         = "cannot be an empty string"
	msgControl       = "cannot contain control characters"
	msgBackslashes   = "more than one backslash"
	msgNameLength    = "runAsUserName must be at most 256 characters"
	msgDomainLength  = "Domain length must be under 256"
	msgDomainFormat  = "Domain doesn't match the NetBios nor the DNS format"
	msgUserEmpty     = "User cannot be empty"
	msgUserLength    = "User length must not be longer than 104"
	msgDotsAndSpaces = "only periods or spaces"
	msgForbidden     = "User cannot contain the following characters"
)

// dnsDomainOfLength is a valid DNS domain of n bytes (n >= 1): labels of at most 63 letters.
func dnsDomainOfLength(n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		k := min(63, n-b.Len())
		if n-b.Len()-k == 1 {
			k-- // leave room for a dot and a label of one letter
		}
		b.WriteString(strings.Repeat("d", k))
	}
	return b.String()
}

func TestDNSDomainOfLength(t *testing.T) {
	for _, n := range []int{1, 63, 64, 65, 127, 255, 256, 257} {
		if d := dnsDomainOfLength(n); len(d) != n || !isWindowsDNSDomain(d) {
			t.Errorf("dnsDomainOfLength(%d) = %q (%d bytes, DNS %v)", n, d, len(d), isWindowsDNSDomain(d))
		}
	}
}

func TestRunAsUserName(t *testing.T) {
	user := func(n int) string { return strings.Repeat("u", n) }
	tests := []struct {
		name string
		in   string
		want []string // fragments of the expected messages, in order; none when valid
	}{
		// Plain and qualified names.
		{name: "user only", in: "ContainerUser"},
		{name: "builtin account with a space in the NetBIOS domain", in: `NT AUTHORITY\NETWORK SERVICE`},
		{name: "spaces inside the user", in: `NT AUTHORITY\Local Service`},
		{name: "non-ASCII user", in: `CORP\José`},
		{name: "dots inside the user", in: "first.last"},
		{name: "user starting with dots", in: "..a"},
		{name: "user of a dot and a space and a letter", in: ". a"},
		{name: "C1 control character is not ASCII control", in: "user\u0085"},

		// Empty and control characters.
		{name: "empty", in: "", want: []string{msgEmpty}},
		{name: "NUL", in: "user\x00", want: []string{msgControl}},
		{name: "tab", in: "a\tb", want: []string{msgControl}},
		{name: "newline in the user", in: "CORP\\us\ner", want: []string{msgControl}},
		{name: "newline in the domain", in: "CO\nRP\\user", want: []string{msgControl}},
		{name: "DEL", in: "user\x7f", want: []string{msgControl}},
		{name: "control character wins over backslashes", in: "a\\b\\c\x01", want: []string{msgControl}},

		// Backslashes.
		{name: "two backslashes", in: `a\b\c`, want: []string{msgBackslashes}},
		{name: "adjacent backslashes", in: `CORP\\user`, want: []string{msgBackslashes}},
		{name: "only backslashes", in: `\\`, want: []string{msgBackslashes}},
		{name: "trailing backslashes", in: `CORP\user\`, want: []string{msgBackslashes}},
		{name: "empty domain", in: `\user`, want: []string{msgDomainFormat}},
		{name: "empty user", in: `CORP\`, want: []string{msgUserEmpty}},
		{name: "lone backslash", in: `\`, want: []string{msgDomainFormat, msgUserEmpty}},

		// User part length, in bytes.
		{name: "user of 104", in: user(104)},
		{name: "user of 105", in: user(105), want: []string{msgUserLength}},
		{name: "qualified user of 104", in: `CORP\` + user(104)},
		{name: "qualified user of 105", in: `CORP\` + user(105), want: []string{msgUserLength}},
		{name: "user of 52 two-byte characters", in: strings.Repeat("é", 52)},
		{name: "user of 53 two-byte characters is 106 bytes", in: strings.Repeat("é", 53), want: []string{msgUserLength}},

		// NetBIOS domains: at most 15 characters, counted as characters.
		{name: "NetBIOS domain of 15", in: `MY_DOMAIN_12345\user`},
		{name: "NetBIOS domain of 16", in: `MY_DOMAIN_123456\user`, want: []string{msgDomainFormat}},
		{name: "NetBIOS domain of 1", in: `_\user`},
		{name: "NetBIOS domain of 15 two-byte characters", in: strings.Repeat("ü", 15) + `\user`},
		{name: "NetBIOS domain of 16 two-byte characters", in: strings.Repeat("ü", 16) + `\user`, want: []string{msgDomainFormat}},
		{name: "NetBIOS domain starting with a dot", in: `.corp\user`, want: []string{msgDomainFormat}},
		{name: "NetBIOS domain ending with a dot", in: `corp.\user`},
		{name: "NetBIOS domain with a slash", in: `co/rp\user`, want: []string{msgDomainFormat}},
		{name: "NetBIOS domain with a colon", in: `co:rp\user`, want: []string{msgDomainFormat}},
		{name: "NetBIOS domain with an asterisk", in: `co*rp\user`, want: []string{msgDomainFormat}},
		{name: "NetBIOS domain with a question mark", in: `co?rp\user`, want: []string{msgDomainFormat}},
		{name: "NetBIOS domain with a double quote", in: `co"rp\user`, want: []string{msgDomainFormat}},
		{name: "NetBIOS domain with a less-than sign", in: `co<rp\user`, want: []string{msgDomainFormat}},
		{name: "NetBIOS domain with a greater-than sign", in: `co>rp\user`, want: []string{msgDomainFormat}},
		{name: "NetBIOS domain with a pipe", in: `co|rp\user`, want: []string{msgDomainFormat}},
		{name: "NetBIOS domain may hold what a user may not", in: `co@r;p\user`},

		// DNS domains: labels of letters, digits and inner hyphens; any length under 256.
		{name: "DNS domain", in: `corp.example.com\user`},
		{name: "DNS domain in capitals", in: `Corp.Example.COM\user`},
		{name: "single DNS label of 16 is not NetBIOS but is DNS", in: `ABCDEFGHIJKLMNOP\user`},
		{name: "DNS label of 63", in: strings.Repeat("a", 63) + `.com\user`},
		{name: "DNS label of 64", in: strings.Repeat("a", 64) + `.com\user`, want: []string{msgDomainFormat}},
		{name: "DNS label with inner hyphen", in: `my-corp.example\user`},
		{name: "DNS label with leading hyphen", in: `-corp.example.com\user`, want: []string{msgDomainFormat}},
		{name: "DNS label with trailing hyphen", in: `corp-.example.com\user`, want: []string{msgDomainFormat}},
		{name: "DNS empty label", in: `corp..example.com\user`, want: []string{msgDomainFormat}},
		{name: "DNS domain with underscore", in: `my_corp.example.com\user`, want: []string{msgDomainFormat}},
		{name: "DNS domain of 254 with a one-letter user: 256 in all", in: dnsDomainOfLength(254) + `\u`},
		{name: "DNS domain of 255: the domain fits, the whole name not", in: dnsDomainOfLength(255) + `\user`, want: []string{msgNameLength}},
		{name: "DNS domain of 256", in: dnsDomainOfLength(256) + `\user`, want: []string{msgNameLength, msgDomainLength}},
		{name: "DNS domain of 257", in: dnsDomainOfLength(257) + `\user`, want: []string{msgNameLength, msgDomainLength}},
		{name: "domain of 256 that is neither", in: strings.Repeat("a", 256) + `\user`, want: []string{msgNameLength, msgDomainLength, msgDomainFormat}},

		// Whole name: at most 256 characters, as the issue asks (upstream bounds only the parts).
		{name: "name of 255", in: dnsDomainOfLength(150) + `\` + user(104)},
		{name: "name of 256", in: dnsDomainOfLength(151) + `\` + user(104)},
		{name: "name of 257", in: dnsDomainOfLength(152) + `\` + user(104), want: []string{msgNameLength}},
		{name: "name of 360", in: dnsDomainOfLength(255) + `\` + user(104), want: []string{msgNameLength}},
		{name: "name of 361 with a long user", in: dnsDomainOfLength(255) + `\` + user(105), want: []string{msgNameLength, msgUserLength}},
		{name: "name of 361 with a long domain", in: dnsDomainOfLength(256) + `\` + user(104), want: []string{msgNameLength, msgDomainLength}},

		// Characters the user part may not hold (the backslash is the separator).
		{name: `user with "`, in: `a"b`, want: []string{msgForbidden}},
		{name: "user with /", in: "a/b", want: []string{msgForbidden}},
		{name: "user with :", in: "a:b", want: []string{msgForbidden}},
		{name: "user with ;", in: "a;b", want: []string{msgForbidden}},
		{name: "user with |", in: "a|b", want: []string{msgForbidden}},
		{name: "user with =", in: "a=b", want: []string{msgForbidden}},
		{name: "user with ,", in: "a,b", want: []string{msgForbidden}},
		{name: "user with +", in: "a+b", want: []string{msgForbidden}},
		{name: "user with *", in: "a*b", want: []string{msgForbidden}},
		{name: "user with ?", in: "a?b", want: []string{msgForbidden}},
		{name: "user with <", in: "a<b", want: []string{msgForbidden}},
		{name: "user with >", in: "a>b", want: []string{msgForbidden}},
		{name: "user with @", in: "user@corp.example.com", want: []string{msgForbidden}},
		{name: "user with [", in: "a[b", want: []string{msgForbidden}},
		{name: "user with ]", in: "a]b", want: []string{msgForbidden}},
		{name: "qualified user with a forbidden character", in: `CORP\a=b`, want: []string{msgForbidden}},

		// Dots and spaces.
		{name: "one dot", in: ".", want: []string{msgDotsAndSpaces}},
		{name: "dots", in: "...", want: []string{msgDotsAndSpaces}},
		{name: "one space", in: " ", want: []string{msgDotsAndSpaces}},
		{name: "dots and spaces", in: " . ", want: []string{msgDotsAndSpaces}},
		{name: "qualified dots", in: `CORP\..`, want: []string{msgDotsAndSpaces}},

		// Rules add up.
		{name: "long user with a forbidden character", in: user(105) + "@", want: []string{msgUserLength, msgForbidden}},
		{name: "long user of dots", in: strings.Repeat(".", 105), want: []string{msgUserLength, msgDotsAndSpaces}},
		{name: "bad domain and bad user", in: `co|rp\a+b`, want: []string{msgDomainFormat, msgForbidden}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := runAsUserNameErrors(tc.in)
			ok := len(got) == len(tc.want)
			for i := 0; ok && i < len(got); i++ {
				ok = strings.Contains(got[i], tc.want[i])
			}
			if !ok {
				t.Errorf("runAsUserNameErrors(%q) (%d bytes)\n got: %q\nwant: %q", tc.in, len(tc.in), got, tc.want)
			}
		})
	}
}

// FuzzRunAsUserName checks what the rules promise of every accepted name, and that a name the
// rules refuse is refused with a reason.
func FuzzRunAsUserName(f *testing.F) {
	for _, s := range []string{
		"ContainerUser", `NT AUTHORITY\SYSTEM`, `corp.example.com\user`, `MY_DOMAIN_12345\u`, `a\b\c`,
		`\user`, `CORP\`, "...", "a@b", "user\x00", strings.Repeat("ü", 15) + `\u`, dnsDomainOfLength(255) + `\u`,
		"\xff\xfe\\u", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		msgs := runAsUserNameErrors(name)
		for _, m := range msgs {
			if m == "" {
				t.Fatalf("%q: empty message among %q", name, msgs)
			}
		}
		errs := validateWindowsOptions(&corev1.WindowsSecurityContextOptions{RunAsUserName: &name}, field.NewPath("w"))
		if len(errs) != len(msgs) {
			t.Fatalf("%q: %d field errors for %d messages", name, len(errs), len(msgs))
		}
		for _, e := range errs {
			if e.Type != field.ErrorTypeInvalid || e.Field != "w.runAsUserName" {
				t.Fatalf("%q: error %v, want Invalid at w.runAsUserName", name, e)
			}
		}
		// A valid domain prefix changes nothing about the user part's rules.
		if !strings.Contains(name, `\`) {
			if qualified := runAsUserNameErrors(`CORP\` + name); (len(qualified) == 0) != (len(msgs) == 0) {
				t.Fatalf("%q valid %v, but qualified %q", name, len(msgs) == 0, qualified)
			}
		}
		if len(msgs) > 0 {
			return
		}

		if len(name) > maxRunAsUserNameBytes {
			t.Fatalf("accepted %q of %d bytes", name, len(name))
		}
		for _, r := range name {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("accepted %q with control character %U", name, r)
			}
		}
		if strings.Count(name, `\`) > 1 {
			t.Fatalf("accepted %q with more than one backslash", name)
		}
		domain, user, hasDomain := strings.Cut(name, `\`)
		if !hasDomain {
			domain, user = "", name
		}
		if user == "" || len(user) > maxRunAsUserNameUserBytes {
			t.Fatalf("accepted %q with a user part of %d bytes", name, len(user))
		}
		if strings.Trim(user, ". ") == "" {
			t.Fatalf("accepted %q whose user part is only dots and spaces", name)
		}
		if i := strings.IndexAny(user, userNameForbiddenChars); i >= 0 {
			t.Fatalf("accepted %q with %q in the user part", name, user[i])
		}
		if !hasDomain {
			return
		}
		if domain == "" || len(domain) > maxRunAsUserNameDomainBytes {
			t.Fatalf("accepted %q with a domain of %d bytes", name, len(domain))
		}
		netBIOS := utf8.RuneCountInString(domain) <= maxRunAsUserNameNetBIOSLength && domain[0] != '.' &&
			!strings.ContainsAny(domain, netBIOSForbiddenChars)
		dns := strings.Trim(domain, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") == "" &&
			!strings.Contains("."+domain+".", "..") && !strings.Contains("."+domain+".", ".-") && !strings.Contains("."+domain+".", "-.")
		if !netBIOS && !dns {
			t.Fatalf("accepted %q whose domain is neither a NetBIOS nor a DNS name", name)
		}
		if !netBIOS {
			for label := range strings.SplitSeq(domain, ".") {
				if len(label) > maxDNSLabelBytes {
					t.Fatalf("accepted %q with a DNS label of %d bytes", name, len(label))
				}
			}
		}
	})
}

// windowsPod is validPod declared as a Windows pod.
func windowsPod() *corev1.Pod {
	p := validPod()
	p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
	return p
}

// withHostNetwork puts the pod on the node's network, where its ports are the node's.
func withHostNetwork(p *corev1.Pod) {
	p.Spec.HostNetwork = true
	for i := range p.Spec.Containers {
		for j := range p.Spec.Containers[i].Ports {
			p.Spec.Containers[i].Ports[j].HostPort = p.Spec.Containers[i].Ports[j].ContainerPort
		}
	}
}

func podWindowsOptions(p *corev1.Pod) *corev1.WindowsSecurityContextOptions {
	if p.Spec.SecurityContext.WindowsOptions == nil {
		p.Spec.SecurityContext.WindowsOptions = &corev1.WindowsSecurityContextOptions{}
	}
	return p.Spec.SecurityContext.WindowsOptions
}

func containerWindowsOptions(c *corev1.Container) *corev1.WindowsSecurityContextOptions {
	if c.SecurityContext == nil {
		c.SecurityContext = &corev1.SecurityContext{}
	}
	if c.SecurityContext.WindowsOptions == nil {
		c.SecurityContext.WindowsOptions = &corev1.WindowsSecurityContextOptions{}
	}
	return c.SecurityContext.WindowsOptions
}

func withInitContainer(p *corev1.Pod) *corev1.Container {
	p.Spec.InitContainers = append(p.Spec.InitContainers, validContainer("init"))
	return &p.Spec.InitContainers[len(p.Spec.InitContainers)-1]
}

func TestValidatePodWindowsOptions(t *testing.T) {
	const (
		podOpts  = "spec.securityContext.windowsOptions"
		ctrOpts  = "spec.containers[0].securityContext.windowsOptions"
		initOpts = "spec.initContainers[0].securityContext.windowsOptions"
		credspec = `{"CmsVersion":1,"DomainJoinConfig":{"DnsName":"contoso.com","MachineAccountName":"WebApp1"},"ActiveDirectoryConfig":{"GroupManagedServiceAccounts":[{"Name":"WebApp1","Scope":"CONTOSO"}]}}`
	)
	// A JSON string filling n bytes.
	jsonOfLength := func(n int) string { return `"` + strings.Repeat("a", n-2) + `"` }
	tests := []struct {
		name   string
		pod    func() *corev1.Pod
		mutate func(*corev1.Pod)
		want   []want
	}{
		{
			name: "every option, pod and containers",
			pod:  windowsPod,
			mutate: func(p *corev1.Pod) {
				o := podWindowsOptions(p)
				o.GMSACredentialSpecName, o.GMSACredentialSpec, o.RunAsUserName = ptrTo("webapp1"), ptrTo(credspec), ptrTo("ContainerUser")
				c := containerWindowsOptions(&p.Spec.Containers[0])
				c.GMSACredentialSpecName, c.GMSACredentialSpec, c.RunAsUserName = ptrTo("other.example"), ptrTo("{}"), ptrTo(`NT AUTHORITY\NETWORK SERVICE`)
				containerWindowsOptions(withInitContainer(p)).RunAsUserName = ptrTo(`contoso.com\setup`)
			},
		},
		{
			name:   "without spec.os",
			pod:    validPod,
			mutate: func(p *corev1.Pod) { podWindowsOptions(p).RunAsUserName = ptrTo("ContainerUser") },
		},
		{
			name:   "empty options",
			pod:    windowsPod,
			mutate: func(p *corev1.Pod) { containerWindowsOptions(&p.Spec.Containers[0]) },
		},

		// gmsaCredentialSpecName names an object.
		{
			name:   "credential spec name not a DNS subdomain",
			pod:    windowsPod,
			mutate: func(p *corev1.Pod) { podWindowsOptions(p).GMSACredentialSpecName = ptrTo("Web_App") },
			want:   []want{invalid(podOpts + ".gmsaCredentialSpecName")},
		},
		{
			name:   "empty credential spec name",
			pod:    windowsPod,
			mutate: func(p *corev1.Pod) { containerWindowsOptions(&p.Spec.Containers[0]).GMSACredentialSpecName = ptrTo("") },
			want:   []want{invalid(ctrOpts + ".gmsaCredentialSpecName")},
		},
		{
			name:   "credential spec name of 253",
			pod:    windowsPod,
			mutate: func(p *corev1.Pod) { podWindowsOptions(p).GMSACredentialSpecName = ptrTo(strings.Repeat("a", 253)) },
		},
		{
			name:   "credential spec name of 254",
			pod:    windowsPod,
			mutate: func(p *corev1.Pod) { podWindowsOptions(p).GMSACredentialSpecName = ptrTo(strings.Repeat("a", 254)) },
			want:   []want{invalid(podOpts + ".gmsaCredentialSpecName")},
		},

		// gmsaCredentialSpec is JSON of at most 64 KiB.
		{
			name:   "empty credential spec",
			pod:    windowsPod,
			mutate: func(p *corev1.Pod) { podWindowsOptions(p).GMSACredentialSpec = ptrTo("") },
			want:   []want{invalid(podOpts + ".gmsaCredentialSpec")},
		},
		{
			name:   "credential spec not JSON",
			pod:    windowsPod,
			mutate: func(p *corev1.Pod) { podWindowsOptions(p).GMSACredentialSpec = ptrTo("CmsVersion=1") },
			want:   []want{invalid(podOpts + ".gmsaCredentialSpec")},
		},
		{
			name: "truncated credential spec",
			pod:  windowsPod,
			mutate: func(p *corev1.Pod) {
				containerWindowsOptions(&p.Spec.Containers[0]).GMSACredentialSpec = ptrTo(credspec[:40])
			},
			want: []want{invalid(ctrOpts + ".gmsaCredentialSpec")},
		},
		{
			name:   "credential spec with trailing data",
			pod:    windowsPod,
			mutate: func(p *corev1.Pod) { podWindowsOptions(p).GMSACredentialSpec = ptrTo(credspec + "{}") },
			want:   []want{invalid(podOpts + ".gmsaCredentialSpec")},
		},
		{
			name:   "credential spec padded with whitespace",
			pod:    windowsPod,
			mutate: func(p *corev1.Pod) { podWindowsOptions(p).GMSACredentialSpec = ptrTo("\n " + credspec + "\n") },
		},
		{
			name:   "credential spec of 64 KiB",
			pod:    windowsPod,
			mutate: func(p *corev1.Pod) { podWindowsOptions(p).GMSACredentialSpec = ptrTo(jsonOfLength(64 * 1024)) },
		},
		{
			name:   "credential spec of 64 KiB and a byte",
			pod:    windowsPod,
			mutate: func(p *corev1.Pod) { podWindowsOptions(p).GMSACredentialSpec = ptrTo(jsonOfLength(64*1024 + 1)) },
			want:   []want{invalid(podOpts + ".gmsaCredentialSpec")},
		},
		{
			name: "credential spec nested 100 deep",
			pod:  windowsPod,
			mutate: func(p *corev1.Pod) {
				podWindowsOptions(p).GMSACredentialSpec = ptrTo(strings.Repeat("[", 100) + strings.Repeat("]", 100))
			},
		},
		{
			name: "credential spec nested absurdly deep",
			pod:  windowsPod,
			mutate: func(p *corev1.Pod) {
				podWindowsOptions(p).GMSACredentialSpec = ptrTo(strings.Repeat("[", 20000) + strings.Repeat("]", 20000))
			},
			want: []want{invalid(podOpts + ".gmsaCredentialSpec")},
		},

		// runAsUserName, wherever it is set (TestRunAsUserName covers the rules).
		{
			name:   "bad user name on the pod",
			pod:    windowsPod,
			mutate: func(p *corev1.Pod) { podWindowsOptions(p).RunAsUserName = ptrTo(`a\b\c`) },
			want:   []want{invalid(podOpts + ".runAsUserName")},
		},
		{
			name:   "bad user name on a container",
			pod:    windowsPod,
			mutate: func(p *corev1.Pod) { containerWindowsOptions(&p.Spec.Containers[0]).RunAsUserName = ptrTo("user@corp") },
			want:   []want{invalid(ctrOpts + ".runAsUserName")},
		},
		{
			name:   "bad user name on an init container",
			pod:    windowsPod,
			mutate: func(p *corev1.Pod) { containerWindowsOptions(withInitContainer(p)).RunAsUserName = ptrTo("..") },
			want:   []want{invalid(initOpts + ".runAsUserName")},
		},
		{
			name:   "user name breaking two rules gives two errors",
			pod:    windowsPod,
			mutate: func(p *corev1.Pod) { podWindowsOptions(p).RunAsUserName = ptrTo(`co|rp\a+b`) },
			want:   []want{invalid(podOpts + ".runAsUserName"), invalid(podOpts + ".runAsUserName")},
		},
		{
			name: "every field bad at once",
			pod:  windowsPod,
			mutate: func(p *corev1.Pod) {
				c := containerWindowsOptions(&p.Spec.Containers[0])
				c.GMSACredentialSpecName, c.GMSACredentialSpec, c.RunAsUserName = ptrTo("-"), ptrTo("{"), ptrTo("")
			},
			want: []want{invalid(ctrOpts + ".gmsaCredentialSpecName"), invalid(ctrOpts + ".gmsaCredentialSpec"), invalid(ctrOpts + ".runAsUserName")},
		},

		// hostProcess.
		{
			name: "host-process pod",
			pod:  windowsPod,
			mutate: func(p *corev1.Pod) {
				withHostNetwork(p)
				podWindowsOptions(p).HostProcess = ptrTo(true)
				podWindowsOptions(p).RunAsUserName = ptrTo(`NT AUTHORITY\SYSTEM`)
				withInitContainer(p)
			},
		},
		{
			name: "host process set on every container",
			pod:  windowsPod,
			mutate: func(p *corev1.Pod) {
				withHostNetwork(p)
				containerWindowsOptions(&p.Spec.Containers[0]).HostProcess = ptrTo(true)
				containerWindowsOptions(withInitContainer(p)).HostProcess = ptrTo(true)
			},
		},
		{
			name: "host process set on the pod and repeated on a container",
			pod:  windowsPod,
			mutate: func(p *corev1.Pod) {
				withHostNetwork(p)
				podWindowsOptions(p).HostProcess = ptrTo(true)
				containerWindowsOptions(&p.Spec.Containers[0]).HostProcess = ptrTo(true)
			},
		},
		{
			name: "host process false everywhere",
			pod:  windowsPod,
			mutate: func(p *corev1.Pod) {
				podWindowsOptions(p).HostProcess = ptrTo(false)
				containerWindowsOptions(&p.Spec.Containers[0]).HostProcess = ptrTo(false)
			},
		},
		{
			name: "host process without spec.os",
			pod:  validPod,
			mutate: func(p *corev1.Pod) {
				withHostNetwork(p)
				podWindowsOptions(p).HostProcess = ptrTo(true)
			},
		},
		{
			name:   "host-process pod without host network",
			pod:    windowsPod,
			mutate: func(p *corev1.Pod) { podWindowsOptions(p).HostProcess = ptrTo(true) },
			want:   []want{invalid("spec.hostNetwork")},
		},
		{
			name: "host-process container beside an ordinary one",
			pod:  windowsPod,
			mutate: func(p *corev1.Pod) {
				withHostNetwork(p)
				p.Spec.Containers = append(p.Spec.Containers, validContainer("sidecar"))
				containerWindowsOptions(&p.Spec.Containers[1]).HostProcess = ptrTo(true)
			},
			want: []want{invalid("spec")},
		},
		{
			name: "init container not a host process in a host-process pod",
			pod:  windowsPod,
			mutate: func(p *corev1.Pod) {
				withHostNetwork(p)
				containerWindowsOptions(&p.Spec.Containers[0]).HostProcess = ptrTo(true)
				withInitContainer(p)
			},
			want: []want{invalid("spec")},
		},
		{
			name: "container opting out of the pod's host process",
			pod:  windowsPod,
			mutate: func(p *corev1.Pod) {
				withHostNetwork(p)
				podWindowsOptions(p).HostProcess = ptrTo(true)
				containerWindowsOptions(withInitContainer(p)).HostProcess = ptrTo(false)
			},
			want: []want{invalid(initOpts + ".hostProcess"), invalid("spec")},
		},
		{
			name: "container opting into host process against the pod",
			pod:  windowsPod,
			mutate: func(p *corev1.Pod) {
				podWindowsOptions(p).HostProcess = ptrTo(false)
				containerWindowsOptions(&p.Spec.Containers[0]).HostProcess = ptrTo(true)
			},
			want: []want{invalid(ctrOpts + ".hostProcess"), invalid("spec.hostNetwork")},
		},

		// A Linux pod may carry no Windows options, in any kind of container; their contents are
		// checked all the same.
		{
			name: "windows options on an init container of a linux pod",
			pod:  validPod,
			mutate: func(p *corev1.Pod) {
				p.Spec.OS = &corev1.PodOS{Name: corev1.Linux}
				containerWindowsOptions(withInitContainer(p))
			},
			want: []want{forbidden(initOpts)},
		},
		{
			name: "host-process linux pod",
			pod:  validPod,
			mutate: func(p *corev1.Pod) {
				p.Spec.OS = &corev1.PodOS{Name: corev1.Linux}
				withHostNetwork(p)
				podWindowsOptions(p).HostProcess = ptrTo(true)
			},
			want: []want{forbidden(podOpts)},
		},
		{
			name: "bad user name on a linux pod",
			pod:  validPod,
			mutate: func(p *corev1.Pod) {
				p.Spec.OS = &corev1.PodOS{Name: corev1.Linux}
				containerWindowsOptions(&p.Spec.Containers[0]).RunAsUserName = ptrTo("a:b")
			},
			want: []want{forbidden(ctrOpts), invalid(ctrOpts + ".runAsUserName")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.pod()
			tc.mutate(p)
			expectErrors(t, ValidatePod(p), tc.want...)
		})
	}
}

// TestCredentialSpecErrorOmitsValue: the error names the problem, not 64 KiB of the client's text.
func TestCredentialSpecErrorOmitsValue(t *testing.T) {
	big := `"` + strings.Repeat("x", 70*1024) + `"`
	for _, spec := range []string{big, "{" + big} {
		errs := validateGMSACredentialSpec(spec, field.NewPath("gmsaCredentialSpec"))
		if len(errs) != 1 || strings.Contains(errs[0].Error(), "xxxx") {
			t.Errorf("errors %.200v, want one without the value", errs)
		}
	}
}

// TestValidatePodEphemeralContainersWindowsOptions: debug containers added to a running pod meet
// the same rules, host process included.
func TestValidatePodEphemeralContainersWindowsOptions(t *testing.T) {
	const ephOpts = "spec.ephemeralContainers[0].securityContext.windowsOptions"
	hostProcessPod := func(p *corev1.Pod) {
		p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
		withHostNetwork(p)
		containerWindowsOptions(&p.Spec.Containers[0]).HostProcess = ptrTo(true)
	}
	tests := []struct {
		name   string
		old    func(*corev1.Pod)
		mutate func(*corev1.EphemeralContainer)
		want   []want
	}{
		{name: "good user name", mutate: func(c *corev1.EphemeralContainer) {
			containerWindowsOptions((*corev1.Container)(&c.EphemeralContainerCommon)).RunAsUserName = ptrTo(`CORP\debugger`)
		}},
		{name: "bad user name", mutate: func(c *corev1.EphemeralContainer) {
			containerWindowsOptions((*corev1.Container)(&c.EphemeralContainerCommon)).RunAsUserName = ptrTo(`CORP\debug\ger`)
		}, want: []want{invalid(ephOpts + ".runAsUserName")}},
		{name: "bad credential spec", mutate: func(c *corev1.EphemeralContainer) {
			containerWindowsOptions((*corev1.Container)(&c.EphemeralContainerCommon)).GMSACredentialSpec = ptrTo("{'a':1}")
		}, want: []want{invalid(ephOpts + ".gmsaCredentialSpec")}},
		{name: "host-process debug container in a host-process pod", old: hostProcessPod, mutate: func(c *corev1.EphemeralContainer) {
			containerWindowsOptions((*corev1.Container)(&c.EphemeralContainerCommon)).HostProcess = ptrTo(true)
		}},
		{name: "ordinary debug container in a host-process pod", old: hostProcessPod, mutate: func(*corev1.EphemeralContainer) {}, want: []want{invalid("spec")}},
		{name: "host-process debug container in an ordinary pod", mutate: func(c *corev1.EphemeralContainer) {
			containerWindowsOptions((*corev1.Container)(&c.EphemeralContainerCommon)).HostProcess = ptrTo(true)
		}, want: []want{invalid("spec"), invalid("spec.hostNetwork")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldP := existingPod()
			if tc.old != nil {
				tc.old(oldP)
			}
			newP := oldP.DeepCopy()
			newP.Spec.EphemeralContainers = []corev1.EphemeralContainer{validEphemeralContainer("debug")}
			tc.mutate(&newP.Spec.EphemeralContainers[0])
			expectErrors(t, ValidatePodEphemeralContainersUpdate(newP, oldP), tc.want...)
		})
	}
}

// TestValidatePodUpdateWindowsOptions: the options are part of the spec, which is fixed once the
// pod exists; so is a debug container once added.
func TestValidatePodUpdateWindowsOptions(t *testing.T) {
	withOptions := func(p *corev1.Pod) {
		p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
		o := podWindowsOptions(p)
		o.GMSACredentialSpecName, o.GMSACredentialSpec, o.RunAsUserName = ptrTo("webapp1"), ptrTo(`{"a":1}`), ptrTo("ContainerUser")
		containerWindowsOptions(&p.Spec.Containers[0]).RunAsUserName = ptrTo(`CORP\app`)
	}
	tests := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   []want
	}{
		{name: "label change", mutate: func(p *corev1.Pod) { p.Labels["tier"] = "web" }},
		{name: "image change", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.28" }},
		{
			name: "container user name changed",
			mutate: func(p *corev1.Pod) {
				containerWindowsOptions(&p.Spec.Containers[0]).RunAsUserName = ptrTo(`CORP\other`)
			},
			want: []want{forbidden("spec")},
		},
		{
			name:   "credential spec name changed",
			mutate: func(p *corev1.Pod) { podWindowsOptions(p).GMSACredentialSpecName = ptrTo("webapp2") },
			want:   []want{forbidden("spec")},
		},
		{
			name:   "credential spec contents changed",
			mutate: func(p *corev1.Pod) { podWindowsOptions(p).GMSACredentialSpec = ptrTo(`{"a":2}`) },
			want:   []want{forbidden("spec")},
		},
		{
			name:   "credential spec added to a container",
			mutate: func(p *corev1.Pod) { containerWindowsOptions(&p.Spec.Containers[0]).GMSACredentialSpec = ptrTo(`{}`) },
			want:   []want{forbidden("spec")},
		},
		{
			name:   "options removed",
			mutate: func(p *corev1.Pod) { p.Spec.SecurityContext.WindowsOptions = nil },
			want:   []want{forbidden("spec")},
		},
		{
			name:   "host process turned off",
			mutate: func(p *corev1.Pod) { podWindowsOptions(p).HostProcess = ptrTo(false) },
			want:   []want{forbidden("spec")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldP := existingPod()
			withOptions(oldP)
			if errs := ValidatePod(oldP); len(errs) > 0 {
				t.Fatalf("old pod invalid: %v", errs)
			}
			newP := oldP.DeepCopy()
			tc.mutate(newP)
			expectErrors(t, ValidatePodUpdate(newP, oldP), tc.want...)
		})
	}

	// Through the ephemeralcontainers subresource, an added debug container's options stay as added.
	oldP := existingPod()
	withOptions(oldP)
	oldP.Spec.EphemeralContainers = []corev1.EphemeralContainer{validEphemeralContainer("debug")}
	containerWindowsOptions((*corev1.Container)(&oldP.Spec.EphemeralContainers[0].EphemeralContainerCommon)).RunAsUserName = ptrTo("debugger")
	newP := oldP.DeepCopy()
	newP.Spec.EphemeralContainers[0].SecurityContext.WindowsOptions.RunAsUserName = ptrTo("Administrator")
	expectErrors(t, ValidatePodEphemeralContainersUpdate(newP, oldP), forbidden("spec.ephemeralContainers"))
}
