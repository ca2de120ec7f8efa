package validation

import (
	"path"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Paths inside a volume (projected items, sub-paths, seccomp profiles) are
// checked against lists of rules; every rule a path breaks is reported.

// pathRule is one thing such a path must not be.
type pathRule struct {
	broken func(string) bool
	detail string
}

var (
	relative = pathRule{path.IsAbs, "must be a relative path"}
	// Backsteps would escape the directory the kubelet mounts the path under.
	noBacksteps = pathRule{hasBackstep, "must not contain '..'"}
	// The kubelet's atomic writer keeps its bookkeeping in entries named
	// "..something" beside the user's files.
	notReserved = pathRule{startsReserved, "must not start with '..'"}
)

var (
	descendingPath  = []pathRule{relative, noBacksteps}
	nonReservedPath = []pathRule{relative, noBacksteps, notReserved}
)

func checkPath(rules []pathRule, target string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, r := range rules {
		if r.broken(target) {
			allErrs = append(allErrs, field.Invalid(fldPath, target, r.detail))
		}
	}
	return allErrs
}

func validatePathNoBacksteps(target string, fldPath *field.Path) field.ErrorList {
	return checkPath([]pathRule{noBacksteps}, target, fldPath)
}

func validateLocalDescendingPath(target string, fldPath *field.Path) field.ErrorList {
	return checkPath(descendingPath, target, fldPath)
}

func validateLocalNonReservedPath(target string, fldPath *field.Path) field.ErrorList {
	return checkPath(nonReservedPath, target, fldPath)
}

// hasBackstep looks for a ".." element, splitting on this machine's
// separator as well as '/'.
func hasBackstep(p string) bool {
	return slices.Contains(strings.Split(filepath.ToSlash(p), "/"), "..")
}

// startsReserved leaves "../x" to the backstep rule, which already says so.
func startsReserved(p string) bool {
	return strings.HasPrefix(p, "..") && !strings.HasPrefix(p, "../")
}
