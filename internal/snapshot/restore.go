package snapshot

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	etcdutl "go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"

	"github.com/idplane/idplane/internal/snapshot/archive"
)

// Target is the data directory a snapshot is restored into and the layout of its etcd member.
type Target struct {
	DataDir string
	// EtcdDir is the member's etcd data directory, relative to DataDir.
	EtcdDir string
	// MemberName and PeerURL describe the new member as the server that opens it names itself.
	MemberName string
	PeerURL    string
}

// RevisionBump is how far a restore moves etcd's revision past the snapshot's, with the older
// revisions marked compacted (etcdutl's --bump-revision and --mark-compacted): clients that
// watched the old store, with resourceVersions from after the snapshot, then relist instead of
// waiting for revisions that the restored store reuses for different writes.
const RevisionBump = 1_000_000_000

// Restore verifies the archive at path (every file's sha256 against the manifest, the manifest's
// own, etcd's sha256 trailer and the database's integrity and hash against the manifest) and
// restores it into t.DataDir, which must not exist or be empty: the etcd snapshot with etcd's
// restore (a new member in a new cluster, as etcd requires of a restore) and the pki files into
// pki/. All of it is written to a temporary directory and renamed into place, so a failure
// leaves nothing behind.
func Restore(path string, t Target) (*archive.Manifest, error) {
	dataDir, err := filepath.Abs(t.DataDir)
	if err != nil {
		return nil, err
	}
	exists, err := checkEmpty(dataDir)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The restore is built in a temporary directory on the target's file system: beside it, or
	// inside it when it exists (it may be a mount point), and moved into place at the end.
	parent, pattern := filepath.Dir(dataDir), "."+filepath.Base(dataDir)+".restore-*"
	if exists {
		parent, pattern = dataDir, ".restore-*"
	} else if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(parent, pattern)
	if err != nil {
		return nil, fmt.Errorf("creating a temporary directory for %s: %w", dataDir, err)
	}
	defer os.RemoveAll(tmp)

	dbPath := filepath.Join(tmp, "snapshot.db")
	m, err := archive.Read(f, func(file archive.File, r io.Reader) error {
		if file.Name == archive.EtcdEntry {
			return writeFile(dbPath, r, 0o600)
		}
		// Keys stay private whatever the archive says; certificates may stay world-readable.
		mode := fs.FileMode(file.Mode)&0o644 | 0o600
		return writeFile(filepath.Join(tmp, "pki", filepath.FromSlash(strings.TrimPrefix(file.Name, archive.PKIPrefix))), r, mode)
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if err := restoreEtcd(dbPath, m.Etcd, t, filepath.Join(tmp, t.EtcdDir), dataDir); err != nil {
		return nil, err
	}
	if err := os.Remove(dbPath); err != nil {
		return nil, err
	}
	if exists {
		err = moveEntries(tmp, dataDir)
	} else {
		err = os.Rename(tmp, dataDir)
	}
	if err != nil {
		return nil, fmt.Errorf("moving the restored data into %s: %w", dataDir, err)
	}
	return m, syncDir(parent)
}

// moveEntries moves what is in from into to, all or (as far as it can undo) nothing.
func moveEntries(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for i, e := range entries {
		if err := os.Rename(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			for _, moved := range entries[:i] {
				os.RemoveAll(filepath.Join(to, moved.Name()))
			}
			return err
		}
	}
	return nil
}

// checkEmpty refuses a data directory that holds anything: a restore never mixes with, or
// replaces, another control plane's keys or store.
// It reports whether dir exists.
func checkEmpty(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if len(entries) > 0 {
		what := "files"
		if _, err := os.Stat(filepath.Join(dir, "pki", "ca.crt")); err == nil {
			what = "the data of a control plane (pki/ca.crt)"
		}
		return true, fmt.Errorf("refusing to restore into %s: it is not empty, it holds %s; restore into a new directory and start the server with --data-dir pointing there", dir, what)
	}
	return true, nil
}

// restoreEtcd checks the snapshot at dbPath against what the manifest says of it and restores it
// with etcdutl into etcdDir, as a single member named for the server that will open it.
func restoreEtcd(dbPath string, want archive.EtcdInfo, t Target, etcdDir, finalDataDir string) error {
	st, err := etcdutl.NewV3(zap.NewNop()).Status(dbPath)
	if err != nil {
		return fmt.Errorf("%w: checking the etcd snapshot: %w", archive.ErrCorrupt, err)
	}
	if st.Revision != want.Revision || st.Hash != want.Hash || st.TotalKey != want.TotalKeys {
		return fmt.Errorf("%w: the etcd snapshot holds revision %d, %d keys, hash %d; the manifest says revision %d, %d keys, hash %d",
			archive.ErrCorrupt, st.Revision, st.TotalKey, st.Hash, want.Revision, want.TotalKeys, want.Hash)
	}
	// A new cluster token gives the restored member a new cluster ID: etcd must never take it for
	// the cluster the snapshot came from.
	token := make([]byte, 8)
	if _, err := rand.Read(token); err != nil {
		return err
	}
	err = etcdutl.NewV3(zap.NewNop()).Restore(etcdutl.RestoreConfig{
		SnapshotPath:        dbPath,
		Name:                t.MemberName,
		OutputDataDir:       etcdDir,
		PeerURLs:            []string{t.PeerURL},
		InitialCluster:      t.MemberName + "=" + t.PeerURL,
		InitialClusterToken: "idplane-restore-" + hex.EncodeToString(token),
		RevisionBump:        RevisionBump,
		MarkCompacted:       true,
	})
	if err != nil {
		return fmt.Errorf("restoring the etcd snapshot for %s: %w", finalDataDir, err)
	}
	return nil
}

// writeFile writes r to path, creating its directory, and syncs it.
func writeFile(path string, r io.Reader, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.Copy(f, r); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}
