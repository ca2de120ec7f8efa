// Package atomicwriter writes the files of a pod volume so that a reader never sees a torn
// update, the way the kubelet does for secret, configMap, downwardAPI and projected volumes.
//
// A volume directory holds:
//
//	..2026_11_25_10_00_00.123456789/   the files, written once and never modified
//	..data -> ..2026_11_25_10_00_00.123456789
//	token  -> ..data/token            one link per first path element
//	a      -> ..data/a                (for a/b/c)
//
// An update writes a new timestamped directory and replaces ..data with one rename, so a read
// sees either the old or the new set whole, never a mix. The old directory is removed right
// after the rename, as the kubelet's writer does: an open whose path resolution straddles the
// swap can then fail with "no such file", and a retry sees the new set. Nothing in the
// directory is trusted:
// anything the writer would not have written itself (a file rewritten, a link planted or
// retargeted, an extra entry) makes the next write remove it and write the volume again, and
// every name is resolved only inside the directory (os.Root), so a planted link cannot take a
// write, read, chmod or removal outside it.
package atomicwriter

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// FileProjection is one file of a volume.
type FileProjection struct {
	Data []byte
	Mode fs.FileMode // permission bits only
	UID  *int64      // owner to chown to, nil: leave as the agent
	GID  *int64      // group to chown to, nil: leave
}

// ErrOwnershipNotPermitted is wrapped by Write's error when a file was to be chowned and the
// agent may not (it does not run as root). Only files that ask for an owner can cause it.
var ErrOwnershipNotPermitted = errors.New("changing file ownership is not permitted (the agent is not running as root)")

const (
	dataLink    = "..data"
	dataTmpLink = "..data_tmp"
	// tsLayout names a timestamped directory (after the ".." prefix); nanoseconds keep
	// successive writes apart and make names sort in time order.
	tsLayout = "2006_01_02_15_04_05.000000000"
	dirMode  = fs.FileMode(0o755)
)

var tsName = regexp.MustCompile(`^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\d{9}$`)

// Writer writes one volume directory. Its methods may be called from several goroutines;
// two Writers must not share a directory.
type Writer struct {
	dir     string
	logName string
	now     func() time.Time

	// OnRepair, when set, is told why a write found entries a Writer does not make (a tampered
	// volume) before it removed them and wrote the volume again. It is called with the writer's
	// lock held.
	OnRepair func(reasons []string)

	mu sync.Mutex
}

// New returns a writer for the volume directory dir (created 0755 if missing); logName names
// it in errors.
func New(dir, logName string) (*Writer, error) {
	if err := ensureDir(dir); err != nil {
		return nil, fmt.Errorf("%s: %w", logName, err)
	}
	return &Writer{dir: dir, logName: logName, now: time.Now}, nil
}

// ensureDir creates dir if missing and refuses it if it is anything but a directory: a link
// in its place would send the whole volume elsewhere.
func ensureDir(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, dirMode); err != nil {
			return fmt.Errorf("creating volume directory: %w", err)
		}
		// MkdirAll's mode went through the umask.
		if err := os.Chmod(dir, dirMode); err != nil {
			return fmt.Errorf("setting mode of volume directory: %w", err)
		}
		fi, err = os.Lstat(dir)
	}
	if err != nil {
		return fmt.Errorf("inspecting volume directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("volume directory %s is not a directory (mode %s)", dir, fi.Mode())
	}
	return nil
}

// Write makes the volume directory hold exactly files (keys are relative paths like "token"
// or "a/b/c"). It returns whether anything visible changed; when the files already on disk
// equal files in content, mode and owner it writes nothing. When an error comes after the new
// files went live (removing what they replaced), changed is true along with the error.
func (w *Writer) Write(files map[string]FileProjection) (changed bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()

	clean, err := ValidateFiles(files)
	if err != nil {
		return false, w.errorf("refusing file set: %w", err)
	}
	if err := ensureDir(w.dir); err != nil {
		return false, w.errorf("%w", err)
	}
	root, err := os.OpenRoot(w.dir)
	if err != nil {
		return false, w.errorf("opening volume directory: %w", err)
	}
	defer root.Close()

	st, err := readState(root)
	if err != nil {
		return false, w.errorf("reading volume directory %s: %w", w.dir, err)
	}
	if st.tampered() {
		// What is there cannot be trusted, so it is not compared: it is removed and the volume
		// written again from files, as a volume that never saw the container would be.
		if err := w.removeForeign(root, st); err != nil {
			return false, err
		}
		if w.OnRepair != nil {
			w.OnRepair(slices.Sorted(maps.Values(st.foreign)))
		}
		return w.replace(root, st, clean)
	}
	same, err := st.holds(root, clean)
	if err != nil {
		return false, w.errorf("reading volume directory %s: %w", w.dir, err)
	}
	if same {
		// Leftovers of an interrupted write are not visible; clearing them is no change.
		return false, w.removeHidden(root, st, st.current)
	}
	return w.replace(root, st, clean)
}

