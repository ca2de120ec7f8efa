// Command idplane is the identity and access control plane: `idplane server` runs the API server
// with its controllers; `idplane agent` runs the node side; `idplane token create` makes a
// bootstrap token and prints the kubeconfig a node agent joins with; `idplane gmsa credspec`
// writes a GMSACredentialSpec for a Windows gMSA; `idplane gmsa-webhook` serves the GMSA admission
// webhooks for another Kubernetes cluster; `idplane kms-plugin` serves a KMS v2 plugin with local
// keys; `idplane snapshot` saves and restores the store and its keys; `idplane version` prints the
// version.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"

	"github.com/idplane/idplane/internal/apiserver"
	"github.com/idplane/idplane/internal/version"
)

func main() {
	if err := run(newRootCommand()); err != nil {
		fmt.Fprintln(os.Stderr, "idplane:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "idplane",
		Short: "Identity and access control plane for nodes and workloads, speaking the Kubernetes API",
		// Errors are one line; --help shows the usage.
		SilenceUsage: true,
	}
	root.AddCommand(serverCommand(), agentCommand(), tokenCommand(), gmsaCommand(), gmsaWebhookCommand(), snapshotCommand(), kmsPluginCommand(), versionCommand())
	addVersionFlag(root)
	// The supported logging flags (-v, --vmodule, --log-flush-frequency) on every command.
	logs.AddFlags(root.PersistentFlags())
	setSectionedHelp(root)
	return root
}

// run executes root with component-base's runner, as Kubernetes components do: klog set up
// before the command runs and flushed after.
func run(root *cobra.Command) error {
	if err := cli.RunNoErrOutput(root); err != nil && !errors.Is(err, errVersionPrinted) {
		return err
	}
	return nil
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
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "idplane %s serving on %s\nadmin kubeconfig: %s\n", version.String(), srv.URL, srv.AdminKubeconfig)
			// The hint comes once /readyz is green: before, the namespaces and the default
			// policy may be half made. A server that stops first says why in Wait's error.
			if srv.WaitReady(ctx) == nil {
				fmt.Fprintf(out, "ready; try: kubectl --kubeconfig %s get namespaces\n", srv.AdminKubeconfig)
			}
			return srv.Wait()
		},
	}
	o.AddFlags(cmd.Flags())
	cmd.Flags().BoolVar(&printAuditPolicy, "print-default-audit-policy", false, "Print the audit policy used when --audit-log-path is set without --audit-policy-file, and exit.")
	return cmd
}
