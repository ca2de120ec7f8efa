package main

import (
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/idplane/idplane/internal/jointoken"
)

func tokenCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Manage bootstrap tokens, with which nodes join the cluster",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(tokenCreateCommand())
	return cmd
}

func tokenCreateCommand() *cobra.Command {
	r := jointoken.Request{TTL: 24 * time.Hour, Clock: clock.RealClock{}}
	// kubectl's rules: --kubeconfig, else $KUBECONFIG (a list), else ~/.kube/config; --context
	// picks another context than the current one.
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	overrides := &clientcmd.ConfigOverrides{}
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a bootstrap token and print a bootstrap kubeconfig for a node agent",
		Long: "Create a random bootstrap token (a secret bootstrap-token-<id> in kube-system) and print, on standard output, " +
			"a kubeconfig with the admin kubeconfig's server and certificate authority and the token as user: " +
			"what `idplane agent` needs to ask for its node's client certificate. " +
			"The admin kubeconfig is found as kubectl finds one: --kubeconfig, else $KUBECONFIG, else ~/.kube/config.",
		Example: "  export KUBECONFIG=$PWD/idplane-data/admin.kubeconfig\n" +
			"  idplane token create --ttl 1h > bootstrap.kubeconfig\n" +
			"  idplane token create --node-name node-a --print-join-command\n" +
			"  idplane token create --node-name node-a --single-use > node-a.kubeconfig",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r.Admin = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
			out, err := jointoken.Issue(cmd.Context(), r)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&rules.ExplicitPath, clientcmd.RecommendedConfigPathFlag, "", "kubeconfig allowed to create secrets in kube-system (default: $KUBECONFIG, else ~/.kube/config); its server and certificate authority go into the output")
	fs.StringVar(&overrides.CurrentContext, clientcmd.FlagContext, "", "the kubeconfig context to use (default: its current context)")
	fs.DurationVar(&r.TTL, "ttl", r.TTL, "how long the token authenticates; 0 means it never expires")
	fs.StringVar(&r.Binding.NodeName, "node-name", "", "the one node the token may join: its client CSRs are auto-approved only for system:node:<this name>; "+
		"without it, the token can obtain any node's client certificate")
	fs.BoolVar(&r.Binding.SingleUse, "single-use", false, "delete the token once a client certificate was issued with it (needs --node-name)")
	fs.BoolVar(&r.PrintJoinCommand, "print-join-command", false, "print, instead of the bootstrap kubeconfig, the one-line `idplane agent` command that joins a node with the token "+
		"and the hash of the cluster CA (--discovery-token-ca-cert-hash), with --node-name when the token is bound to one")
	return cmd
}
