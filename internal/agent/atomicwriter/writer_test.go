package atomicwriter

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/idplane/idplane/internal/testing/dirtree"
)

func ptr(v int64) *int64 { return &v }

func newWriter(t *testing.T) (*Writer, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "vol")
	w, err := New(dir, "test-volume")
	if err != nil {
		t.Fatal(err)
	}
	return w, dir
}

func mustWrite(t *testing.T, w *Writer, files map[string]FileProjection) bool {
	t.Helper()
	changed, err := w.Write(files)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	return changed
}

func readLink(t *testing.T, p string) string {
	t.Helper()
	target, err := os.Readlink(p)
	if err != nil {
		t.Fatal(err)
	}
	return target
}

func TestValidatePath(t *testing.T) {
	cases := []struct {
		in, want string // want "" means refused
	}{
		{"token", "token"},
		{"a/b/c", "a/b/c"},
		{".hidden", ".hidden"},
		{"a/./b", "a/b"},
		{"a//b", "a/b"},
		{"a/", "a"},
		{"a/..b", "a/..b"},
		{"x..y", "x..y"},
		{"", ""},
		{"/abs", ""},
		{"/", ""},
		{".", ""},
		{"./", ""},
		{"..", ""},
		{"../x", ""},
		{"a/../b", ""},
		{"a/..", ""},
		{"..data", ""},
		{"..data/token", ""},
		{"..data_tmp", ""},
		{"..2026_01_01_00_00_00.000000000", ""},
		{"...", ""},
		{"..x", ""},
		{"./..data", ""},
		{"a\x00b", ""},
		{strings.Repeat("n", 256), ""},
		{strings.Repeat("n", 255), strings.Repeat("n", 255)},
		{strings.Repeat("d/", 2049), ""},
	}
	for _, tc := range cases {
		got, err := ValidatePath(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("ValidatePath(%q) = %q, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ValidatePath(%q) = %q, %v, want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestWriteRefusesHostileFileSets(t *testing.T) {
	cases := map[string]map[string]FileProjection{
		"empty key":          {"": {Data: []byte("x"), Mode: 0o644}},
		"absolute":           {"/etc/passwd": {Data: []byte("x"), Mode: 0o644}},
		"dotdot element":     {"a/../../outside": {Data: []byte("x"), Mode: 0o644}},
		"dotdot":             {"..": {Data: []byte("x"), Mode: 0o644}},
		"reserved data link": {"..data": {Data: []byte("x"), Mode: 0o644}},
		"reserved prefix":    {"..data/token": {Data: []byte("x"), Mode: 0o644}},
		"reserved timestamp": {"..2026_01_01_00_00_00.000000000/x": {Data: []byte("x"), Mode: 0o644}},
		"volume dir itself":  {".": {Data: []byte("x"), Mode: 0o644}},
		"file and dir":       {"a": {Mode: 0o644}, "a/b": {Mode: 0o644}},
		"same file twice":    {"a/b": {Mode: 0o644}, "a//b": {Mode: 0o644}},
		"setuid mode":        {"a": {Mode: 0o4755}},
		"file type in mode":  {"a": {Mode: fs.ModeSymlink | 0o777}},
		"negative uid":       {"a": {Mode: 0o644, UID: ptr(-5)}},
		"gid too large":      {"a": {Mode: 0o644, GID: ptr(1 << 32)}},
		"one bad among good": {"good": {Mode: 0o644}, "../bad": {Mode: 0o644}},
	}
	for name, files := range cases {
		t.Run(name, func(t *testing.T) {
			w, dir := newWriter(t)
			mustWrite(t, w, map[string]FileProjection{"token": {Data: []byte("before"), Mode: 0o644}})
			before := dirtree.Snapshot(t, filepath.Dir(dir))
			changed, err := w.Write(files)
			if err == nil || changed {
				t.Fatalf("Write = %v, %v; want refusal", changed, err)
			}
			if !strings.Contains(err.Error(), "test-volume") {
				t.Errorf("error %q does not name the volume", err)
			}
			if after := dirtree.Snapshot(t, filepath.Dir(dir)); after != before {
				t.Errorf("refused Write changed the directory:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// TestWriteRebuildsTamperedDirectory: whatever was planted or rewritten in a volume directory,
// the next write removes it and writes the volume again (instead of refusing it for good, which
// stopped rotation), and nothing outside the directory is written, chmod'ed or removed through
// a planted link.
func TestWriteRebuildsTamperedDirectory(t *testing.T) {
	files := map[string]FileProjection{
		"token":  {Data: []byte("tok"), Mode: 0o644},
		"ca/crt": {Data: []byte("crt"), Mode: 0o644},
	}
	rotated := map[string]FileProjection{
		"token":  {Data: []byte("new"), Mode: 0o600},
		"ca/crt": {Data: []byte("crt"), Mode: 0o644},
	}
	cases := map[string]func(t *testing.T, dir, outside string){
		"data link to absolute outside": func(t *testing.T, dir, outside string) {
			replaceWithLink(t, filepath.Join(dir, dataLink), outside)
		},
		"data link to relative outside": func(t *testing.T, dir, outside string) {
			replaceWithLink(t, filepath.Join(dir, dataLink), "../outside")
		},
		"data link to a visible name": func(t *testing.T, dir, outside string) {
			replaceWithLink(t, filepath.Join(dir, dataLink), "token")
		},
		"data is a directory": func(t *testing.T, dir, outside string) {
			removePath(t, filepath.Join(dir, dataLink))
			mkdir(t, filepath.Join(dir, dataLink))
		},
		"data link to missing timestamped dir": func(t *testing.T, dir, outside string) {
			replaceWithLink(t, filepath.Join(dir, dataLink), "..2001_01_01_00_00_00.000000000")
		},
		"timestamped dir is a link outside": func(t *testing.T, dir, outside string) {
			ts := "..2001_01_01_00_00_00.000000000"
			if err := os.Symlink(outside, filepath.Join(dir, ts)); err != nil {
				t.Fatal(err)
			}
			replaceWithLink(t, filepath.Join(dir, dataLink), ts)
		},
		"stale timestamped link": func(t *testing.T, dir, outside string) {
			if err := os.Symlink(outside, filepath.Join(dir, "..2001_01_01_00_00_00.000000000")); err != nil {
				t.Fatal(err)
			}
		},
		"visible name links outside": func(t *testing.T, dir, outside string) {
			replaceWithLink(t, filepath.Join(dir, "token"), filepath.Join(outside, "secret"))
		},
		"visible name links to another data entry": func(t *testing.T, dir, outside string) {
			replaceWithLink(t, filepath.Join(dir, "token"), "..data/ca")
		},
		"visible name is a directory": func(t *testing.T, dir, outside string) {
			removePath(t, filepath.Join(dir, "ca"))
			mkdir(t, filepath.Join(dir, "ca"))
		},
		"visible name is a file": func(t *testing.T, dir, outside string) {
			removePath(t, filepath.Join(dir, "token"))
			writeFile(t, filepath.Join(dir, "token"), "planted")
		},
		"extra link outside": func(t *testing.T, dir, outside string) {
			if err := os.Symlink(outside, filepath.Join(dir, "extra")); err != nil {
				t.Fatal(err)
			}
		},
		"tmp link is a directory": func(t *testing.T, dir, outside string) {
			mkdir(t, filepath.Join(dir, dataTmpLink))
		},
		"unknown reserved name": func(t *testing.T, dir, outside string) {
			writeFile(t, filepath.Join(dir, "..planted"), "x")
		},
		"link inside timestamped dir": func(t *testing.T, dir, outside string) {
			data := filepath.Join(dir, readLink(t, filepath.Join(dir, dataLink)))
			replaceWithLink(t, filepath.Join(data, "token"), filepath.Join(outside, "secret"))
		},
		"link planted in a new directory of the data": func(t *testing.T, dir, outside string) {
			// The security review's ..data/x/pw -> /etc/shadow.
			mkdir(t, filepath.Join(dir, dataLink, "x"))
			if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, dataLink, "x", "pw")); err != nil {
				t.Fatal(err)
			}
		},
		"directory inside the data replaced by a link to a directory outside": func(t *testing.T, dir, outside string) {
			data := filepath.Join(dir, readLink(t, filepath.Join(dir, dataLink)))
			replaceWithLink(t, filepath.Join(data, "ca"), outside)
		},
		"file inside the data rewritten": func(t *testing.T, dir, outside string) {
			writeFile(t, filepath.Join(dir, dataLink, "token"), "xyz")
		},
		"file inside the data made writable": func(t *testing.T, dir, outside string) {
			if err := os.Chmod(filepath.Join(dir, dataLink, "ca", "crt"), 0o666); err != nil {
				t.Fatal(err)
			}
		},
		"extra file inside the data": func(t *testing.T, dir, outside string) {
			writeFile(t, filepath.Join(dir, dataLink, "ca", "extra"), "x")
		},
		"extra file": func(t *testing.T, dir, outside string) {
			writeFile(t, filepath.Join(dir, "extra"), "x")
		},
		"fifo inside the data": func(t *testing.T, dir, outside string) {
			if err := syscall.Mkfifo(filepath.Join(dir, dataLink, "fifo"), 0o644); err != nil {
				t.Fatal(err)
			}
		},
	}
	// Files of the data changed in place are an ordinary difference, rewritten like any other;
	// the rest are entries a Writer never makes, which OnRepair hears of.
	contentOnly := map[string]bool{
		"file inside the data rewritten": true, "file inside the data made writable": true, "extra file inside the data": true,
	}
	for name, plant := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, next := range []map[string]FileProjection{files, rotated} {
				w, dir := newWriter(t)
				outside := filepath.Join(filepath.Dir(dir), "outside")
				mkdir(t, outside)
				if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("host secret"), 0o600); err != nil {
					t.Fatal(err)
				}
				var repaired []string
				w.OnRepair = func(reasons []string) { repaired = reasons }
				mustWrite(t, w, files)
				plant(t, dir, outside)
				outsideBefore := dirtree.Snapshot(t, outside)

				changed, err := w.Write(next)
				if err != nil || !changed {
					t.Fatalf("Write after tampering = %v, %v; want the volume written again", changed, err)
				}
				if got, want := volumeShape(t, dir), freshShape(t, next); got != want {
					t.Errorf("volume after the repair:\n%s\nwant, as written into an empty directory:\n%s", got, want)
				}
				if after := dirtree.Snapshot(t, outside); after != outsideBefore {
					t.Errorf("the repair changed something outside the volume:\nbefore:\n%s\nafter:\n%s", outsideBefore, after)
				}
				// Rotation goes on as for a volume never tampered with.
				if mustWrite(t, w, next) {
					t.Error("a repaired volume is rewritten again with the same files")
				}
				third := map[string]FileProjection{"token": {Data: []byte("third"), Mode: 0o600}}
				if !mustWrite(t, w, third) || volumeShape(t, dir) != freshShape(t, third) {
					t.Errorf("the update after the repair: %s", volumeShape(t, dir))
				}
				if (repaired != nil) == contentOnly[name] {
					t.Errorf("OnRepair told %q; want it told only of entries a Writer does not make", repaired)
				}
			}
		})
	}
}

// volumeShape is snapshot with the timestamped directory's name left out, to compare volumes
// written at different times.
func volumeShape(t *testing.T, dir string) string {
	t.Helper()
	return anyTSName.ReplaceAllString(dirtree.Snapshot(t, dir), "..TS")
}

var anyTSName = regexp.MustCompile(`\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\d{9}`)

// freshShape is the shape of files written into an empty directory.
func freshShape(t *testing.T, files map[string]FileProjection) string {
	t.Helper()
	w, dir := newWriter(t)
	mustWrite(t, w, files)
	return volumeShape(t, dir)
}

func TestVolumeDirectoryMayNotBeALink(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	mkdir(t, outside)
	link := filepath.Join(base, "vol")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	if _, err := New(link, "test-volume"); err == nil {
		t.Fatal("New accepted a volume directory that is a symlink")
	}

	w, dir := newWriter(t)
	removePath(t, dir)
	if err := os.Symlink(outside, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(map[string]FileProjection{"a": {Mode: 0o644}}); err == nil {
		t.Fatal("Write followed a volume directory replaced by a symlink")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("Write wrote through the link: %v", entries)
	}
}

func TestUnchangedFilesAreNotRewritten(t *testing.T) {
	files := map[string]FileProjection{
		"token":     {Data: []byte("tok"), Mode: 0o600, UID: ptr(int64(os.Geteuid()))},
		"a/b/c":     {Data: []byte("deep"), Mode: 0o644},
		"a/b/d":     {Data: []byte{}, Mode: 0o444, GID: ptr(int64(os.Getegid()))},
		"namespace": {Data: []byte("default"), Mode: 0o644},
	}
	w, dir := newWriter(t)
	if !mustWrite(t, w, files) {
		t.Fatal("first Write reported no change")
	}
	target := readLink(t, filepath.Join(dir, dataLink))

	if mustWrite(t, w, files) {
		t.Error("second Write of the same files reported a change")
	}
	// A restarted agent has a new Writer.
	w2, err := New(dir, "restarted")
	if err != nil {
		t.Fatal(err)
	}
	if mustWrite(t, w2, files) {
		t.Error("Write by a new Writer of the same files reported a change")
	}
	if got := readLink(t, filepath.Join(dir, dataLink)); got != target {
		t.Errorf("..data moved from %s to %s though nothing changed", target, got)
	}

	changes := map[string]func(map[string]FileProjection){
		"content": func(m map[string]FileProjection) { m["token"] = FileProjection{Data: []byte("tak"), Mode: 0o600} },
		"mode":    func(m map[string]FileProjection) { m["a/b/c"] = FileProjection{Data: []byte("deep"), Mode: 0o640} },
		"added":   func(m map[string]FileProjection) { m["a/e"] = FileProjection{Mode: 0o644} },
		"removed": func(m map[string]FileProjection) { delete(m, "namespace") },
		"owner": func(m map[string]FileProjection) {
			m["namespace"] = FileProjection{Data: []byte("default"), Mode: 0o644, UID: ptr(4242)}
		},
	}
	if os.Geteuid() != 0 {
		delete(changes, "owner")
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			w, dir := newWriter(t)
			mustWrite(t, w, files)
			before := readLink(t, filepath.Join(dir, dataLink))
			next := map[string]FileProjection{}
			for k, v := range files {
				next[k] = v
			}
			change(next)
			if !mustWrite(t, w, next) {
				t.Fatal("Write of a different file set reported no change")
			}
			if readLink(t, filepath.Join(dir, dataLink)) == before {
				t.Fatal("..data still names the old directory")
			}
			checkVolume(t, dir, next)
			if mustWrite(t, w, next) {
				t.Error("rewriting the new set reported a change")
			}
		})
	}
}

func TestModesIgnoreUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)

	files := map[string]FileProjection{
		"public":     {Data: []byte("p"), Mode: 0o644},
		"private":    {Data: []byte("s"), Mode: 0o400},
		"group":      {Data: []byte("g"), Mode: 0o640},
		"all":        {Data: []byte("a"), Mode: 0o777},
		"none":       {Data: []byte("n"), Mode: 0},
		"sub/dir/f":  {Data: []byte("f"), Mode: 0o664},
		"sub/other":  {Data: []byte("o"), Mode: 0o604},
		".dot/t":     {Data: []byte("t"), Mode: 0o644},
		"sub/dir2/x": {Data: []byte("x"), Mode: 0o600},
	}
	parent := t.TempDir()
	dir := filepath.Join(parent, "new", "vol")
	w, err := New(dir, "test-volume")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(dir); err != nil || fi.Mode() != fs.ModeDir|0o755 {
		t.Fatalf("volume directory mode = %v, %v; want drwxr-xr-x", fi.Mode(), err)
	}
	mustWrite(t, w, files)
	checkVolume(t, dir, files)

	data := filepath.Join(dir, readLink(t, filepath.Join(dir, dataLink)))
	for _, d := range []string{".", "sub", "sub/dir", "sub/dir2", ".dot"} {
		fi, err := os.Lstat(filepath.Join(data, d))
		if err != nil || fi.Mode() != fs.ModeDir|0o755 {
			t.Errorf("directory %s mode = %v, %v; want drwxr-xr-x", d, fi.Mode(), err)
		}
	}
}