// replace writes files into a new timestamped directory and swaps ..data to it.
func (w *Writer) replace(root *os.Root, st *state, files map[string]FileProjection) (bool, error) {
	if st.tmpLink {
		if err := root.Remove(dataTmpLink); err != nil {
			return false, w.errorf("removing leftover %s: %w", dataTmpLink, err)
		}
		st.tmpLink = false
	}
	ts, err := w.makeTimestampDir(root)
	if err != nil {
		return false, err
	}
	var created []string
	undo := func(err error) (bool, error) {
		for _, name := range created {
			_ = root.Remove(name)
		}
		_ = root.RemoveAll(ts)
		return false, err
	}
	if err := w.writeTree(root, ts, files); err != nil {
		return undo(err)
	}
	visible := topLevel(files)
	for _, name := range slices.Sorted(maps.Keys(visible)) {
		if st.visible[name] {
			continue
		}
		if err := root.Symlink(dataLink+"/"+name, name); err != nil {
			return undo(w.errorf("linking %s: %w", name, err))
		}
		created = append(created, name)
	}
	if err := root.Symlink(ts, dataTmpLink); err != nil {
		return undo(w.errorf("linking %s: %w", dataTmpLink, err))
	}
	if err := root.Rename(dataTmpLink, dataLink); err != nil {
		_ = root.Remove(dataTmpLink)
		return undo(w.errorf("renaming %s over %s: %w", dataTmpLink, dataLink, err))
	}
	// The new files are live from here on; what follows only clears what they replaced.
	if err := syncDir(root, "."); err != nil {
		return true, w.errorf("%w", err)
	}
	for _, name := range slices.Sorted(maps.Keys(st.visible)) {
		if visible[name] {
			continue
		}
		if err := root.Remove(name); err != nil {
			return true, w.errorf("removing stale %s: %w", name, err)
		}
	}
	if err := w.removeHidden(root, st, ts); err != nil {
		return true, err
	}
	if err := syncDir(root, "."); err != nil {
		return true, w.errorf("%w", err)
	}
	return true, nil
}

// removeForeign removes what a Writer did not make. os.Root keeps every removal inside the
// volume directory, and removing a link unlinks it: a planted link to /etc/shadow, or to a
// directory outside, loses the link and nothing else.
func (w *Writer) removeForeign(root *os.Root, st *state) error {
	for _, name := range slices.Sorted(maps.Keys(st.foreign)) {
		if err := root.RemoveAll(name); err != nil {
			return w.errorf("removing %s, which the writer did not make: %w", name, err)
		}
	}
	return nil
}

// removeHidden removes every timestamped directory but keep, and a leftover ..data_tmp.
func (w *Writer) removeHidden(root *os.Root, st *state, keep string) error {
	old := append([]string{st.current}, st.staleDirs...)
	for _, dir := range old {
		if dir == "" || dir == keep {
			continue
		}
		if err := root.RemoveAll(dir); err != nil {
			return w.errorf("removing old %s: %w", dir, err)
		}
	}
	if st.tmpLink {
		if err := root.Remove(dataTmpLink); err != nil {
			return w.errorf("removing leftover %s: %w", dataTmpLink, err)
		}
	}
	return nil
}

func (w *Writer) makeTimestampDir(root *os.Root) (string, error) {
	now := w.now().UTC()
	for i := range 1000 {
		name := ".." + now.Add(time.Duration(i)).Format(tsLayout)
		err := root.Mkdir(name, dirMode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", w.errorf("creating %s: %w", name, err)
		}
		if err := root.Chmod(name, dirMode); err != nil {
			_ = root.Remove(name)
			return "", w.errorf("setting mode of %s: %w", name, err)
		}
		return name, nil
	}
	return "", w.errorf("no free timestamped directory name near %s", now.Format(tsLayout))
}

// writeTree writes files under the (new, empty) directory ts and makes them durable.
func (w *Writer) writeTree(root *os.Root, ts string, files map[string]FileProjection) error {
	dirs := map[string]bool{ts: true}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		var parents []string
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			parents = append(parents, d)
		}
		for i := len(parents) - 1; i >= 0; i-- {
			d := path.Join(ts, parents[i])
			if dirs[d] {
				continue
			}
			if err := root.Mkdir(d, dirMode); err != nil {
				return w.errorf("creating directory %s: %w", d, err)
			}
			if err := root.Chmod(d, dirMode); err != nil {
				return w.errorf("setting mode of directory %s: %w", d, err)
			}
			dirs[d] = true
		}
		if err := w.writeFile(root, path.Join(ts, p), files[p]); err != nil {
			return err
		}
	}
	// Deepest first, so each directory is synced after the entries made in it.
	ordered := slices.Sorted(maps.Keys(dirs))
	sort.Slice(ordered, func(i, j int) bool { return len(ordered[i]) > len(ordered[j]) })
	for _, d := range ordered {
		if err := syncDir(root, d); err != nil {
			return w.errorf("%w", err)
		}
	}
	return nil
}

