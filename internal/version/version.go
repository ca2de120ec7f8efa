// Package version is the Kubernetes version idplane reports. Clients compare it with their own
// (kubectl warns about skew), so it names the Kubernetes release whose API idplane serves, with
// idplane's build in the semver build metadata.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"

	apimachineryversion "k8s.io/apimachinery/pkg/version"
)

// Set with -ldflags "-X github.com/idplane/idplane/internal/version.gitVersion=..." by release
// builds; the default names the served API release.
var (
	gitVersion = "v1.37.2+idplane"
	gitMajor   = "1"
	gitMinor   = "37"
)

// Info returns the version served at /version.
func Info() *apimachineryversion.Info {
	info := &apimachineryversion.Info{
		Major:        gitMajor,
		Minor:        gitMinor,
		GitVersion:   gitVersion,
		GitTreeState: "clean",
		GoVersion:    runtime.Version(),
		Compiler:     runtime.Compiler,
		Platform:     fmt.Sprintf("%s/%s", runtime.GOOS, runtime.GOARCH),
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.GitCommit = s.Value
			case "vcs.time":
				info.BuildDate = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					info.GitTreeState = "dirty"
				}
			}
		}
	}
	return info
}

// String is the version for humans.
func String() string { return gitVersion }