func TestOwnership(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown to other users needs root")
	}
	files := map[string]FileProjection{
		"token":  {Data: []byte("tok"), Mode: 0o600, UID: ptr(1234)},
		"ca.crt": {Data: []byte("crt"), Mode: 0o640, GID: ptr(2345)},
		"both":   {Data: []byte("b"), Mode: 0o640, UID: ptr(1234), GID: ptr(2345)},
		"plain":  {Data: []byte("p"), Mode: 0o644},
	}
	w, dir := newWriter(t)
	mustWrite(t, w, files)
	checkVolume(t, dir, files)
	if mustWrite(t, w, files) {
		t.Error("unchanged owners reported a change")
	}
}

// TestOwnershipNotPermitted runs a Write as an unprivileged user in a child process.
func TestOwnershipNotPermitted(t *testing.T) {
	if dir := os.Getenv("ATOMICWRITER_UNPRIVILEGED_DIR"); dir != "" {
		unprivilegedChild(dir)
		return
	}
	base, err := os.MkdirTemp("", "atomicwriter-unpriv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o777); err != nil {
		t.Fatal(err)
	}
	// The go tool builds the test binary in a directory only its owner may enter.
	bin := filepath.Join(base, "atomicwriter.test")
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestOwnershipNotPermitted$")
	cmd.Env = append(os.Environ(), "ATOMICWRITER_UNPRIVILEGED_DIR="+base)
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	out, err := cmd.CombinedOutput()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Skipf("cannot start the test binary unprivileged: %v", err)
	}
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "CHILD OK") {
		t.Fatalf("child did not check anything:\n%s", out)
	}
}

