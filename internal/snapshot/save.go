package snapshot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	etcdutl "go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"

	"github.com/idplane/idplane/internal/snapshot/archive"
	"github.com/idplane/idplane/internal/version"
)

// Source is the etcd a snapshot is taken from.
type Source struct {
	// Endpoints are tried in order; the snapshot is the state of the first that answers.
	Endpoints []string
	// TLS is nil for the embedded etcd's unix socket.
	TLS *tls.Config
	// DialTimeout bounds connecting to each endpoint (default 5s).
	DialTimeout time.Duration
}

// SaveOptions say what to save and where.
type SaveOptions struct {
	// PKIDir is the data directory's pki/; every regular file in it goes into the archive.
	PKIDir string
	// Path is the archive to write. It is written under a temporary name in its directory and
	// renamed into place, so it never exists half-written.
	Path string
	// Force replaces an existing file at Path; without it Save refuses to.
	Force bool
	// Now stamps the manifest.
	Now time.Time
}

// tempPattern names every temporary file Save writes beside the archive; see RemoveTemporaries.
func tempPattern(path string) string { return "." + filepath.Base(path) + ".tmp*" }

// Save takes an online snapshot of src with etcd's snapshot API, checks it (etcd's sha256
// trailer, then etcd's own snapshot status, which walks the database), and writes it with the
// files of o.PKIDir and a manifest to o.Path, mode 0600.
func Save(ctx context.Context, src Source, o SaveOptions) (*archive.Manifest, error) {
	if !o.Force {
		if _, err := os.Lstat(o.Path); err == nil {
			return nil, fmt.Errorf("%s exists: refusing to replace it (use --force to)", o.Path)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	dir := filepath.Dir(o.Path)
	db, err := os.CreateTemp(dir, tempPattern(o.Path))
	if err != nil {
		return nil, fmt.Errorf("creating a temporary file beside %s: %w", o.Path, err)
	}
	defer os.Remove(db.Name())
	defer db.Close()
	sum, err := fetch(ctx, src, db)
	if err != nil {
		return nil, err
	}
	etcd, err := etcdStatus(db.Name())
	if err != nil {
		return nil, err
	}
	dbFile := archive.File{Name: archive.EtcdEntry, Size: sum.size, Mode: 0o600, SHA256: sum.whole}
	// The keys are read after the store: a new encryption key is added to the configuration
	// before anything is written with it, so the configuration read now reads every secret of the
	// snapshot taken before.
	pkiFiles, err := readPKI(o.PKIDir)
	if err != nil {
		return nil, err
	}
	m := &archive.Manifest{
		Format: archive.FormatVersion, Created: o.Now.UTC().Truncate(time.Second), IdplaneVersion: version.String(),
		Etcd: etcd, Files: append([]archive.File{dbFile}, pkiFiles.files...),
	}
	if err := writeArchive(m, db, pkiFiles.data, o); err != nil {
		return nil, err
	}
	return m, nil
}

// fetch streams a snapshot from the first endpoint of src that answers into f, checking etcd's
// sha256 trailer on the way.
func fetch(ctx context.Context, src Source, f *os.File) (snapshotSum, error) {
	timeout := src.DialTimeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	var errs []error
	for _, ep := range src.Endpoints {
		sum, err := fetchFrom(ctx, clientv3.Config{
			Endpoints: []string{ep}, TLS: src.TLS, DialTimeout: timeout, Logger: zap.NewNop(),
		}, f)
		if err == nil {
			return sum, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", ep, err))
		if ctx.Err() != nil {
			break
		}
	}
	return snapshotSum{}, fmt.Errorf("taking an etcd snapshot: %w", errors.Join(errs...))
}

func fetchFrom(ctx context.Context, cfg clientv3.Config, f *os.File) (snapshotSum, error) {
	if err := f.Truncate(0); err != nil {
		return snapshotSum{}, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return snapshotSum{}, err
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return snapshotSum{}, err
	}
	defer cli.Close()
	// Fail fast when nothing listens, instead of waiting in the stream for a connection.
	statusCtx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	_, err = cli.Status(statusCtx, cfg.Endpoints[0])
	cancel()
	if err != nil {
		return snapshotSum{}, fmt.Errorf("no etcd answers: %w", err)
	}
	resp, err := cli.SnapshotWithVersion(ctx)
	if err != nil {
		return snapshotSum{}, err
	}
	defer resp.Snapshot.Close()
	h := newTrailerHash()
	if _, err := io.Copy(io.MultiWriter(f, h), resp.Snapshot); err != nil {
		return snapshotSum{}, fmt.Errorf("receiving the snapshot: %w", err)
	}
	sum, err := h.check()
	if err != nil {
		return snapshotSum{}, err
	}
	return sum, f.Sync()
}

// snapshotSum is an etcd snapshot's size and sha256, trailer included.
type snapshotSum struct {
	size  int64
	whole string
}

// trailerHash hashes a snapshot as it streams: the whole of it for the manifest, and all but its
// last 32 bytes, which etcd sets to the sha256 of the rest (the check etcdutl's restore makes).
type trailerHash struct {
	body, whole hash.Hash
	tail        []byte
	size        int64
}

func newTrailerHash() *trailerHash {
	return &trailerHash{body: sha256.New(), whole: sha256.New(), tail: make([]byte, 0, 2*sha256.Size)}
}

func (h *trailerHash) Write(p []byte) (int, error) {
	h.whole.Write(p)
	h.size += int64(len(p))
	// Everything but the last 32 bytes seen so far is body.
	if len(p) >= sha256.Size {
		h.body.Write(h.tail)
		h.body.Write(p[:len(p)-sha256.Size])
		h.tail = append(h.tail[:0], p[len(p)-sha256.Size:]...)
		return len(p), nil
	}
	h.tail = append(h.tail, p...)
	if extra := len(h.tail) - sha256.Size; extra > 0 {
		h.body.Write(h.tail[:extra])
		h.tail = append(h.tail[:0], h.tail[extra:]...)
	}
	return len(p), nil
}

func (h *trailerHash) check() (snapshotSum, error) {
	// etcd pads the database to 512-byte sectors before it appends the sha256.
	if h.size%512 != sha256.Size {
		return snapshotSum{}, fmt.Errorf("the etcd snapshot (%d bytes) has no sha256 trailer: truncated?", h.size)
	}
	if !bytes.Equal(h.body.Sum(nil), h.tail) {
		return snapshotSum{}, errors.New("the etcd snapshot does not match its sha256 trailer")
	}
	return snapshotSum{size: h.size, whole: hex.EncodeToString(h.whole.Sum(nil))}, nil
}

// etcdStatus reads a snapshot's status with etcdutl, which checks the database's integrity page
// by page.
func etcdStatus(path string) (archive.EtcdInfo, error) {
	st, err := etcdutl.NewV3(zap.NewNop()).Status(path)
	if err != nil {
		return archive.EtcdInfo{}, fmt.Errorf("checking the etcd snapshot: %w", err)
	}
	return archive.EtcdInfo{Revision: st.Revision, TotalKeys: st.TotalKey, StorageVersion: st.Version, Hash: st.Hash}, nil
}

type pkiContents struct {
	files []archive.File
	data  map[string][]byte
}

// readPKI reads every regular file under dir (the keys are small), skipping the temporaries of
// interrupted writes (dot files). A symbolic link or other special file could point anywhere and
// is refused rather than silently left out.
func readPKI(dir string) (pkiContents, error) {
	c := pkiContents{data: map[string][]byte{}}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		if strings.HasPrefix(e.Name(), ".") {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if e.IsDir() {
			return nil
		}
		if !e.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file: a data directory's pki holds only files", p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		name := archive.PKIPrefix + filepath.ToSlash(rel)
		c.files = append(c.files, archive.File{Name: name, Size: int64(len(data)), Mode: uint32(info.Mode().Perm()), SHA256: hex.EncodeToString(sum[:])})
		c.data[name] = data
		return nil
	})
	if err != nil {
		return c, fmt.Errorf("reading the data directory's pki: %w", err)
	}
	if len(c.files) == 0 {
		return c, fmt.Errorf("%s holds no files: is it a data directory's pki?", dir)
	}
	slices.SortFunc(c.files, func(a, b archive.File) int { return strings.Compare(a.Name, b.Name) })
	return c, nil
}

// writeArchive writes the archive to a temporary file beside o.Path, syncs it and moves it into
// place: with a hard link when o.Force is off, so that a file created there meanwhile is never
// replaced, else with a rename.
func writeArchive(m *archive.Manifest, db *os.File, pki map[string][]byte, o SaveOptions) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(o.Path), tempPattern(o.Path))
	if err != nil {
		return fmt.Errorf("creating a temporary file beside %s: %w", o.Path, err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if err := tmp.Chmod(0o600); err != nil {
		return err
	}
	w := archive.NewWriter(tmp, m.Created)
	if err := w.WriteManifest(m); err != nil {
		return err
	}
	for _, f := range m.Files {
		var r io.Reader
		if f.Name == archive.EtcdEntry {
			if _, err := db.Seek(0, io.SeekStart); err != nil {
				return err
			}
			r = db
		} else {
			r = bytes.NewReader(pki[f.Name])
		}
		if err := w.Entry(f.Name, f.Size, f.Mode, r); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("writing the archive: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing the archive: %w", err)
	}
	if o.Force {
		err = os.Rename(tmp.Name(), o.Path)
	} else {
		err = os.Link(tmp.Name(), o.Path)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s exists: refusing to replace it (use --force to)", o.Path)
		}
	}
	if err != nil {
		return fmt.Errorf("moving the archive into place: %w", err)
	}
	return syncDir(filepath.Dir(o.Path))
}

// syncDir makes a rename or link in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}
