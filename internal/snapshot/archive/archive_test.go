package archive

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
	m := &Manifest{Format: FormatVersion, Created: time.Unix(0, 0).UTC()}
	for _, name := range []string{EtcdEntry, "pki/ca.key", "pki/kms/a.crt"} {
		sum := sha256.Sum256(files[name])
		m.Files = append(m.Files, File{Name: name, Size: int64(len(files[name])), Mode: 0o600, SHA256: hex.EncodeToString(sum[:])})
	}
	var buf bytes.Buffer
	w := NewWriter(&buf, m.Created)
	if err := w.WriteManifest(m); err != nil {
		t.Fatal(err)
	}
	for _, f := range m.Files {
		if err := w.Entry(f.Name, f.Size, f.Mode, bytes.NewReader(files[f.Name])); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
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
		m, err := Read(bytes.NewReader(data), func(file File, r io.Reader) error {
			if !ValidName(file.Name) {
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
	m, err := Read(bytes.NewReader(smallArchive(t)), func(File, io.Reader) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Files) != 3 {
		t.Errorf("manifest holds %d files", len(m.Files))
	}
}

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		EtcdEntry: true, "pki/ca.key": true, "pki/kms/plugin.crt": true,
		"pki/": false, "pki": false, "pki/../x": false, "pki/a/../../x": false, "pki//x": false, "pki/./x": false,
		"pki/x/": false, `pki/a\..\x`: false, "/pki/x": false, "etcd/other.db": false, "manifest.json": false, "x": false,
	} {
		if got := ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestPlainFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		hdr  tar.Header
		want bool
	}{
		{"regular", tar.Header{Typeflag: tar.TypeReg}, true},
		{"regular with other PAX records", tar.Header{Typeflag: tar.TypeReg, PAXRecords: map[string]string{"mtime": "1"}}, true},
		{"PAX sparse", tar.Header{Typeflag: tar.TypeReg, PAXRecords: map[string]string{"GNU.sparse.major": "1", "GNU.sparse.realsize": "1099511627776"}}, false},
		{"GNU sparse", tar.Header{Typeflag: tar.TypeGNUSparse}, false},
		{"symbolic link", tar.Header{Typeflag: tar.TypeSymlink, Linkname: "/etc/shadow"}, false},
		{"hard link", tar.Header{Typeflag: tar.TypeLink, Linkname: "pki/ca.key"}, false},
		{"directory", tar.Header{Typeflag: tar.TypeDir}, false},
		{"device", tar.Header{Typeflag: tar.TypeChar}, false},
	} {
		if got := plainFile(&tc.hdr); got != tc.want {
			t.Errorf("%s: plainFile = %v, want %v", tc.name, got, tc.want)
		}
	}
}