func unprivilegedChild(base string) {
	fail := func(format string, args ...any) {
		fmt.Printf("CHILD FAIL: "+format+"\n", args...)
		os.Exit(1)
	}
	if os.Geteuid() == 0 {
		fail("running as root")
	}
	dir := filepath.Join(base, "vol")
	w, err := New(dir, "unprivileged")
	if err != nil {
		fail("New: %v", err)
	}
	// Without ownership asked, an unprivileged agent writes fine.
	if _, err := w.Write(map[string]FileProjection{"plain": {Data: []byte("p"), Mode: 0o644}}); err != nil {
		fail("plain Write: %v", err)
	}
	before, _ := os.Readlink(filepath.Join(dir, dataLink))
	changed, err := w.Write(map[string]FileProjection{"token": {Data: []byte("t"), Mode: 0o600, UID: ptr(0)}})
	if err == nil || changed || !errors.Is(err, ErrOwnershipNotPermitted) {
		fail("Write asking for uid 0 = %v, %v; want ErrOwnershipNotPermitted", changed, err)
	}
	if after, _ := os.Readlink(filepath.Join(dir, dataLink)); after != before {
		fail("failed Write moved ..data")
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 3 { // ..data, its timestamped directory, plain
		fail("failed Write left entries behind: %v", names)
	}
	fmt.Println("CHILD OK")
}

func TestStaleNamesAreRemoved(t *testing.T) {
	w, dir := newWriter(t)
	mustWrite(t, w, map[string]FileProjection{
		"keep":     {Data: []byte("1"), Mode: 0o644},
		"gone":     {Data: []byte("2"), Mode: 0o644},
		"sub/a":    {Data: []byte("3"), Mode: 0o644},
		"tree/x/y": {Data: []byte("4"), Mode: 0o644},
	})
	next := map[string]FileProjection{
		"keep":  {Data: []byte("1"), Mode: 0o644},
		"sub/b": {Data: []byte("5"), Mode: 0o644},
		"new":   {Data: []byte("6"), Mode: 0o644},
	}
	if !mustWrite(t, w, next) {
		t.Fatal("no change reported")
	}
	checkVolume(t, dir, next)
	for _, gone := range []string{"gone", "tree", "sub/a"} {
		if _, err := os.Lstat(filepath.Join(dir, gone)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still present: %v", gone, err)
		}
	}
}

func TestLeftoversOfAnInterruptedWrite(t *testing.T) {
	files := map[string]FileProjection{"token": {Data: []byte("t"), Mode: 0o644}}
	w, dir := newWriter(t)
	mustWrite(t, w, files)
	current := readLink(t, filepath.Join(dir, dataLink))
	stale := "..2001_01_01_00_00_00.000000000"
	mkdir(t, filepath.Join(dir, stale))
	writeFile(t, filepath.Join(dir, stale, "token"), "half")
	if err := os.Symlink(stale, filepath.Join(dir, dataTmpLink)); err != nil {
		t.Fatal(err)
	}
	if mustWrite(t, w, files) {
		t.Error("clearing leftovers reported a change")
	}
	if got := readLink(t, filepath.Join(dir, dataLink)); got != current {
		t.Errorf("..data moved to %s", got)
	}
	checkVolume(t, dir, files)

	// A changed set after an interruption also clears them.
	mkdir(t, filepath.Join(dir, stale))
	if err := os.Symlink(stale, filepath.Join(dir, dataTmpLink)); err != nil {
		t.Fatal(err)
	}
	next := map[string]FileProjection{"token": {Data: []byte("u"), Mode: 0o644}}
	if !mustWrite(t, w, next) {
		t.Error("no change reported")
	}
	checkVolume(t, dir, next)
}

func TestEmptyFileSet(t *testing.T) {
	w, dir := newWriter(t)
	if !mustWrite(t, w, nil) {
		t.Fatal("first Write of an empty set reported no change")
	}
	checkVolume(t, dir, nil)
	if mustWrite(t, w, map[string]FileProjection{}) {
		t.Error("second Write of an empty set reported a change")
	}
	mustWrite(t, w, map[string]FileProjection{"a": {Mode: 0o644}})
	mustWrite(t, w, nil)
	checkVolume(t, dir, nil)
}

// TestReadersNeverSeeATornVolume swaps between two file sets of equal sizes while a reader
// reads every file through its user-visible path: each read returns one set's content whole.
// An open whose path resolution straddles a swap may find the previous directory already
// removed ("no such file", as with the kubelet's writer); it is retried, and most reads must
// succeed at once.
func TestReadersNeverSeeATornVolume(t *testing.T) {
	paths := []string{"token", "ca.crt", "nested/deep/file", "nested/other"}
	set := func(fill byte) map[string]FileProjection {
		m := map[string]FileProjection{}
		for i, p := range paths {
			m[p] = FileProjection{Data: bytes.Repeat([]byte{fill}, 4096*(i+1)), Mode: 0o644}
		}
		return m
	}
	sets := []map[string]FileProjection{set('A'), set('B')}
	w, dir := newWriter(t)
	mustWrite(t, w, sets[0])

	const readers = 1
	var stop atomic.Bool
	var reads, vanished atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				for i, p := range paths {
					data, err := os.ReadFile(filepath.Join(dir, p))
					if errors.Is(err, fs.ErrNotExist) && !stop.Load() {
						vanished.Add(1)
						continue
					}
					if err != nil {
						errs <- fmt.Errorf("reading %s: %w", p, err)
						return
					}
					if len(data) != 4096*(i+1) {
						errs <- fmt.Errorf("%s has %d bytes", p, len(data))
						return
					}
					if c := data[0]; bytes.Count(data, []byte{c}) != len(data) || (c != 'A' && c != 'B') {
						errs <- fmt.Errorf("%s mixes the two sets", p)
						return
					}
					reads.Add(1)
				}
			}
		}()
	}
	for i := range 100 {
		if changed, err := w.Write(sets[(i+1)%2]); err != nil || !changed {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("swap %d: %v, %v", i, changed, err)
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if reads.Load() == 0 {
		t.Fatal("the readers read nothing")
	}
	// Each swap can catch an open in flight at most once per reader.
	if v := vanished.Load(); v > 100*readers {
		t.Errorf("%d reads found no file over 100 swaps (%d whole)", v, reads.Load())
	}
	checkVolume(t, dir, sets[0])
}

func TestRemove(t *testing.T) {
	w, dir := newWriter(t)
	outside := filepath.Join(filepath.Dir(dir), "outside")
	mkdir(t, outside)
	writeFile(t, filepath.Join(outside, "keep"), "host file")
	mustWrite(t, w, map[string]FileProjection{"a/b": {Data: []byte("x"), Mode: 0o400}, "t": {Mode: 0o600}})
	// Links planted inside must be unlinked, not followed.
	data := filepath.Join(dir, readLink(t, filepath.Join(dir, dataLink)))
	if err := os.Symlink(outside, filepath.Join(data, "a", "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := Remove(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("volume directory still there: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(outside, "keep")); err != nil || string(data) != "host file" {
		t.Fatalf("Remove reached outside: %q, %v", data, err)
	}
	if err := Remove(dir); err != nil {
		t.Fatalf("removing a missing directory: %v", err)
	}

	// A link in place of the volume directory is removed, its target left alone.
	link := filepath.Join(filepath.Dir(dir), "linked")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	if err := Remove(link); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(link); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("link still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
		t.Fatalf("Remove followed the link: %v", err)
	}
}

// checkVolume checks that dir shows exactly files through the writer's layout.
func checkVolume(t *testing.T, dir string, files map[string]FileProjection) {
	t.Helper()
	target := readLink(t, filepath.Join(dir, dataLink))
	if !tsName.MatchString(target) {
		t.Fatalf("..data -> %q", target)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	want := []string{dataLink, target}
	for name := range topLevel(files) {
		want = append(want, name)
		if l := readLink(t, filepath.Join(dir, name)); l != dataLink+"/"+name {
			t.Errorf("%s -> %s", name, l)
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("volume directory holds %v, want %v", got, want)
	}
	count := 0
	err = filepath.WalkDir(filepath.Join(dir, target), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		count++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if count != len(files) {
		t.Errorf("timestamped directory holds %d files, want %d", count, len(files))
	}
	for p, f := range files {
		visible := filepath.Join(dir, p)
		data, err := os.ReadFile(visible)
		if err != nil {
			t.Errorf("reading %s: %v", p, err)
			continue
		}
		if !bytes.Equal(data, f.Data) {
			t.Errorf("%s = %q, want %q", p, data, f.Data)
		}
		fi, err := os.Stat(visible)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != f.Mode {
			t.Errorf("%s mode = %v, want %v", p, fi.Mode(), f.Mode)
		}
		uid, gid, _ := ownerOf(fi)
		if f.UID != nil && uid != *f.UID {
			t.Errorf("%s uid = %d, want %d", p, uid, *f.UID)
		}
		if f.GID != nil && gid != *f.GID {
			t.Errorf("%s gid = %d, want %d", p, gid, *f.GID)
		}
	}
}

func replaceWithLink(t *testing.T, p, target string) {
	t.Helper()
	removePath(t, p)
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

func removePath(t *testing.T, p string) {
	t.Helper()
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
