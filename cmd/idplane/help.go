package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/logs"
)

// setSectionedHelp prints every command's flags in sections, as Kubernetes components do
// (component-base's cli/flag sections): the command's own flags first, then the logging flags
// and the global ones under their own headings, instead of one list in which the logging flags
// crowd out the command's. Commands with subcommands list them as cobra does.
func setSectionedHelp(root *cobra.Command) {
	logFlags := pflag.NewFlagSet("logs", pflag.ContinueOnError)
	logs.AddFlags(logFlags)
	help := func(cmd *cobra.Command, w io.Writer) {
		desc := cmd.Long
		if desc == "" {
			desc = cmd.Short
		}
		fmt.Fprintf(w, "%s\n\nUsage:\n", strings.TrimSpace(desc))
		if cmd.Runnable() {
			fmt.Fprintf(w, "  %s\n", cmd.UseLine())
		}
		if cmd.HasAvailableSubCommands() {
			fmt.Fprintf(w, "  %s [command]\n\nAvailable Commands:\n", cmd.CommandPath())
			pad := 0
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() {
					pad = max(pad, len(sub.Name()))
				}
			}
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() {
					fmt.Fprintf(w, "  %-*s  %s\n", pad, sub.Name(), sub.Short)
				}
			}
		}
		if cmd.HasExample() {
			fmt.Fprintf(w, "\nExamples:\n%s\n", cmd.Example)
		}
		// Wrapped to the terminal, as component-base's term.TerminalSize would; unwrapped into
		// a pipe or file.
		cols := 0
		if f, ok := w.(interface{ Fd() uintptr }); ok {
			if width, _, err := term.GetSize(int(f.Fd())); err == nil {
				cols = width
			}
		}
		cliflag.PrintSections(w, flagSections(cmd, logFlags), cols)
		if cmd.HasAvailableSubCommands() {
			fmt.Fprintf(w, "\nUse \"%s [command] --help\" for more information about a command.\n", cmd.CommandPath())
		}
	}
	root.SetHelpFunc(func(cmd *cobra.Command, _ []string) { help(cmd, cmd.OutOrStdout()) })
	root.SetUsageFunc(func(cmd *cobra.Command) error {
		help(cmd, cmd.OutOrStderr())
		return nil
	})
}

// flagSection is one heading of a command's help and the flags under it, by name prefix.
type flagSection struct {
	name     string
	prefixes []string
}

// commandSections group the flags of a command with many, as kube-apiserver's help does; a flag
// no section claims is listed under the first. Commands not listed show one section of their
// own flags, named after them.
var commandSections = map[string][]flagSection{
	"idplane server": {
		{"generic", []string{"data-dir", "request-timeout"}},
		{"secure serving", []string{"bind-address", "secure-port"}},
		{"etcd", []string{"etcd-", "encryption-provider-config"}},
		{"authentication", []string{"anonymous-auth", "authentication-config", "token-auth-file", "api-audiences", "service-account-", "anonymous-cluster-info", "cluster-info-server"}},
		{"authorization", []string{"authorization-mode"}},
		{"admission", []string{"admission-control-config-file", "enable-admission-plugins", "disable-admission-plugins", "gmsa-"}},
		{"certificates", []string{"cluster-signing-", "approve-kubelet-serving", "pod-certificate-duration", "spiffe-trust-domain"}},
		{"audit", []string{"audit-", "print-default-audit-policy"}},
		{"leader election", []string{"leader-elect"}},
		{"shutdown", []string{"shutdown-"}},
		{"snapshots", []string{"snapshot-"}},
	},
}

// sectionOf is the heading of flag name among sections, the first one when none claims it.
func sectionOf(sections []flagSection, name string) string {
	for _, sec := range sections {
		for _, p := range sec.prefixes {
			if name == p || (strings.HasSuffix(p, "-") && strings.HasPrefix(name, p)) || strings.HasPrefix(name, p+"-") {
				return sec.name
			}
		}
	}
	return sections[0].name
}

// flagSections sorts cmd's flags into its own (by commandSections, else one section named after
// it), the logging flags and the global ones (--help, --version).
func flagSections(cmd *cobra.Command, logFlags *pflag.FlagSet) cliflag.NamedFlagSets {
	var fss cliflag.NamedFlagSets
	sections := commandSections[cmd.CommandPath()]
	for _, sec := range sections {
		fss.FlagSet(sec.name)
	}
	if sections == nil {
		fss.FlagSet(cmd.Name())
	}
	logSection, global := fss.FlagSet("logs"), fss.FlagSet("global")
	cmd.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
		switch {
		case f.Name == "help":
			global.AddFlag(f)
		case sections != nil:
			fss.FlagSet(sectionOf(sections, f.Name)).AddFlag(f)
		default:
			fss.FlagSet(cmd.Name()).AddFlag(f)
		}
	})
	all := cmd.InheritedFlags()
	all.AddFlagSet(cmd.PersistentFlags())
	all.VisitAll(func(f *pflag.Flag) {
		if logFlags.Lookup(f.Name) != nil {
			logSection.AddFlag(f)
		} else {
			global.AddFlag(f)
		}
	})
	return fss
}
