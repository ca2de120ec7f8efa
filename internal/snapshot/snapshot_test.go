package snapshot

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap/zapcore"

	"github.com/idplane/idplane/internal/snapshot/archive"
)

// testEtcd is a single-member etcd on unix sockets in dir.
type testEtcd struct {
	etcd     *embed.Etcd
	endpoint string
	client   *clientv3.Client
}

func startEtcd(t *testing.T, dir, name string) *testEtcd {
	t.Helper()
	sock, peer := filepath.Join(dir, "c.sock"), filepath.Join(dir, "p.sock")
	cfg := embed.NewConfig()
	cfg.Name = name
	cfg.Dir = filepath.Join(dir, "data")
	clientURL := url.URL{Scheme: "unix", Path: sock}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{{Scheme: "unix", Host: peer}}
	cfg.AdvertisePeerUrls = []url.URL{{Scheme: "unix", Path: peer}}
	cfg.InitialCluster = name + "=" + cfg.AdvertisePeerUrls[0].String()
	cfg.TickMs, cfg.ElectionMs = 10, 100
	cfg.LogLevel = zapcore.FatalLevel.String()
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(time.Minute):
		e.Close()
		t.Fatal("etcd not ready")
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{clientURL.String()}, DialTimeout: 5 * time.Second})
	if err != nil {
		e.Close()
		t.Fatal(err)
	}
	te := &testEtcd{etcd: e, endpoint: clientURL.String(), client: cli}
	t.Cleanup(te.close)
	return te
}

func (e *testEtcd) close() {
	e.client.Close()
	e.etcd.Close()
}

func writePKI(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, mode := range pkiFiles {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("contents of "+name), mode); err != nil {
			t.Fatal(err)
		}
	}
	// The temporary of an interrupted pki.WriteFile is not part of the state.
	if err := os.WriteFile(filepath.Join(dir, ".ca.key.tmp123"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
}

var pkiFiles = map[string]os.FileMode{"ca.key": 0o600, "ca.crt": 0o644, "encryption-config.yaml": 0o600, "kms/plugin.crt": 0o644}

// savedArchive is an archive of an etcd holding a few keys, and the revision of its last write.
type savedArchive struct {
	path     string
	revision int64
	keys     map[string]string
}

func saveTestArchive(t *testing.T) savedArchive {
	t.Helper()
	dir := t.TempDir()
	e := startEtcd(t, dir, "source")
	ctx := context.Background()
	keys := map[string]string{}
	var rev int64
	for i := range 20 {
		k, v := fmt.Sprintf("/registry/things/%02d", i), strings.Repeat("v", i*100)
		resp, err := e.client.Put(ctx, k, v)
		if err != nil {
			t.Fatal(err)
		}
		keys[k], rev = v, resp.Header.Revision
	}
	writePKI(t, filepath.Join(dir, "pki"))
	path := filepath.Join(dir, "backup.tar")
	m, err := Save(ctx, Source{Endpoints: []string{e.endpoint}}, SaveOptions{PKIDir: filepath.Join(dir, "pki"), Path: path, Now: time.Now()})
	if err != nil {
		t.Fatalf("Save: %v", err)
	}
	if m.Etcd.Revision != rev || m.Etcd.TotalKeys != len(keys) {
		t.Errorf("manifest etcd = %+v, want revision %d and %d keys", m.Etcd, rev, len(keys))
	}
	return savedArchive{path: path, revision: rev, keys: keys}
}

func TestSaveAndRestore(t *testing.T) {
	a := saveTestArchive(t)
	info, err := os.Stat(a.path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("archive mode %v, want 0600", info.Mode().Perm())
	}
	assertNoTemporaries(t, filepath.Dir(a.path))

	target := filepath.Join(t.TempDir(), "restored")
	peer := filepath.Join(target, "p.sock")
	m, err := Restore(a.path, Target{DataDir: target, EtcdDir: "data", MemberName: "restored", PeerURL: (&url.URL{Scheme: "unix", Path: peer}).String()})
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if m.Etcd.Revision != a.revision {
		t.Errorf("restored manifest revision %d, want %d", m.Etcd.Revision, a.revision)
	}
	if _, err := os.Stat(filepath.Join(target, "pki", ".ca.key.tmp123")); !os.IsNotExist(err) {
		t.Errorf("a temporary of pki/ was archived: %v", err)
	}
	for name, want := range pkiFiles {
		p := filepath.Join(target, "pki", name)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(data) != "contents of "+name {
			t.Errorf("%s = %q", name, data)
		}
		if info, _ := os.Stat(p); info.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v", name, info.Mode().Perm(), want)
		}
	}
	if _, err := os.Stat(filepath.Join(target, "snapshot.db")); !os.IsNotExist(err) {
		t.Errorf("the snapshot database was left in the data directory: %v", err)
	}

	e := startEtcd(t, target, "restored")
	ctx := context.Background()
	resp, err := e.client.Get(ctx, "/registry/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != len(a.keys) {
		t.Errorf("restored etcd holds %d keys, want %d", len(resp.Kvs), len(a.keys))
	}
	for _, kv := range resp.Kvs {
		if a.keys[string(kv.Key)] != string(kv.Value) {
			t.Errorf("restored %s = %q, want %q", kv.Key, kv.Value, a.keys[string(kv.Key)])
		}
	}
	if resp.Header.Revision < a.revision+RevisionBump {
		t.Errorf("restored revision %d, want at least %d (bumped)", resp.Header.Revision, a.revision+RevisionBump)
	}
	// The restored member is a new cluster: a client of the old one never mistakes it.
	put, err := e.client.Put(ctx, "/registry/after", "x")
	if err != nil {
		t.Fatal(err)
	}
	if put.Header.Revision <= a.revision+RevisionBump {
		t.Errorf("a write after the restore got revision %d, not past the bump", put.Header.Revision)
	}
}

