// Command idplane is the identity and access control plane: `idplane server` runs the API server
// with its controllers; `idplane agent` runs the node side; `idplane token create` makes a
// bootstrap token and prints the kubeconfig a node agent joins with; `idplane gmsa credspec`
// writes a GMSACredentialSpec for a Windows gMSA; `idplane gmsa-webhook` serves the GMSA admission
// webhooks for another Kubernetes cluster; `idplane kms-plugin` serves a KMS v2 plugin with local keys.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/klog/v2"

	"github.com/idplane/idplane/internal/apiserver"
	"github.com/idplane/idplane/internal/version"
)

func main() {
	root := &cobra.Command{
		Use:           "idplane",
		Short:         "Identity and access control plane for nodes and workloads, speaking the Kubernetes API",
		Version:       version.String(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	klogFlags := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(klogFlags)
	root.PersistentFlags().AddGoFlagSet(klogFlags)
	root.AddCommand(serverCommand(), agentCommand(), tokenCommand(), gmsaCommand(), gmsaWebhookCommand(), snapshotCommand(), kmsPluginCommand())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "idplane:", err)
		os.Exit(1)
	}
}

func serverCommand() *cobra.Command {
	o := apiserver.NewOptions()
	var printAuditPolicy bool
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the API server and its built-in controllers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if printAuditPolicy {
				_, err := cmd.OutOrStdout().Write(apiserver.DefaultAuditPolicy())
				return err
			}
			ctx := genericapiserver.SetupSignalContext()
			srv, err := apiserver.Start(ctx, o)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "idplane %s serving on %s\nadmin kubeconfig: %s\ntry: kubectl --kubeconfig %s get namespaces\n",
				version.String(), srv.URL, srv.AdminKubeconfig, srv.AdminKubeconfig)
			return srv.Wait()
		},
	}
	o.AddFlags(cmd.Flags())
	cmd.Flags().BoolVar(&printAuditPolicy, "print-default-audit-policy", false, "Print the audit policy used when --audit-log-path is set without --audit-policy-file, and exit.")
	return cmd
}
