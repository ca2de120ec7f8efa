package manifest

import (
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// designExample is the GMSACredentialSpec of the GMSA design, as the PowerShell module writes it.
const designExample = `apiVersion: windows.k8s.io/v1alpha1
kind: GMSACredentialSpec
metadata:
  name: "webapp1-credspec"
credspec:
  ActiveDirectoryConfig:
    GroupManagedServiceAccounts:
    - Name: WebApplication1
      Scope: CONTOSO
    - Name: WebApplication1
      Scope: contoso.com
  CmsPlugins:
  - ActiveDirectory
  DomainJoinConfig:
    DnsName: contoso.com
    DnsTreeName: contoso.com
    Guid: 244818ae-87ca-4fcd-92ec-e79e5252348a
    MachineAccountName: WebApplication1
    NetBiosName: CONTOSO
    Sid: S-1-5-21-2126729477-2524075714-3094792973
`

func webapp1() Account {
	return Account{
		APIVersion:  "windows.k8s.io/v1alpha1",
		AccountName: "WebApplication1",
		DNSName:     "contoso.com",
		SID:         "S-1-5-21-2126729477-2524075714-3094792973",
		GUID:        "244818ae-87ca-4fcd-92ec-e79e5252348a",
	}
}

func decode(t *testing.T, doc string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("decoding %s: %v", doc, err)
	}
	return m
}

func TestDesignExample(t *testing.T) {
	a := webapp1()
	a.Name = "webapp1-credspec"
	out, err := YAML(a)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := decode(t, string(out)), decode(t, designExample); !reflect.DeepEqual(got, want) {
		t.Errorf("manifest:\n%s\nwant the design's example:\n%s", out, designExample)
	}
	// Written in the example's order, so that it reads like the module's output.
	if !strings.HasPrefix(string(out), "apiVersion: windows.k8s.io/v1alpha1\nkind: GMSACredentialSpec\nmetadata:\n") {
		t.Errorf("manifest does not start like the example:\n%s", out)
	}
}

func TestAccounts(t *testing.T) {
	cases := []struct {
		name    string
		modify  func(*Account)
		check   func(t *testing.T, m map[string]any)
		wantErr string
	}{
		{name: "defaults: v1, a name from the account", modify: func(a *Account) { a.APIVersion = "" }, check: func(t *testing.T, m map[string]any) {
			if m["apiVersion"] != "windows.k8s.io/v1" || m["metadata"].(map[string]any)["name"] != "webapplication1-credspec" {
				t.Errorf("apiVersion %v, name %v", m["apiVersion"], m["metadata"])
			}
		}},
		{name: "additional accounts in both scopes", modify: func(a *Account) { a.AdditionalAccounts = []string{"Reports$"} }, check: func(t *testing.T, m map[string]any) {
			gmsas := m["credspec"].(map[string]any)["ActiveDirectoryConfig"].(map[string]any)["GroupManagedServiceAccounts"].([]any)
			if len(gmsas) != 4 || gmsas[2].(map[string]any)["Name"] != "Reports" || gmsas[3].(map[string]any)["Scope"] != "contoso.com" {
				t.Errorf("accounts = %v", gmsas)
			}
		}},
		{name: "explicit NetBIOS and tree names", modify: func(a *Account) { a.NetBIOSName = "corp"; a.DNSTreeName = "contoso.com"; a.DNSName = "eu.contoso.com" }, check: func(t *testing.T, m map[string]any) {
			dj := m["credspec"].(map[string]any)["DomainJoinConfig"].(map[string]any)
			if dj["NetBiosName"] != "CORP" || dj["DnsTreeName"] != "contoso.com" || dj["DnsName"] != "eu.contoso.com" {
				t.Errorf("DomainJoinConfig = %v", dj)
			}
		}},
		{name: "account name of 16 characters", modify: func(a *Account) { a.AccountName = "WebApplication16" }, wantErr: `account name "WebApplication16"`},
		{name: "account name with a space", modify: func(a *Account) { a.AccountName = "Web App" }, wantErr: "account name"},
		{name: "bad additional account", modify: func(a *Account) { a.AdditionalAccounts = []string{"a@b"} }, wantErr: `account name "a@b"`},
		{name: "single-label DNS domain", modify: func(a *Account) { a.DNSName = "contoso" }, wantErr: "fully qualified"},
		{name: "NetBIOS name of 16 characters", modify: func(a *Account) { a.NetBIOSName = "CONTOSOCONTOSOCO" }, wantErr: "NetBIOS name"},
		{name: "SID of another kind", modify: func(a *Account) { a.SID = "S-1-5-32-544" }, wantErr: "domain SID"},
		{name: "GUID without dashes", modify: func(a *Account) { a.GUID = "244818ae87ca4fcd92ece79e5252348a" }, wantErr: "domain GUID"},
		{name: "object name not a DNS subdomain", modify: func(a *Account) { a.Name = "Web_App" }, wantErr: "object name"},
		{name: "unknown apiVersion", modify: func(a *Account) { a.APIVersion = "windows.k8s.io/v2" }, wantErr: "apiVersion"},
		{name: "every reason at once", modify: func(a *Account) { a.SID = ""; a.GUID = "" }, wantErr: "domain SID \"\": must look like S-1-5-21-<n>-<n>-<n>\ndomain GUID"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := webapp1()
			tc.modify(&a)
			out, err := YAML(a)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, decode(t, string(out)))
		})
	}
}