func assertNoTemporaries(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary %s left in %s", e.Name(), dir)
		}
	}
}

func TestSaveRefusesExistingFile(t *testing.T) {
	dir := t.TempDir()
	e := startEtcd(t, dir, "source")
	writePKI(t, filepath.Join(dir, "pki"))
	path := filepath.Join(dir, "exists.tar")
	if err := os.WriteFile(path, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := SaveOptions{PKIDir: filepath.Join(dir, "pki"), Path: path, Now: time.Now()}
	_, err := Save(context.Background(), Source{Endpoints: []string{e.endpoint}}, o)
	if err == nil || !strings.Contains(err.Error(), "refusing to replace it (use --force to)") {
		t.Fatalf("Save over an existing file: %v, want a refusal", err)
	}
	if data, _ := os.ReadFile(path); string(data) != "precious" {
		t.Fatalf("the existing file was changed")
	}
	o.Force = true
	if _, err := Save(context.Background(), Source{Endpoints: []string{e.endpoint}}, o); err != nil {
		t.Fatalf("Save --force: %v", err)
	}
	if data, _ := os.ReadFile(path); string(data) == "precious" {
		t.Fatalf("--force did not replace the file")
	}
	assertNoTemporaries(t, dir)
}

func TestSaveFailsWithoutEtcd(t *testing.T) {
	dir := t.TempDir()
	writePKI(t, filepath.Join(dir, "pki"))
	path := filepath.Join(dir, "s.tar")
	_, err := Save(context.Background(), Source{Endpoints: []string{"unix://" + filepath.Join(dir, "none.sock")}, DialTimeout: time.Second},
		SaveOptions{PKIDir: filepath.Join(dir, "pki"), Path: path, Now: time.Now()})
	if err == nil || !strings.Contains(err.Error(), "no etcd answers") {
		t.Fatalf("Save without etcd: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("an archive was written: %v", err)
	}
	assertNoTemporaries(t, dir)
}

// entryOffsets finds where each entry's data starts in a tar file.
func entryOffsets(t *testing.T, data []byte) map[string][2]int64 {
	t.Helper()
	cr := &countingReader{r: bytes.NewReader(data)}
	tr := tar.NewReader(cr)
	offsets := map[string][2]int64{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return offsets
		}
		if err != nil {
			t.Fatal(err)
		}
		// tar reads the header block(s) and no further before Next returns.
		offsets[hdr.Name] = [2]int64{cr.n, hdr.Size}
	}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// rewrite builds an archive from entries, for archives this package would never write.
func rewrite(t *testing.T, path string, edit func(name string, data []byte) (string, []byte, bool)) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		name, data, keep := edit(hdr.Name, data)
		if !keep {
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Size: int64(len(data)), Mode: 0o600, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(data)
	}
	tw.Close()
	return out.Bytes()
}

func TestRestoreRefusesBadArchives(t *testing.T) {
	a := saveTestArchive(t)
	good, err := os.ReadFile(a.path)
	if err != nil {
		t.Fatal(err)
	}
	offsets := entryOffsets(t, good)
	flip := func(entry string, at int64) []byte {
		b := bytes.Clone(good)
		b[offsets[entry][0]+at] ^= 0x01
		return b
	}
	cases := []struct {
		name    string
		archive []byte
		want    string
	}{
		{"empty", nil, "reading its first entry"},
		{"truncated in the first header", good[:100], "reading its first entry"},
		{"truncated in the etcd snapshot", good[:offsets[archive.EtcdEntry][0]+offsets[archive.EtcdEntry][1]/2], "reading etcd/snapshot.db: unexpected EOF"},
		{"truncated before the manifest's sum", good[:offsets[archive.ManifestSumEntry][0]-512], "reading the entry after"},
		{"truncated in a pki file", good[:offsets["pki/ca.key"][0]+3], "reading pki/ca.key: unexpected EOF"},
		{"flipped byte in the manifest", flip(archive.ManifestEntry, 20), "manifest.json.sha256 does not match"},
		{"flipped byte in the etcd snapshot", flip(archive.EtcdEntry, offsets[archive.EtcdEntry][1]/3), "etcd/snapshot.db has sha256"},
		{"flipped byte in the etcd trailer", flip(archive.EtcdEntry, offsets[archive.EtcdEntry][1]-1), "etcd/snapshot.db has sha256"},
		{"flipped byte in a key", flip("pki/ca.key", 2), "pki/ca.key has sha256"},
		{"flipped byte in a header", func() []byte { b := bytes.Clone(good); b[offsets["pki/ca.crt"][0]-512+10] ^= 0x01; return b }(), "corrupt"},
		{"not a tar file", []byte(strings.Repeat("not an archive\n", 100)), "reading its first entry"},
		{"entry outside pki", rewrite(t, a.path, func(name string, data []byte) (string, []byte, bool) {
			if name == "pki/ca.crt" {
				return "pki/../../escape", data, true
			}
			return name, data, true
		}), "is not in the manifest"},
		{"missing key", rewrite(t, a.path, func(name string, data []byte) (string, []byte, bool) {
			return name, data, name != "pki/sa.key" && name != "pki/ca.key"
		}), "pki/ca.key is in the manifest but not in the archive"},
		{"manifest naming a path outside pki", rewrite(t, a.path, func(name string, data []byte) (string, []byte, bool) {
			if name == archive.ManifestEntry {
				var m archive.Manifest
				json.Unmarshal(data, &m)
				m.Files[1].Name = "pki/../../../etc/passwd"
				data, _ = json.Marshal(m)
			}
			return name, data, true
		}), "not an etcd snapshot or a pki file"},
		{"manifest of another format", rewrite(t, a.path, func(name string, data []byte) (string, []byte, bool) {
			if name == archive.ManifestEntry {
				data = bytes.Replace(data, []byte(`"format": 1`), []byte(`"format": 2`), 1)
			}
			return name, data, true
		}), "manifest format 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			archive := filepath.Join(dir, "bad.tar")
			if err := os.WriteFile(archive, tc.archive, 0o600); err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(dir, "restored")
			_, err := Restore(archive, Target{DataDir: target, EtcdDir: "data", MemberName: "m", PeerURL: "unix:///tmp/p.sock"})
			if err == nil {
				t.Fatal("Restore accepted a bad archive")
			}
			if !strings.Contains(err.Error(), "the archive is truncated, corrupt or not an idplane snapshot") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Restore: %v\nwant the corrupt-archive error mentioning %q", err, tc.want)
			}
			if _, err := os.Stat(target); !os.IsNotExist(err) {
				t.Errorf("the target exists after a refused restore: %v", err)
			}
			assertNoTemporaries(t, dir)
		})
	}
}