func (w *Writer) writeFile(root *os.Root, name string, f FileProjection) (err error) {
	fh, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return w.errorf("creating %s: %w", name, err)
	}
	defer func() {
		if cerr := fh.Close(); cerr != nil && err == nil {
			err = w.errorf("closing %s: %w", name, cerr)
		}
	}()
	if _, err := fh.Write(f.Data); err != nil {
		return w.errorf("writing %s: %w", name, err)
	}
	if f.UID != nil || f.GID != nil {
		uid, gid := -1, -1
		if f.UID != nil {
			uid = int(*f.UID)
		}
		if f.GID != nil {
			gid = int(*f.GID)
		}
		if err := fh.Chown(uid, gid); err != nil {
			if errors.Is(err, fs.ErrPermission) {
				return w.errorf("chown %s to uid %s gid %s: %w: %w", name, idString(f.UID), idString(f.GID), ErrOwnershipNotPermitted, err)
			}
			return w.errorf("chown %s to uid %s gid %s: %w", name, idString(f.UID), idString(f.GID), err)
		}
	}
	// After the chown, which may clear bits, and regardless of the umask.
	if err := fh.Chmod(f.Mode); err != nil {
		return w.errorf("setting mode of %s: %w", name, err)
	}
	if err := fh.Sync(); err != nil {
		return w.errorf("syncing %s: %w", name, err)
	}
	return nil
}

func idString(id *int64) string {
	if id == nil {
		return "(unchanged)"
	}
	return fmt.Sprint(*id)
}

func syncDir(root *os.Root, name string) error {
	d, err := root.Open(name)
	if err != nil {
		return fmt.Errorf("opening %s to sync: %w", name, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", name, err)
	}
	return nil
}

func (w *Writer) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: "+format, append([]any{w.logName}, args...)...)
}

// state is what a volume directory holds, sorted into what a Writer makes and what it does not.
type state struct {
	current   string          // the timestamped directory ..data names, "" when there is none
	staleDirs []string        // other timestamped directories, left by an interrupted write
	tmpLink   bool            // ..data_tmp, left by an interrupted write
	visible   map[string]bool // user-visible names, each a link to ..data/<name>
	// foreign are the entries a Writer would not have made as they are (planted, rewritten or
	// retargeted, by a container or anyone else), with why; the next write removes them.
	foreign map[string]string
}

// tampered says whether the directory holds anything a Writer did not make.
func (st *state) tampered() bool { return len(st.foreign) > 0 }

// readState reads the top of the volume directory with Lstat semantics. Nothing it finds makes
// it fail: what a Writer would not have made is recorded in foreign, for the write to replace.
func readState(root *os.Root) (*state, error) {
	entries, err := readDir(root, ".")
	if err != nil {
		return nil, err
	}
	st := &state{visible: map[string]bool{}, foreign: map[string]string{}}
	dirs := map[string]bool{}
	for _, e := range entries {
		name, typ := e.Name(), e.Type()
		isLink := typ&fs.ModeSymlink != 0
		switch {
		case name == dataLink:
			if !isLink {
				st.foreign[name] = fmt.Sprintf("%s is not a symlink (type %s)", name, typ)
				continue
			}
			target, err := root.Readlink(name)
			if err != nil {
				return nil, err
			}
			if !tsName.MatchString(target) {
				st.foreign[name] = fmt.Sprintf("%s points to %q, not to a timestamped directory of the volume", name, target)
				continue
			}
			st.current = target
		case name == dataTmpLink:
			if !isLink {
				st.foreign[name] = fmt.Sprintf("%s is not a symlink (type %s)", name, typ)
				continue
			}
			st.tmpLink = true
		case tsName.MatchString(name):
			if !typ.IsDir() {
				st.foreign[name] = fmt.Sprintf("timestamped %s is not a directory (type %s)", name, typ)
				continue
			}
			dirs[name] = true
		case strings.HasPrefix(name, ".."):
			st.foreign[name] = fmt.Sprintf("unexpected entry %s among the names reserved for the writer", name)
		default:
			if !isLink {
				st.foreign[name] = fmt.Sprintf("user-visible %s is not a symlink (type %s)", name, typ)
				continue
			}
			target, err := root.Readlink(name)
			if err != nil {
				return nil, err
			}
			if target != dataLink+"/"+name {
				st.foreign[name] = fmt.Sprintf("user-visible %s points to %q, not to %s/%s", name, target, dataLink, name)
				continue
			}
			st.visible[name] = true
		}
	}
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		reason, err := checkTree(root, d)
		if err != nil {
			return nil, err
		}
		if reason != "" {
			st.foreign[d] = reason
			continue
		}
		if d != st.current {
			st.staleDirs = append(st.staleDirs, d)
		}
	}
	if st.current != "" && (!dirs[st.current] || st.foreign[st.current] != "") {
		// Missing, or foreign: either way ..data shows nothing the writer made.
		st.foreign[dataLink] = fmt.Sprintf("%s points to %s, which is missing or was tampered with", dataLink, st.current)
		st.current = ""
	}
	return st, nil
}

