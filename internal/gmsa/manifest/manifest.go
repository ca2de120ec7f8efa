// Package manifest writes a GMSACredentialSpec object from the Active Directory facts of a group
// managed service account, the way the PowerShell CredentialSpec module does on a domain-joined
// Windows host, so that an admin without that module can make one.
package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Account describes one group managed service account and its domain.
type Account struct {
	// Name is the object's name; empty means "<account name in lower case>-credspec".
	Name string
	// APIVersion is "windows.k8s.io/v1" (default) or the design's "windows.k8s.io/v1alpha1".
	APIVersion string
	// AccountName is the gMSA's name, without the trailing "$" of its sAMAccountName.
	AccountName string
	// DNSName is the domain's DNS name (contoso.com); DNSTreeName defaults to it.
	DNSName, DNSTreeName string
	// NetBIOSName is the domain's NetBIOS name (CONTOSO); empty means the first label of DNSName
	// in upper case, which is what domains are given unless their admin chose otherwise.
	NetBIOSName string
	// SID and GUID identify the domain.
	SID, GUID string
	// AdditionalAccounts are further gMSAs of the same domain the container may use.
	AdditionalAccounts []string
}

// The shapes follow the credential spec JSON Windows container runtimes read; the field names
// are theirs.
type object struct {
	APIVersion string   `yaml:"apiVersion"`
	Kind       string   `yaml:"kind"`
	Metadata   metadata `yaml:"metadata"`
	CredSpec   credSpec `yaml:"credspec"`
}

type metadata struct {
	Name string `yaml:"name"`
}

type credSpec struct {
	ActiveDirectoryConfig activeDirectoryConfig `yaml:"ActiveDirectoryConfig"`
	CmsPlugins            []string              `yaml:"CmsPlugins"`
	DomainJoinConfig      domainJoinConfig      `yaml:"DomainJoinConfig"`
}

type activeDirectoryConfig struct {
	GroupManagedServiceAccounts []serviceAccount `yaml:"GroupManagedServiceAccounts"`
}

type serviceAccount struct {
	Name  string `yaml:"Name"`
	Scope string `yaml:"Scope"`
}

type domainJoinConfig struct {
	DNSName            string `yaml:"DnsName"`
	DNSTreeName        string `yaml:"DnsTreeName"`
	GUID               string `yaml:"Guid"`
	MachineAccountName string `yaml:"MachineAccountName"`
	NetBIOSName        string `yaml:"NetBiosName"`
	SID                string `yaml:"Sid"`
}

var apiVersions = []string{"windows.k8s.io/v1", "windows.k8s.io/v1alpha1"}

// The rules Active Directory puts on the names a credential spec carries.
var (
	// A gMSA's sAMAccountName is at most 15 characters before its "$" and avoids these.
	accountName = regexp.MustCompile(`^[^"/\\\[\]:;|=,+*?<>@$\s]{1,15}$`)
	netBIOSName = regexp.MustCompile(`^[^\\/:*?"<>|.\s][^\\/:*?"<>|\s]{0,14}$`)
	// Domain SIDs are S-1-5-21 followed by three sub-authorities.
	domainSID = regexp.MustCompile(`^S-1-5-21-\d{1,10}-\d{1,10}-\d{1,10}$`)
	guid      = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// YAML returns the GMSACredentialSpec manifest for a, or every reason it cannot.
func YAML(a Account) ([]byte, error) {
	a = withDefaults(a)
	if err := a.validate(); err != nil {
		return nil, err
	}
	accounts := append([]string{a.AccountName}, a.AdditionalAccounts...)
	var gmsas []serviceAccount
	for _, name := range accounts {
		// Each account is named in both scopes, as the PowerShell module does: Windows resolves
		// whichever form the domain controller answers to.
		gmsas = append(gmsas, serviceAccount{Name: name, Scope: a.NetBIOSName}, serviceAccount{Name: name, Scope: a.DNSName})
	}
	obj := object{
		APIVersion: a.APIVersion,
		Kind:       "GMSACredentialSpec",
		Metadata:   metadata{Name: a.Name},
		CredSpec: credSpec{
			ActiveDirectoryConfig: activeDirectoryConfig{GroupManagedServiceAccounts: gmsas},
			CmsPlugins:            []string{"ActiveDirectory"},
			DomainJoinConfig: domainJoinConfig{
				DNSName: a.DNSName, DNSTreeName: a.DNSTreeName, GUID: a.GUID,
				MachineAccountName: a.AccountName, NetBIOSName: a.NetBIOSName, SID: a.SID,
			},
		},
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	// Two-space indentation, as kubectl and the design's example write YAML.
	enc.SetIndent(2)
	if err := enc.Encode(obj); err != nil {
		return nil, fmt.Errorf("encoding credential spec %q: %w", a.Name, err)
	}
	return out.Bytes(), nil
}

func withDefaults(a Account) Account {
	a.AccountName = strings.TrimSuffix(a.AccountName, "$")
	if a.Name == "" {
		a.Name = strings.ToLower(a.AccountName) + "-credspec"
	}
	if a.APIVersion == "" {
		a.APIVersion = apiVersions[0]
	}
	a.DNSName = strings.ToLower(strings.TrimSuffix(a.DNSName, "."))
	if a.DNSTreeName == "" {
		a.DNSTreeName = a.DNSName
	}
	if a.NetBIOSName == "" {
		a.NetBIOSName, _, _ = strings.Cut(a.DNSName, ".")
	}
	a.NetBIOSName = strings.ToUpper(a.NetBIOSName)
	a.GUID = strings.ToLower(a.GUID)
	a.AdditionalAccounts = slices.Clone(a.AdditionalAccounts)
	for i, extra := range a.AdditionalAccounts {
		a.AdditionalAccounts[i] = strings.TrimSuffix(extra, "$")
	}
	return a
}

func (a Account) validate() error {
	var errs []error
	if msgs := validation.IsDNS1123Subdomain(a.Name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("object name %q: %s", a.Name, strings.Join(msgs, "; ")))
	}
	if !slices.Contains(apiVersions, a.APIVersion) {
		errs = append(errs, fmt.Errorf("apiVersion %q: must be one of %s", a.APIVersion, strings.Join(apiVersions, ", ")))
	}
	for _, name := range append([]string{a.AccountName}, a.AdditionalAccounts...) {
		if !accountName.MatchString(name) {
			errs = append(errs, fmt.Errorf("account name %q: 1 to 15 characters, none of \"/\\[]:;|=,+*?<>@ or spaces", name))
		}
	}
	for _, d := range []struct{ what, name string }{{"DNS domain", a.DNSName}, {"DNS tree name", a.DNSTreeName}} {
		if msgs := validation.IsDNS1123Subdomain(d.name); len(msgs) > 0 || !strings.Contains(d.name, ".") {
			errs = append(errs, fmt.Errorf("%s %q: must be a fully qualified DNS name such as contoso.com", d.what, d.name))
		}
	}
	if !netBIOSName.MatchString(a.NetBIOSName) {
		errs = append(errs, fmt.Errorf("NetBIOS name %q: 1 to 15 characters, not starting with a dot, none of \\/:*?\"<>| or spaces", a.NetBIOSName))
	}
	if !domainSID.MatchString(a.SID) {
		errs = append(errs, fmt.Errorf("domain SID %q: must look like S-1-5-21-<n>-<n>-<n>", a.SID))
	}
	if !guid.MatchString(a.GUID) {
		errs = append(errs, fmt.Errorf("domain GUID %q: must look like 244818ae-87ca-4fcd-92ec-e79e5252348a", a.GUID))
	}
	return errors.Join(errs...)
}
