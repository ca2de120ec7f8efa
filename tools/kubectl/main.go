// Command kubectl is stock kubectl, built from the k8s.io/kubectl module so the end-to-end tests
// drive idplane with the real client rather than a reimplementation.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		cmdutil.CheckErr(err)
	}
}
