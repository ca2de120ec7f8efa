package main

import (
	"errors"

	"github.com/spf13/cobra"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/idplane/idplane/internal/kmsplugin"
)

func kmsPluginCommand() *cobra.Command {
	var socket, keyFile string
	cmd := &cobra.Command{
		Use:   "kms-plugin",
		Short: "Serve a KMS v2 plugin with local AES-GCM keys (reference and development use)",
		Long: "Serve the KMS v2 gRPC service (k8s.io/kms) on a unix socket, wrapping the API server's data keys with " +
			"AES-256-GCM keys from --key-file: one base64 key per line, the first encrypting, all decrypting. " +
			"The file is read again at every Status call, so a key written on top is used from the API server's next " +
			"status poll. The keys live on the same machine as the data: this protects a copy of etcd or of its backups, " +
			"not a compromised host; production clusters use their cloud's or Vault's KMS plugin.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if socket == "" || keyFile == "" {
				return errors.New("--socket and --key-file are required")
			}
			return kmsplugin.Serve(genericapiserver.SetupSignalContext(), socket, keyFile)
		},
	}
	cmd.Flags().StringVar(&socket, "socket", "", "Path of the unix socket to serve on; the API server's kms provider names it as endpoint unix://PATH. Made accessible to its owner only.")
	cmd.Flags().StringVar(&keyFile, "key-file", "", "File of AES-256 keys, one base64-encoded 32-byte key per line, the current key first; must be readable by its owner only.")
	return cmd
}
