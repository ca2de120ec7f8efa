package main

import (
	"github.com/spf13/cobra"

	"github.com/idplane/idplane/internal/gmsa/manifest"
)

func gmsaCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gmsa",
		Short: "Tools for Windows group managed service accounts (GMSA)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(credspecCommand())
	return cmd
}

func credspecCommand() *cobra.Command {
	var a manifest.Account
	cmd := &cobra.Command{
		Use:   "credspec",
		Short: "Print a GMSACredentialSpec for a group managed service account",
		Long: "Print, on standard output, a GMSACredentialSpec object for a group managed service account, " +
			"as the CredentialSpec PowerShell module would make it on a domain-joined host. Apply it with kubectl.",
		Example: "  idplane gmsa credspec --account-name WebApplication1 --dns-domain contoso.com \\\n" +
			"    --domain-sid S-1-5-21-2126729477-2524075714-3094792973 --domain-guid 244818ae-87ca-4fcd-92ec-e79e5252348a | kubectl apply -f -",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := manifest.YAML(a)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&a.Name, "name", "", "object name (default <account name in lower case>-credspec)")
	fs.StringVar(&a.APIVersion, "api-version", "windows.k8s.io/v1", "apiVersion of the object: windows.k8s.io/v1 or windows.k8s.io/v1alpha1")
	fs.StringVar(&a.AccountName, "account-name", "", "the gMSA's name (its sAMAccountName without the trailing $)")
	fs.StringVar(&a.DNSName, "dns-domain", "", "the domain's DNS name, e.g. contoso.com")
	fs.StringVar(&a.DNSTreeName, "dns-tree-name", "", "the forest root's DNS name (default: --dns-domain)")
	fs.StringVar(&a.NetBIOSName, "netbios-name", "", "the domain's NetBIOS name (default: the first label of --dns-domain in upper case)")
	fs.StringVar(&a.SID, "domain-sid", "", "the domain's SID, e.g. S-1-5-21-2126729477-2524075714-3094792973 (Get-ADDomain).DomainSID")
	fs.StringVar(&a.GUID, "domain-guid", "", "the domain's GUID, e.g. 244818ae-87ca-4fcd-92ec-e79e5252348a (Get-ADDomain).ObjectGUID")
	fs.StringArrayVar(&a.AdditionalAccounts, "additional-account", nil, "a further gMSA of the domain the container may use; repeatable")
	for _, required := range []string{"account-name", "dns-domain", "domain-sid", "domain-guid"} {
		if err := cmd.MarkFlagRequired(required); err != nil {
			panic(err)
		}
	}
	return cmd
}
