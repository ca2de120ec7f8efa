package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/idplane/idplane/internal/version"
)

// versionFlag is --version as Kubernetes components have it (component-base's verflag):
// --version prints the program and version, --version=raw the whole version record.
type versionFlag string

const (
	versionFalse versionFlag = "false"
	versionTrue  versionFlag = "true"
	versionRaw   versionFlag = "raw"
)

func (v *versionFlag) Set(s string) error {
	if s == string(versionRaw) {
		*v = versionRaw
		return nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true, false or raw: %w", err)
	}
	*v = versionFalse
	if b {
		*v = versionTrue
	}
	return nil
}

func (v *versionFlag) String() string { return string(*v) }
func (v *versionFlag) Type() string   { return "version" }

// addVersionFlag adds --version to every command of root: each prints the version and exits
// when given it, whatever else the command line says.
func addVersionFlag(root *cobra.Command) {
	v := versionFalse
	f := root.PersistentFlags().VarPF(&v, "version", "", "--version, --version=raw prints version information and quits")
	f.NoOptDefVal = string(versionTrue)
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if v == versionFalse {
			return nil
		}
		if err := printVersion(cmd.OutOrStdout(), v); err != nil {
			return err
		}
		return errVersionPrinted
	}
	// A command without subcommands' own run (the root, the groups) never reaches
	// PersistentPreRunE: cobra shows help instead. Let those run to print the version.
	for _, cmd := range append([]*cobra.Command{root}, root.Commands()...) {
		if !cmd.Runnable() {
			cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
	}
}

// errVersionPrinted ends a command whose --version has been answered; main exits 0 on it.
var errVersionPrinted = errors.New("version printed")

func printVersion(w io.Writer, v versionFlag) error {
	if v == versionRaw {
		_, err := fmt.Fprintf(w, "%#v\n", *version.Info())
		return err
	}
	_, err := fmt.Fprintf(w, "idplane %s\n", version.String())
	return err
}

// versionCommand is `idplane version`: the version line, or the whole record as JSON or YAML
// (the fields of the server's /version).
func versionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of idplane: the Kubernetes release whose API it serves, and its build",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			switch output {
			case "":
				return printVersion(w, versionTrue)
			case "json":
				data, err := json.MarshalIndent(version.Info(), "", "  ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(w, "%s\n", data)
				return err
			case "yaml":
				data, err := yaml.Marshal(version.Info())
				if err != nil {
					return err
				}
				_, err = w.Write(data)
				return err
			}
			return fmt.Errorf("--output %q: want json or yaml", output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "one of json or yaml; empty: the version line")
	return cmd
}
