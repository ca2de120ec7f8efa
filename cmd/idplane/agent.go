package main

import (
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/spf13/cobra"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/idplane/idplane/internal/agent"
	"github.com/idplane/idplane/internal/agent/discovery"
)

func agentCommand() *cobra.Command {
	hostname, _ := os.Hostname()
	hostname = strings.ToLower(hostname)
	c := agent.Config{NodeName: hostname, Hostname: hostname, RootDir: "./idplane-agent"}
	var ips []net.IP
	var join discovery.Config
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the node agent: node identity, Node heartbeat, pod credentials and runtime specs on disk",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if c.NodeName == "" {
				return fmt.Errorf("--node-name is required: the host name is unknown")
			}
			c.Addresses = ips
			if join.Token != "" || len(join.CACertHashes) > 0 || join.UnsafeSkipCAVerification {
				join.Server = c.ServerURL
				c.Discovery = &join
			}
			if len(c.Addresses) == 0 {
				c.Addresses = agent.DefaultAddresses()
			}
			return agent.Run(genericapiserver.SetupSignalContext(), c)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&c.ServerURL, "server", c.ServerURL, "API server URL (default: the kubeconfig's).")
	fs.StringVar(&join.Token, "token", "", "Bootstrap token <id>.<secret> to join with instead of a bootstrap kubeconfig: the agent reads kube-public/cluster-info from --server, "+
		"checks it is signed with the token and names the CA pinned by --discovery-token-ca-cert-hash, and asks for its certificate with the token. "+
		"'idplane token create --print-join-command' prints the whole command.")
	fs.StringSliceVar(&join.CACertHashes, "discovery-token-ca-cert-hash", nil, "Hash of the cluster CA's public key, sha256:<hex of the SHA-256 of its SubjectPublicKeyInfo> as kubeadm's; the CA cluster-info names must match one. Repeatable.")
	fs.BoolVar(&join.UnsafeSkipCAVerification, "discovery-token-unsafe-skip-ca-verification", false, "UNSAFE: with --token, trust whatever CA a cluster-info signed with the token names, without --discovery-token-ca-cert-hash. "+
		"Anyone who knows or guesses the token, or reads it from the node, can then sign a cluster-info naming a CA of their own, pose as the API server "+
		"and receive the node's requests and credentials.")
	fs.StringVar(&c.BootstrapKubeconfig, "bootstrap-kubeconfig", c.BootstrapKubeconfig, "Kubeconfig with a bootstrap token (idplane token create), used until <root-dir>/kubeconfig holds a valid certificate.")
	fs.StringVar(&c.NodeName, "node-name", c.NodeName, "Name of this node.")
	fs.StringVar(&c.Hostname, "hostname", c.Hostname, "Host name published on the Node and in the serving certificate.")
	fs.IPSliceVar(&ips, "node-ip", nil, "IP addresses of this node, comma-separated or repeated (default: the host's global unicast addresses, else 127.0.0.1).")
	// pflag does not know an empty IP list is the zero value and would add "(default [])".
	fs.Lookup("node-ip").DefValue = ""
	fs.StringVar(&c.RootDir, "root-dir", c.RootDir, "Directory for the node's kubeconfig, keys (pki/) and pod files (pods/).")
	fs.StringVar(&c.PodManifestPath, "pod-manifest-path", c.PodManifestPath, "Directory of static pod manifests to mirror to the API.")
	return cmd
}
