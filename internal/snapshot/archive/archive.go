// Package archive is the format of idplane's snapshot archives, and the one reader that checks
// every byte of one before anything it holds is used. An archive is a tar file holding, in order:
//
//	manifest.json          what the archive holds: time, etcd revision, idplane version, files and their sha256
//	etcd/snapshot.db       etcd's snapshot, with etcd's own sha256 trailer
//	pki/<path>...          the keys and certificates of the data directory's pki/
//	manifest.json.sha256   the sha256 of manifest.json, so that no byte of the manifest goes unchecked
package archive

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
)

const (
	// FormatVersion is the archive layout this code writes and reads.
	FormatVersion    = 1
	ManifestEntry    = "manifest.json"
	ManifestSumEntry = "manifest.json.sha256"
	// EtcdEntry is the etcd snapshot's name in the archive.
	EtcdEntry = "etcd/snapshot.db"
	PKIPrefix = "pki/"
	// maxManifestSize bounds what is read before anything is verified.
	maxManifestSize = 1 << 20
)

// Manifest says what an archive holds.
type Manifest struct {
	Format         int       `json:"format"`
	Created        time.Time `json:"created"`
	IdplaneVersion string    `json:"idplaneVersion"`
	Etcd           EtcdInfo  `json:"etcd"`
	Files          []File    `json:"files"`
}

// EtcdInfo describes the etcd snapshot, as etcd's snapshot status reads it.
type EtcdInfo struct {
	Revision       int64  `json:"revision"`
	TotalKeys      int    `json:"totalKeys"`
	StorageVersion string `json:"storageVersion,omitempty"`
	// Hash is etcd's hash of the snapshot's contents (crc32-Castagnoli of every bucket).
	Hash uint32 `json:"hash"`
}

// File is one file in the archive.
type File struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	Mode   uint32 `json:"mode"`
	SHA256 string `json:"sha256"`
}

