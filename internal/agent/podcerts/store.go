package podcerts

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// The state directory holds private keys: only the agent's user may enter it or read them.
const (
	stateDirMode  = fs.FileMode(0o700)
	stateFileMode = fs.FileMode(0o600)
	// maxStateFileBytes bounds what a state file read may hold (a key, a chain and times).
	maxStateFileBytes = 2 * maxChainBytes
)

// record is what the agent keeps on disk for one podCertificate source, so that a restarted
// agent neither asks again for a certificate it holds nor abandons a request it made.
type record struct {
	// Source is the fingerprint of the source the record answers; a pod's source never changes
	// (the spec is immutable), so a different fingerprint means the record is not for it.
	Source string `json:"source"`

	Key            []byte    `json:"key,omitempty"` // PKCS#8 PEM
	Chain          []byte    `json:"chain,omitempty"`
	NotBefore      time.Time `json:"notBefore,omitzero"`
	NotAfter       time.Time `json:"notAfter,omitzero"`
	BeginRefreshAt time.Time `json:"beginRefreshAt,omitzero"`
	// RefreshAt is BeginRefreshAt plus the jitter drawn when the chain was accepted.
	RefreshAt time.Time `json:"refreshAt,omitzero"`

	// The request in flight, if any, with the key it carries.
	PendingName    string    `json:"pendingName,omitempty"`
	PendingKey     []byte    `json:"pendingKey,omitempty"`
	PendingCreated time.Time `json:"pendingCreated,omitzero"`

	// Refused is the final answer for the source: kept, so that a restarted agent does not ask
	// again what was denied.
	Refused *RefusedError `json:"refused,omitempty"`
}

// store keeps records under one directory, one subdirectory per pod UID and one file per
// source. Every access goes through an os.Root, so no link planted in the directory can take a
// read, write or removal outside it.
type store struct {
	root *os.Root
}

func openStore(dir string) (*store, error) {
	if err := os.MkdirAll(dir, stateDirMode); err != nil {
		return nil, fmt.Errorf("creating the pod certificate state directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("inspecting the pod certificate state directory: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("the pod certificate state directory %s is not a directory", dir)
	}
	// A directory left wider by an older agent or an operator is narrowed, not trusted.
	if fi.Mode().Perm() != stateDirMode {
		if err := os.Chmod(dir, stateDirMode); err != nil {
			return nil, fmt.Errorf("narrowing the pod certificate state directory: %w", err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the pod certificate state directory: %w", err)
	}
	return &store{root: root}, nil
}

func (s *store) close() error { return s.root.Close() }

// podDir is the directory name of a pod's records; a UID that could name another path is refused.
func podDir(uid types.UID) (string, error) {
	u := string(uid)
	if u == "" || u == "." || u == ".." || strings.ContainsAny(u, `/\`) || strings.HasPrefix(u, ".") {
		return "", fmt.Errorf("pod UID %q cannot name a state directory", uid)
	}
	return u, nil
}

// fileName names a source's record by a hash of its volume and index: neither chooses a path.
func fileName(volume string, index int) string {
	sum := sha256.Sum256([]byte(volume + "\x00" + strconv.Itoa(index)))
	return hex.EncodeToString(sum[:16]) + ".json"
}

// load reads a record; nil without error when there is none.
func (s *store) load(uid types.UID, volume string, index int) (*record, error) {
	dir, err := podDir(uid)
	if err != nil {
		return nil, err
	}
	f, err := s.root.Open(dir + "/" + fileName(volume, index))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading pod certificate state: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading pod certificate state: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxStateFileBytes {
		return nil, fmt.Errorf("pod certificate state file %s/%s is not a regular file of at most %d bytes", dir, fi.Name(), maxStateFileBytes)
	}
	var r record
	if err := json.NewDecoder(f).Decode(&r); err != nil {
		return nil, fmt.Errorf("decoding pod certificate state: %w", err)
	}
	return &r, nil
}

// save writes a record atomically (a temporary file renamed over the old one), owner-only.
func (s *store) save(uid types.UID, volume string, index int, r *record) error {
	dir, err := podDir(uid)
	if err != nil {
		return err
	}
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding pod certificate state: %w", err)
	}
	if err := s.root.Mkdir(dir, stateDirMode); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("saving pod certificate state: %w", err)
	}
	name := dir + "/" + fileName(volume, index)
	tmp := name + ".tmp"
	_ = s.root.Remove(tmp)
	f, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, stateFileMode)
	if err != nil {
		return fmt.Errorf("saving pod certificate state: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.root.Rename(tmp, name)
	}
	if err != nil {
		_ = s.root.Remove(tmp)
		return fmt.Errorf("saving pod certificate state: %w", err)
	}
	return nil
}

// remove deletes one source's record.
func (s *store) remove(uid types.UID, volume string, index int) error {
	dir, err := podDir(uid)
	if err != nil {
		return err
	}
	if err := s.root.Remove(dir + "/" + fileName(volume, index)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing pod certificate state: %w", err)
	}
	return nil
}

// removePod deletes every record of a pod.
func (s *store) removePod(uid types.UID) error {
	dir, err := podDir(uid)
	if err != nil {
		return err
	}
	if err := s.root.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing the pod certificate state of pod %s: %w", uid, err)
	}
	return nil
}

// pods lists the pod UIDs that have records.
func (s *store) pods() ([]types.UID, error) {
	d, err := s.root.Open(".")
	if err != nil {
		return nil, fmt.Errorf("listing pod certificate state: %w", err)
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, fmt.Errorf("listing pod certificate state: %w", err)
	}
	var out []types.UID
	for _, e := range entries {
		out = append(out, types.UID(e.Name()))
	}
	return out, nil
}
