// Package e2e drives a real `idplane server` process with a stock kubectl, the way users will,
// so that wire-level behaviour (discovery, OpenAPI, printing, patch semantics, authentication)
// is checked against the client that defines it rather than against our own assumptions.
package e2e

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/idplane/idplane/internal/testing/etcdcluster"
)

// Paths of the binaries under test, set by TestMain.
var (
	idplaneBin string
	kubectlBin string
)

// kubectlVersion is the kubectl release the tests build: the one matching the Kubernetes API
// idplane serves, so kubectl prints no version-skew warning.
const kubectlVersion = "v1.37.2"

func TestMain(m *testing.M) {
	// The etcd cluster tests run their members as copies of this binary.
	etcdcluster.RunMemberIfChild()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		// Every test starts a server and skips itself; spare the builds.
		return m.Run()
	}
	binDir, err := os.MkdirTemp("", "idplane-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: creating binary directory:", err)
		return 1
	}
	defer os.RemoveAll(binDir)
	// go build -C changes directory before resolving -o.
	if binDir, err = filepath.Abs(binDir); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	if err := buildBinaries(binDir); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	return m.Run()
}

// buildBinaries builds idplane and kubectl into dir, unless $IDPLANE or $KUBECTL name prebuilt
// ones. The two builds run side by side: each ends in a long, mostly single-threaded link.
func buildBinaries(dir string) error {
	idplaneBin, kubectlBin = os.Getenv("IDPLANE"), os.Getenv("KUBECTL")
	if idplaneBin != "" && kubectlBin != "" {
		return nil
	}
	root, err := repoRoot()
	if err != nil {
		return err
	}
	var builds []func() error
	if idplaneBin == "" {
		idplaneBin = filepath.Join(dir, "idplane")
		builds = append(builds, func() error {
			if err := goBuild(root, "-o", idplaneBin, "./cmd/idplane"); err != nil {
				return fmt.Errorf("building idplane: %w", err)
			}
			return nil
		})
	}
	if kubectlBin == "" {
		kubectlBin = filepath.Join(dir, "kubectl")
		var ldflags []string
		for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
			ldflags = append(ldflags,
				"-X", pkg+".gitVersion="+kubectlVersion,
				"-X", pkg+".gitMajor=1",
				"-X", pkg+".gitMinor=37")
		}
		builds = append(builds, func() error {
			if err := goBuild(root, "-C", "tools/kubectl", "-o", kubectlBin, "-ldflags", strings.Join(ldflags, " "), "."); err != nil {
				return fmt.Errorf("building kubectl: %w", err)
			}
			return nil
		})
	}
	errs := make([]error, len(builds))
	var wg sync.WaitGroup
	for i, build := range builds {
		wg.Go(func() { errs[i] = build() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// repoRoot is the directory of the main module's go.mod; `go test` runs in this package's
// directory, which lies inside it.
func repoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("finding the module root with `go env GOMOD`: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("finding the module root: not inside a module")
	}
	return filepath.Dir(gomod), nil
}

func goBuild(dir string, args ...string) error {
	cmd := exec.Command("go", append([]string{"build"}, args...)...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return nil
}
