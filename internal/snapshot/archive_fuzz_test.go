package snapshot

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"testing"
	"time"
)

// smallArchive is a well-formed archive whose etcd entry is not a database: readArchive checks
// the archive's structure and hashes, the database is checked after it.
func smallArchive(t testing.TB) []byte {
	files := map[string][]byte{EtcdEntry: bytes.Repeat([]byte("db"), 300), "pki/ca.key": []byte("key"), "pki/kms/a.crt": []byte("crt")}
	m := &Manifest{Format: formatVersion, Created: time.Unix(0, 0).UTC()}
	for _, name := range []string{EtcdEntry, "pki/ca.key", "pki/kms/a.crt"} {
		sum := sha256.Sum256(files[name])
		m.Files = append(m.Files, File{Name: name, Size: int64(len(files[name])), Mode: 0o600, SHA256: hex.EncodeToString(sum[:])})
	}
	var buf bytes.Buffer
	w := &archiveWriter{tw: tar.NewWriter(&buf), modTime: m.Created}
	manifest, err := w.writeManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range m.Files {
		if err := w.entry(f.Name, f.Size, f.Mode, bytes.NewReader(files[f.Name])); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.writeManifestSum(manifest); err != nil {
		t.Fatal(err)
	}
	if err := w.tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzReadArchive: whatever the bytes, reading an archive never panics, hands store only names
// the manifest allows, and accepts nothing but an archive whose every byte of content checks.
func FuzzReadArchive(f *testing.F) {
	good := smallArchive(f)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		stored := map[string][]byte{}
		m, err := readArchive(bytes.NewReader(data), func(file File, r io.Reader) error {
			if !validEntryName(file.Name) {
				t.Fatalf("store was handed %q", file.Name)
			}
			b, err := io.ReadAll(r)
			stored[file.Name] = b
			return err
		})
		if err != nil {
			return
		}
		for _, file := range m.Files {
			sum := sha256.Sum256(stored[file.Name])
			if hex.EncodeToString(sum[:]) != file.SHA256 {
				t.Fatalf("accepted %s whose content does not match its sha256", file.Name)
			}
		}
	})
}

func TestReadSmallArchive(t *testing.T) {
	m, err := readArchive(bytes.NewReader(smallArchive(t)), func(File, io.Reader) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Files) != 3 {
		t.Errorf("manifest holds %d files", len(m.Files))
	}
}