// checkTree says why a timestamped directory holds something a Writer never puts there (a
// link, device or pipe), or "".
func checkTree(root *os.Root, dir string) (string, error) {
	entries, err := readDir(root, dir)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		p := path.Join(dir, e.Name())
		switch typ := e.Type(); {
		case typ.IsDir():
			if reason, err := checkTree(root, p); err != nil || reason != "" {
				return reason, err
			}
		case !typ.IsRegular():
			return fmt.Sprintf("%s is neither a file nor a directory (type %s)", p, typ), nil
		}
	}
	return "", nil
}

// holds reports whether the directory shows exactly files: the same visible names, and in the
// current timestamped directory the same files with the same content, mode and owner.
func (st *state) holds(root *os.Root, files map[string]FileProjection) (bool, error) {
	if st.current == "" {
		return false, nil
	}
	visible := topLevel(files)
	if len(visible) != len(st.visible) {
		return false, nil
	}
	for name := range visible {
		if !st.visible[name] {
			return false, nil
		}
	}
	wantDirs := map[string]bool{}
	for p := range files {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			wantDirs[d] = true
		}
	}
	c := comparison{root: root, base: st.current, files: files, dirs: wantDirs, euid: int64(os.Geteuid()), egid: int64(os.Getegid())}
	same, err := c.tree("")
	if err != nil || !same {
		return false, err
	}
	return c.seen == len(files), nil
}

type comparison struct {
	root       *os.Root
	base       string
	files      map[string]FileProjection
	dirs       map[string]bool
	euid, egid int64
	seen       int
}

// tree compares the directory rel (relative to the timestamped directory) with the wanted
// files; it stops at the first difference.
func (c *comparison) tree(rel string) (bool, error) {
	entries, err := readDir(c.root, path.Join(c.base, rel))
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		p := path.Join(rel, e.Name())
		switch typ := e.Type(); {
		case typ.IsDir():
			if !c.dirs[p] {
				return false, nil
			}
			if same, err := c.tree(p); err != nil || !same {
				return false, err
			}
		case typ.IsRegular():
			f, ok := c.files[p]
			if !ok {
				return false, nil
			}
			if same, err := c.file(path.Join(c.base, p), f); err != nil || !same {
				return false, err
			}
			c.seen++
		default:
			// Planted after the directory was read: not what is wanted, so it is rewritten.
			return false, nil
		}
	}
	return true, nil
}

func (c *comparison) file(name string, f FileProjection) (bool, error) {
	before, err := c.root.Lstat(name)
	if err != nil {
		return false, err
	}
	if !before.Mode().IsRegular() {
		return false, nil
	}
	if before.Size() != int64(len(f.Data)) || before.Mode() != f.Mode {
		return false, nil
	}
	uid, gid, ok := ownerOf(before)
	if !ok {
		return false, nil
	}
	wantUID, wantGID := c.euid, c.egid
	if f.UID != nil {
		wantUID = *f.UID
	}
	if f.GID != nil {
		wantGID = *f.GID
	}
	if uid != wantUID || gid != wantGID {
		return false, nil
	}
	fh, err := c.root.Open(name)
	if err != nil {
		return false, err
	}
	defer fh.Close()
	opened, err := fh.Stat()
	if err != nil {
		return false, err
	}
	if !os.SameFile(before, opened) {
		// Replaced while being read: not the file that was checked, so it is rewritten.
		return false, nil
	}
	onDisk, err := io.ReadAll(io.LimitReader(fh, int64(len(f.Data))+1))
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", name, err)
	}
	return bytes.Equal(onDisk, f.Data), nil
}

func readDir(root *os.Root, name string) ([]fs.DirEntry, error) {
	d, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", name, err)
	}
	return entries, nil
}

// Remove removes the volume directory dir and everything in it without following any link:
// a link in place of dir is removed itself, links inside are unlinked, never traversed.
func Remove(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("removing volume directory: %w", err)
	}
	if !fi.IsDir() {
		if err := os.Remove(dir); err != nil {
			return fmt.Errorf("removing volume directory: %w", err)
		}
		return nil
	}
	// RemoveAll walks with openat and O_NOFOLLOW and unlinks links instead of entering them.
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing volume directory: %w", err)
	}
	return nil
}
