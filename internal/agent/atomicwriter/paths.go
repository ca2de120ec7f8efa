package atomicwriter

import (
	"fmt"
	"io/fs"
	"maps"
	"math"
	"path"
	"slices"
	"strings"
)

const (
	// maxPathLength and maxNameLength are Linux's PATH_MAX and NAME_MAX: a longer key could
	// never be created, so it is refused before anything is written.
	maxPathLength = 4096
	maxNameLength = 255

	// maxOwnerID is the largest id chown accepts; 1<<32-1 means "leave unchanged" to the kernel.
	maxOwnerID = math.MaxUint32 - 1
)

// ValidatePath checks one file path of a volume and returns it cleaned. A path must be
// relative, must not contain a ".." element, and its first element must not start with
// ".." (those names are the writer's own: ..data, ..data_tmp, the timestamped directories).
// Empty elements and "." elements are cleaned away, as the kubelet does, so "a/./b" and
// "a/b" name the same file.
func ValidatePath(p string) (string, error) {
	switch {
	case p == "":
		return "", fmt.Errorf("invalid path %q: must not be empty", p)
	case strings.IndexByte(p, 0) >= 0:
		return "", fmt.Errorf("invalid path %q: must not contain a NUL byte", p)
	case path.IsAbs(p):
		return "", fmt.Errorf("invalid path %q: must be relative", p)
	case len(p) > maxPathLength:
		return "", fmt.Errorf("invalid path %.40q...: longer than %d bytes", p, maxPathLength)
	}
	for elem := range strings.SplitSeq(p, "/") {
		if elem == ".." {
			return "", fmt.Errorf("invalid path %q: must not contain a '..' element", p)
		}
		if len(elem) > maxNameLength {
			return "", fmt.Errorf("invalid path %q: element longer than %d bytes", p, maxNameLength)
		}
	}
	clean := path.Clean(p)
	if clean == "." {
		return "", fmt.Errorf("invalid path %q: names the volume directory itself", p)
	}
	if first, _, _ := strings.Cut(clean, "/"); strings.HasPrefix(first, "..") {
		return "", fmt.Errorf("invalid path %q: must not start with '..' (reserved for the writer)", p)
	}
	return clean, nil
}

// ValidateFiles checks a whole file set: every path (see ValidatePath), no two keys naming
// the same file once cleaned, no file that is also the directory of another, modes that are
// permission bits only, and owner ids chown can set. It returns the set keyed by clean paths.
func ValidateFiles(files map[string]FileProjection) (map[string]FileProjection, error) {
	clean := make(map[string]FileProjection, len(files))
	origin := make(map[string]string, len(files))
	for _, key := range slices.Sorted(maps.Keys(files)) {
		f := files[key]
		p, err := ValidatePath(key)
		if err != nil {
			return nil, err
		}
		if other, dup := origin[p]; dup {
			return nil, fmt.Errorf("paths %q and %q name the same file", other, key)
		}
		if f.Mode&^fs.ModePerm != 0 {
			return nil, fmt.Errorf("file %q: mode %#o has bits other than permission bits", key, uint32(f.Mode))
		}
		for _, id := range []*int64{f.UID, f.GID} {
			if id != nil && (*id < 0 || *id > maxOwnerID) {
				return nil, fmt.Errorf("file %q: owner id %d out of range", key, *id)
			}
		}
		origin[p] = key
		clean[p] = f
	}
	for p := range clean {
		for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
			if _, isFile := clean[dir]; isFile {
				return nil, fmt.Errorf("path %q is a file and also the directory of %q", origin[dir], origin[p])
			}
		}
	}
	return clean, nil
}

// topLevel is the set of first path elements of files: the user-visible names.
func topLevel(files map[string]FileProjection) map[string]bool {
	names := make(map[string]bool, len(files))
	for p := range files {
		first, _, _ := strings.Cut(p, "/")
		names[first] = true
	}
	return names
}
