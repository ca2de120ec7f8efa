package gmsa

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
)

// webapp1 is the design's example credspec, as an admin's YAML reaches the store: indented, keys
// in the admin's order. webapp1Compact is what the expander writes.
const (
	webapp1 = `{
  "CmsPlugins": ["ActiveDirectory"],
  "DomainJoinConfig": {
    "DnsName": "contoso.com",
    "DnsTreeName": "contoso.com",
    "Guid": "244818ae-87ca-4fcd-92ec-e79e5252348a",
    "MachineAccountName": "WebApp1",
    "NetBiosName": "CONTOSO",
    "Sid": "S-1-5-21-2126729477-2524075714-3094792973"
  },
  "ActiveDirectoryConfig": {
    "GroupManagedServiceAccounts": [
      {"Name": "WebApp1", "Scope": "CONTOSO"},
      {"Name": "WebApp1", "Scope": "contoso.com"}
    ]
  },
  "Version": 1
}`
	webapp1Compact = `{"CmsPlugins":["ActiveDirectory"],"DomainJoinConfig":{"DnsName":"contoso.com","DnsTreeName":"contoso.com","Guid":"244818ae-87ca-4fcd-92ec-e79e5252348a","MachineAccountName":"WebApp1","NetBiosName":"CONTOSO","Sid":"S-1-5-21-2126729477-2524075714-3094792973"},"ActiveDirectoryConfig":{"GroupManagedServiceAccounts":[{"Name":"WebApp1","Scope":"CONTOSO"},{"Name":"WebApp1","Scope":"contoso.com"}]},"Version":1}`
	// webapp1Reordered is webapp1 with members in another order, other whitespace and the
	// version written as 1.0: the same JSON value.
	webapp1Reordered = `{"Version":1.0,"ActiveDirectoryConfig":{"GroupManagedServiceAccounts":[{"Scope":"CONTOSO","Name":"WebApp1"},{"Scope":"contoso.com","Name":"WebApp1"}]},
	"DomainJoinConfig":{"Sid":"S-1-5-21-2126729477-2524075714-3094792973","NetBiosName":"CONTOSO","MachineAccountName":"WebApp1","Guid":"244818ae-87ca-4fcd-92ec-e79e5252348a","DnsTreeName":"contoso.com","DnsName":"contoso.com"},"CmsPlugins":[ "ActiveDirectory" ]}`
	webapp2 = `{"CmsPlugins":["ActiveDirectory"],"DomainJoinConfig":{"MachineAccountName":"WebApp2"}}`
)

// specs answers from memory, as a lister would, and counts the lookups.
type specs struct {
	byName  map[string]string
	fail    error
	lookups int
}

func newSpecs() *specs {
	return &specs{byName: map[string]string{"webapp1": webapp1, "webapp2": webapp2, "broken": `{"CmsPlugins":`}}
}

func (s *specs) CredSpec(_ context.Context, name string) ([]byte, error) {
	s.lookups++
	if s.fail != nil {
		return nil, s.fail
	}
	spec, ok := s.byName[name]
	if !ok {
		return nil, apierrors.NewNotFound(credSpecResource, name)
	}
	return []byte(spec), nil
}

// saName is the service account of the tests' pods, as the use checker sees it.
const saName = "system:serviceaccount:default:sa"

// grants answers use from a table of user → specs, and checks that a service account is asked
// with the groups it authenticates with.
type grants struct {
	t      testing.TB
	byUser map[string][]string
	fail   error
}

func newGrants(t testing.TB) *grants {
	return &grants{t: t, byUser: map[string][]string{
		// RBAC may grant a name no GMSACredentialSpec has (yet).
		saName:  {"webapp1", "webapp2", "broken", "nosuch"},
		"alice": {"webapp1"},
	}}
}

func (g *grants) MayUse(_ context.Context, namespace string, u user.Info, name string) (bool, string, error) {
	if namespace != "default" {
		g.t.Errorf("use of %q asked in namespace %q, want the pod's, default", name, namespace)
	}
	if strings.HasPrefix(u.GetName(), "system:serviceaccount:") {
		want := []string{"system:serviceaccounts", "system:serviceaccounts:default", user.AllAuthenticated}
		if !slices.Equal(u.GetGroups(), want) {
			g.t.Errorf("service account asked with groups %v, want %v", u.GetGroups(), want)
		}
	}
	if g.fail != nil {
		return false, "", g.fail
	}
	if slices.Contains(g.byUser[u.GetName()], name) {
		return true, "", nil
	}
	return false, "no RBAC rule allows it", nil
}

var errBackend = errors.New("connection refused")

func ptr(s string) *string { return &s }

// windows is a security context whose windowsOptions set the name and contents given; "" leaves
// a field unset.
func windows(name, contents string) *corev1.SecurityContext {
	o := &corev1.WindowsSecurityContextOptions{}
	if name != "" {
		o.GMSACredentialSpecName = ptr(name)
	}
	if contents != "" {
		o.GMSACredentialSpec = ptr(contents)
	}
	return &corev1.SecurityContext{WindowsOptions: o}
}

// newPod is a pod of service account sa with one container "app", changed by mods.
func newPod(mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{
			ServiceAccountName: "sa",
			Containers:         []corev1.Container{{Name: "app", Image: "iis"}},
		},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func onPod(name, contents string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: windows(name, contents).WindowsOptions}
	}
}

func onApp(name, contents string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext = windows(name, contents) }
}

func withInit(name, contents string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "init", SecurityContext: windows(name, contents)})
	}
}

func withDebug(container, name, contents string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{
			EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: container, SecurityContext: windows(name, contents)},
		})
	}
}

func withServiceAccount(name string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.ServiceAccountName = name }
}

func annotate(key, value string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[key] = value
	}
}

// Annotation keys as a pod author writes them.
const (
	podNameAnnotation     = "pod.alpha.windows.kubernetes.io/gmsa-credential-spec-name"
	podContentsAnnotation = "pod.alpha.windows.kubernetes.io/gmsa-credential-spec"
	appNameAnnotation     = "app.container.alpha.windows.kubernetes.io/gmsa-credential-spec-name"
	appContentsAnnotation = "app.container.alpha.windows.kubernetes.io/gmsa-credential-spec"
)

// checkError checks err's HTTP code (0: no error) and that its message has every string of want.
func checkError(t *testing.T, err error, code int32, want ...string) {
	t.Helper()
	var got int32
	if s, ok := err.(apierrors.APIStatus); ok {
		got = s.Status().Code
	} else if err != nil {
		t.Fatalf("error %v (%T) is not an API error", err, err)
	}
	if got != code {
		t.Fatalf("error %v: code %d, want %d", err, got, code)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}