// ValidName is true for the only names an archive may hold: the etcd snapshot and relative
// paths under pki/. Anything else (a path that climbs out, an absolute one) is refused before it
// reaches the disk.
func ValidName(name string) bool {
	if name == EtcdEntry {
		return true
	}
	rest, ok := strings.CutPrefix(name, PKIPrefix)
	if !ok || rest == "" || strings.Contains(rest, `\`) || path.Clean(name) != name {
		return false
	}
	for _, seg := range strings.Split(rest, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// validate checks a manifest read from an archive before any file is written.
func (m *Manifest) validate() error {
	if m.Format != FormatVersion {
		return fmt.Errorf("manifest format %d is not the %d this idplane reads", m.Format, FormatVersion)
	}
	seen := map[string]bool{}
	hasEtcd := false
	for _, f := range m.Files {
		switch {
		case !ValidName(f.Name):
			return fmt.Errorf("manifest names %q, which is not an etcd snapshot or a pki file", f.Name)
		case seen[f.Name]:
			return fmt.Errorf("manifest names %q twice", f.Name)
		case f.Size < 0:
			return fmt.Errorf("manifest gives %q a negative size", f.Name)
		case len(f.SHA256) != 2*sha256.Size:
			return fmt.Errorf("manifest gives %q no sha256", f.Name)
		}
		seen[f.Name] = true
		hasEtcd = hasEtcd || f.Name == EtcdEntry
	}
	if !hasEtcd {
		return fmt.Errorf("manifest names no %s", EtcdEntry)
	}
	return nil
}

// Writer writes an archive: WriteManifest first, then an Entry for each file the manifest names,
// in its order, then Close.
type Writer struct {
	tw       *tar.Writer
	modTime  time.Time
	manifest []byte
}

// NewWriter writes an archive to w whose entries carry modTime.
func NewWriter(w io.Writer, modTime time.Time) *Writer {
	return &Writer{tw: tar.NewWriter(w), modTime: modTime}
}

// Entry writes one file of size bytes read from r.
func (w *Writer) Entry(name string, size int64, mode uint32, r io.Reader) error {
	hdr := &tar.Header{Name: name, Size: size, Mode: int64(mode), ModTime: w.modTime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := w.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("writing %s to the archive: %w", name, err)
	}
	n, err := io.Copy(w.tw, r)
	if err != nil {
		return fmt.Errorf("writing %s to the archive: %w", name, err)
	}
	if n != size {
		return fmt.Errorf("writing %s to the archive: %d bytes, expected %d (did it change while being read?)", name, n, size)
	}
	return nil
}

// WriteManifest writes the manifest entry; its sha256 closes the archive.
func (w *Writer) WriteManifest(m *Manifest) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	w.manifest = append(data, '\n')
	return w.Entry(ManifestEntry, int64(len(w.manifest)), 0o600, bytes.NewReader(w.manifest))
}

// Close writes the manifest's sha256 and the end of the archive.
func (w *Writer) Close() error {
	sum := sha256.Sum256(w.manifest)
	line := hex.EncodeToString(sum[:]) + "  " + ManifestEntry + "\n"
	if err := w.Entry(ManifestSumEntry, int64(len(line)), 0o600, strings.NewReader(line)); err != nil {
		return err
	}
	if err := w.tw.Close(); err != nil {
		return fmt.Errorf("writing the archive: %w", err)
	}
	return nil
}

// plainFile is true for a regular file whose content is the bytes that follow its header. A
// sparse file (GNU's type, or PAX's GNU.sparse records, which the reader expands with no type of
// its own) is not: a few bytes of it can stand for terabytes of zeros.
func plainFile(hdr *tar.Header) bool {
	if hdr.Typeflag != tar.TypeReg {
		return false
	}
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return false
		}
	}
	return true
}

// ErrCorrupt marks every way an archive can fail its checks.
var ErrCorrupt = errors.New("the archive is truncated, corrupt or not an idplane snapshot")

// Read reads an archive from r, handing every file the manifest names to store (which
// writes it where it belongs) only after checking its name against the manifest, and checks every
// file's size and sha256, the manifest's own sha256 and that nothing is missing or extra. store
// must not make anything it writes visible: Read's caller discards it all on an error.
func Read(r io.Reader, store func(f File, r io.Reader) error) (*Manifest, error) {
	tr := tar.NewReader(r)
	hdr, err := tr.Next()
	if err != nil {
		return nil, fmt.Errorf("%w: reading its first entry: %w", ErrCorrupt, err)
	}
	if hdr.Name != ManifestEntry || !plainFile(hdr) || hdr.Size > maxManifestSize {
		return nil, fmt.Errorf("%w: its first entry is %q, not %s", ErrCorrupt, hdr.Name, ManifestEntry)
	}
	manifestData, err := io.ReadAll(tr)
	if err != nil {
		return nil, fmt.Errorf("%w: reading %s: %w", ErrCorrupt, ManifestEntry, err)
	}
	var m Manifest
	if err := json.Unmarshal(manifestData, &m); err != nil {
		return nil, fmt.Errorf("%w: decoding %s: %w", ErrCorrupt, ManifestEntry, err)
	}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	want := map[string]File{}
	for _, f := range m.Files {
		want[f.Name] = f
	}
	for {
		hdr, err := tr.Next()
		if err != nil {
			return nil, fmt.Errorf("%w: reading the entry after %d of %d files: %w", ErrCorrupt, len(m.Files)-len(want), len(m.Files), err)
		}
		if hdr.Name == ManifestSumEntry {
			break
		}
		f, ok := want[hdr.Name]
		if !ok || !plainFile(hdr) {
			return nil, fmt.Errorf("%w: entry %q is not in the manifest, or there twice", ErrCorrupt, hdr.Name)
		}
		if hdr.Size != f.Size {
			return nil, fmt.Errorf("%w: %s holds %d bytes, the manifest says %d", ErrCorrupt, f.Name, hdr.Size, f.Size)
		}
		delete(want, hdr.Name)
		h := sha256.New()
		content := io.TeeReader(tr, h)
		err = store(f, content)
		if err == nil {
			// The hash covers the whole entry, whatever store read of it.
			_, err = io.Copy(io.Discard, content)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: reading %s: %w", ErrCorrupt, f.Name, err)
		}
		if err != nil {
			return nil, err
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != f.SHA256 {
			return nil, fmt.Errorf("%w: %s has sha256 %s, the manifest says %s", ErrCorrupt, f.Name, got, f.SHA256)
		}
	}
	for name := range want {
		return nil, fmt.Errorf("%w: %s is in the manifest but not in the archive", ErrCorrupt, name)
	}
	sumLine, err := io.ReadAll(io.LimitReader(tr, 256))
	if err != nil {
		return nil, fmt.Errorf("%w: reading %s: %w", ErrCorrupt, ManifestSumEntry, err)
	}
	sum := sha256.Sum256(manifestData)
	if want := hex.EncodeToString(sum[:]) + "  " + ManifestEntry + "\n"; string(sumLine) != want {
		return nil, fmt.Errorf("%w: %s does not match %s", ErrCorrupt, ManifestSumEntry, ManifestEntry)
	}
	if _, err := tr.Next(); err != io.EOF {
		return nil, fmt.Errorf("%w: the archive goes on after %s", ErrCorrupt, ManifestSumEntry)
	}
	return &m, nil
}