func TestRestoreRefusesNonEmptyTarget(t *testing.T) {
	a := saveTestArchive(t)
	for _, tc := range []struct {
		name, file, want string
	}{
		{"another control plane", "pki/ca.crt", "it holds the data of a control plane (pki/ca.crt)"},
		{"some file", "notes.txt", "it is not empty, it holds files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := t.TempDir()
			p := filepath.Join(target, tc.file)
			os.MkdirAll(filepath.Dir(p), 0o700)
			if err := os.WriteFile(p, []byte("theirs"), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Restore(a.path, Target{DataDir: target, EtcdDir: "data", MemberName: "m", PeerURL: "unix:///tmp/p.sock"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Restore into a non-empty directory: %v, want %q", err, tc.want)
			}
			entries, _ := os.ReadDir(target)
			if len(entries) != 1 {
				t.Errorf("the target now holds %d entries", len(entries))
			}
			if data, _ := os.ReadFile(p); string(data) != "theirs" {
				t.Errorf("%s was changed", tc.file)
			}
			assertNoTemporaries(t, filepath.Dir(target))
		})
	}
	t.Run("empty directory", func(t *testing.T) {
		target := filepath.Join(t.TempDir(), "empty")
		if err := os.Mkdir(target, 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := Restore(a.path, Target{DataDir: target, EtcdDir: "data", MemberName: "m", PeerURL: "unix:///tmp/p.sock"}); err != nil {
			t.Fatalf("Restore into an empty directory: %v", err)
		}
		if _, err := os.Stat(filepath.Join(target, "pki", "ca.key")); err != nil {
			t.Error(err)
		}
		assertNoTemporaries(t, target)
	})
}

func TestSaveRefusesALinkInPKI(t *testing.T) {
	dir := t.TempDir()
	e := startEtcd(t, dir, "source")
	writePKI(t, filepath.Join(dir, "pki"))
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "pki", "link")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "s.tar")
	_, err := Save(context.Background(), Source{Endpoints: []string{e.endpoint}}, SaveOptions{PKIDir: filepath.Join(dir, "pki"), Path: path, Now: time.Now()})
	if err == nil || !strings.Contains(err.Error(), "link is not a regular file") {
		t.Fatalf("Save with a link in pki/: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("an archive was written: %v", err)
	}
	assertNoTemporaries(t, dir)
}

// TestTrailerHash feeds the streaming check a snapshot in chunks of every awkward size: the
// trailer is found whatever the chunking, and a wrong or missing one is refused.
func TestTrailerHash(t *testing.T) {
	body := bytes.Repeat([]byte("etcd"), 3*512/4)
	sum := sha256.Sum256(body)
	good := append(bytes.Clone(body), sum[:]...)
	wrong := bytes.Clone(good)
	wrong[len(wrong)-1] ^= 1
	for _, chunk := range []int{1, 7, 31, 32, 33, 100, 512, len(good)} {
		for _, tc := range []struct {
			name string
			data []byte
			err  string
		}{
			{"good", good, ""},
			{"wrong trailer", wrong, "does not match its sha256 trailer"},
			{"no trailer", body, "has no sha256 trailer"},
			{"truncated", good[:len(good)-1], "has no sha256 trailer"},
		} {
			h := newTrailerHash()
			for rest := tc.data; len(rest) > 0; {
				n := min(chunk, len(rest))
				h.Write(rest[:n])
				rest = rest[n:]
			}
			got, err := h.check()
			if tc.err == "" {
				whole := sha256.Sum256(good)
				if err != nil || got.size != int64(len(good)) || got.whole != hex.EncodeToString(whole[:]) {
					t.Errorf("chunks of %d, %s: %+v, %v", chunk, tc.name, got, err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("chunks of %d, %s: %v, want %q", chunk, tc.name, err, tc.err)
			}
		}
	}
}
