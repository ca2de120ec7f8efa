package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/idplane/idplane/internal/apiserver"
	"github.com/idplane/idplane/internal/snapshot"
)

func snapshotCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Save a running control plane's etcd and keys to an archive, or restore one into a new data directory",
		Long: "An archive holds an etcd snapshot and every file of <data-dir>/pki: the CA keys, the service-account " +
			"signing key and the key that encrypts secrets. Whoever has it can act as the control plane: keep it as " +
			"secret as ca.key.",
	}
	cmd.AddCommand(snapshotSaveCommand(), snapshotRestoreCommand())
	return cmd
}

func snapshotSaveCommand() *cobra.Command {
	o := apiserver.SnapshotSaveOptions{DataDir: apiserver.NewOptions().DataDir}
	cmd := &cobra.Command{
		Use:   "save FILE",
		Short: "Take an online snapshot of etcd with the data directory's pki/ into FILE (mode 0600)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Path = args[0]
			start := time.Now()
			m, err := apiserver.SaveSnapshot(genericapiserver.SetupSignalContext(), o)
			if err != nil {
				return err
			}
			var size int64
			for _, f := range m.Files {
				size += f.Size
			}
			fmt.Fprintf(cmd.OutOrStdout(), "saved %s: etcd revision %d, %d keys, %d files, %.1f MiB in %.1f s\n",
				o.Path, m.Etcd.Revision, m.Etcd.TotalKeys, len(m.Files), float64(size)/(1<<20), time.Since(start).Seconds())
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "The server's data directory: its pki/ is saved and, without --etcd-servers, the snapshot is taken from the embedded etcd of the server running on it.")
	fs.StringSliceVar(&o.EtcdServers, "etcd-servers", o.EtcdServers, "The server's external etcd endpoints; the snapshot is taken from the first that answers.")
	fs.StringVar(&o.EtcdCAFile, "etcd-cafile", o.EtcdCAFile, "CA bundle verifying the external etcd servers.")
	fs.StringVar(&o.EtcdCertFile, "etcd-certfile", o.EtcdCertFile, "Client certificate for the external etcd.")
	fs.StringVar(&o.EtcdKeyFile, "etcd-keyfile", o.EtcdKeyFile, "Client key for the external etcd.")
	fs.BoolVar(&o.Force, "force", o.Force, "Replace FILE if it exists.")
	return cmd
}

func snapshotRestoreCommand() *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:   "restore FILE --data-dir DIR",
		Short: "Verify an archive and restore it into a new data directory for `idplane server --data-dir DIR`",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := apiserver.RestoreSnapshot(args[0], dataDir)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "restored %s (taken %s, etcd revision %d, %d keys) into %s; etcd's revision is moved on by %d\nstart it with: idplane server --data-dir %s\n",
				args[0], m.Created.Format("2006-01-02T15:04:05Z"), m.Etcd.Revision, m.Etcd.TotalKeys, dataDir, snapshot.RevisionBump, dataDir)
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "New data directory to restore into; it must not exist or be empty.")
	_ = cmd.MarkFlagRequired("data-dir")
	return cmd
}
